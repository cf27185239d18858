package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/runtime/event"
)

// Requirements at the edges of limits and under concurrent triggers: the
// bugs a small change (an off-by-one, a dropped key, a missing guard)
// introduces, which the requirements above pass. Each is proven to catch
// its defect by a patch of conformance/faults (section 9 of
// docs/CONFORMANCE.md).

// longName returns a lower-case tool name of n characters starting with
// prefix, safe from sanitizing.
func longName(prefix string, n int) string {
	return prefix + strings.Repeat("x", n-len(prefix))
}

var _ = Spec(Requirement{
	ID: "CORE-NAMING-004", Level: Must, Profile: driver.ProfileConventions, Formerly: driver.ProfileCore, Area: "naming", Eras: Both,
	Statement: "An implementation MUST keep an exposed tool name of exactly 64 characters as it is, and cap a longer one to at most 64 characters, so that tools whose names share their first 64 characters, through a long tool name or a long server name, stay distinct and each reaches its own raw tool.",
	Source:    Source{"reference semantics", "Tool names are capped at 64 characters (a hash keeps long names that share a prefix distinct); seed 002: server names max 100 chars"},
}, func(h *H) {
	// "mcp_fx_" is 7 characters: a 57-character tool name is exposed with
	// exactly 64, a 58-character one needs the cap, and two of 120 share
	// their first 64 exposed characters (and are far longer than their
	// answers). The server of the longest name a configuration may give
	// (100 characters) exposes only capped names sharing their first 64.
	exact, over := longName("exact", 57), longName("over", 58)
	twinA, twinB := longName("twin", 119)+"a", longName("twin", 119)+"b"
	longServer := longName("long", 100)
	h.Start(Setup{Servers: map[string]Server{
		"fx":       h.Fixture("fx", Knobs{"MCP_FIXTURE_TOOL_NAMES": strings.Join([]string{exact, over, twinA, twinB}, ",")}),
		longServer: h.Fixture("long", nil),
	}})
	h.Open("main")
	h.AwaitJournal("fx", "tools-list", 1)
	h.AwaitJournal("long", "tools-list", 1)
	names := h.ToolNames("main", "fx")
	h.Verify(Journal, len(names) == 13, "the server's 13 tools are listed", "%d tools: %v", len(names), names)
	var tooLong []string
	for _, n := range names {
		if len(n) > 64 {
			tooLong = append(tooLong, n)
		}
	}
	h.Verify(Response, len(tooLong) == 0, "no exposed name is longer than 64 characters", "too long: %q", tooLong)
	h.Verify(Response, contains(names, "mcp_fx_"+exact), "the name of exactly 64 characters is kept as it is", "%q not among %q", "mcp_fx_"+exact, names)
	h.Verify(Response, !contains(names, "mcp_fx_"+over), "the name of 65 characters is capped", "names %q", names)
	distinct := slices.Clone(names)
	slices.Sort(distinct)
	h.Verify(Response, len(slices.Compact(distinct)) == 13, "the 13 exposed names are distinct", "names %q", names)
	// Every capped name reaches its own raw tool.
	var capped []string
	for _, n := range names {
		if len(n) == 64 && n != "mcp_fx_"+exact {
			capped = append(capped, n)
		}
	}
	h.Verify(Response, len(capped) == 3, "three names were capped to 64 characters", "capped %q", capped)
	reached := map[string]bool{}
	for i, n := range capped {
		h.CallNow("main", n, map[string]any{"text": "x"})
		reached[h.AwaitJournal("fx", "call-start", i+1).Last("call-start").Str("tool")] = true
	}
	h.Verify(Journal, reached[over] && reached[twinA] && reached[twinB], "each capped name reaches its own raw tool", "the server saw calls of %v", slices.Sorted(maps.Keys(reached)))
	var longNames []string
	echo := ""
	for _, t := range h.Tools("main") {
		if t.Server == longServer {
			longNames = append(longNames, t.Name)
			if t.Tool == "echo" {
				echo = t.Name
			}
		}
	}
	slices.Sort(longNames)
	longest := 0
	for _, n := range longNames {
		longest = max(longest, len(n))
	}
	h.Verify(Response, len(longNames) == 9 && len(slices.Compact(slices.Clone(longNames))) == 9 && longest <= 64 && echo != "",
		"the 9 tools of the server with a 100-character name are exposed under 9 distinct names of at most 64 characters", "names %q", longNames)
	r := h.CallNow("main", echo, map[string]any{"text": "x"})
	start := h.AwaitJournal("long", "call-start", 1).Last("call-start")
	h.Verify(Journal, r.Error == nil && start.Str("tool") == "echo", "its capped echo name reaches echo and answers", "error=%v, the server saw a call of %q", r.Error, start.Str("tool"))
})

var _ = Spec(Requirement{
	ID: "SEC-TRUNC-002", Level: Must, Profile: driver.ProfileConventions, Formerly: driver.ProfileSecurity, Area: "wrapping", Eras: Both,
	Statement: "An implementation MUST hand over a result of exactly maxResultChars characters whole, and cut a result of one character more to its first maxResultChars characters.",
	Source:    Source{"seed 004", "Output is truncated to config.maxResultChars (default 50 KB)"},
}, func(h *H) {
	const limit = 1000
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}, Options: &driver.StartOptions{MaxResultChars: Int(limit)}})
	h.Open("main")
	at := h.CallNow("main", "mcp_fx_big", map[string]any{"bytes": limit})
	over := h.CallNow("main", "mcp_fx_big", map[string]any{"bytes": limit + 1})
	ends := h.AwaitJournal("fx", "call-end", 2).Of("call-end")
	h.Verify(Journal, ends[0].Int("bytes") == limit && ends[1].Int("bytes") == limit+1, "the server sent 1000, then 1001 characters", "call-end %v, %v", ends[0].Fields, ends[1].Fields)
	h.Verify(Response, !at.Result.Truncated && strings.Contains(at.Result.Text, fixture.BigText(limit)),
		"the result of exactly maxResultChars characters is whole", "truncated=%v, %d characters of text", at.Result.Truncated, len(at.Result.Text))
	h.Verify(Response, over.Result.Truncated && over.Result.OriginalChars == limit+1 && strings.Contains(over.Result.Text, fixture.BigText(limit)) &&
		!strings.Contains(over.Result.Text, fixture.BigText(limit+1)),
		"the result of one character more keeps exactly its first maxResultChars characters", "truncated=%v original=%d, first %d kept: %v, all %d kept: %v",
		over.Result.Truncated, over.Result.OriginalChars, limit, strings.Contains(over.Result.Text, fixture.BigText(limit)), limit+1, strings.Contains(over.Result.Text, fixture.BigText(limit+1)))
	// Characters, not bytes: maxResultChars characters of two bytes each
	// are more bytes than the limit, and still whole.
	wide := strings.Repeat("é", limit)
	w := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": wide})
	wend := h.AwaitJournal("fx", "call-end", 3).Last("call-end")
	h.Verify(Journal, wend.Int("bytes") == 2*limit, "the server sent 1000 two-byte characters (2000 bytes)", "call-end %v", wend.Fields)
	h.Verify(Response, !w.Result.Truncated && w.Result.OriginalChars == limit && strings.Contains(w.Result.Text, wide),
		"the result of exactly maxResultChars multi-byte characters is whole", "truncated=%v original=%d, whole: %v", w.Result.Truncated, w.Result.OriginalChars, strings.Contains(w.Result.Text, wide))
})

var _ = Spec(Requirement{
	ID: "GATE-CACHE-002", Level: Must, Profile: driver.ProfileStartupGate, Area: "cache", Eras: Both,
	Statement: "An implementation MUST NOT expose cached tools recorded for another configuration of the server as written: a changed env block misses the cache.",
	Source:    Source{"reference semantics", "Cache records carry the configHash of the unresolved config; a record for another hash is a miss"},
}, func(h *H) {
	warmCache(h)
	hold, release := h.InitHold("fx")
	changed := slowFixture(h).WithEnv(map[string]string{"MCP_FIXTURE_EXTRA_TOOLS": "1"})
	h.Start(Setup{Servers: map[string]Server{"fx": changed}, Env: map[string]string{"FX_WAIT": hold}, Cache: true,
		Options: &driver.StartOptions{LateRegistration: Bool(true)}})
	open := h.OpenAsync("main")
	h.Await(Ev(event.GateOpened, ""))
	h.AwaitJournal("fx", "init-wait", 2)
	h.AdvanceToNext()
	rep := open.Report()
	h.Verify(Journal, h.Journal("fx").Count(Handshake) == 1, "the changed server was still in its handshake at the gate", "%d initialize entries (1 from the cache-warming run)", h.Journal("fx").Count(Handshake))
	h.Verify(Response, !contains(rep.Deferred, "fx") && contains(rep.Late, "fx") && len(h.ToolNames("main", "fx")) == 0,
		"no tool of the other configuration's cache record is exposed", "deferred=%v late=%v tools=%v", rep.Deferred, rep.Late, h.ToolNames("main", "fx"))
	h.Verify(Events, h.Count(Ev(event.CacheHit, "fx")) == 0 && h.Count(Ev(event.CacheMiss, "fx")) == 1,
		"the changed configuration's cache lookup missed", "%d cache.hit, %d cache.miss", h.Count(Ev(event.CacheHit, "fx")), h.Count(Ev(event.CacheMiss, "fx")))
	release()
	h.AwaitJournal("fx", "tools-list", 2)
	h.EventuallySeen("the changed server's 10 tools in the session", func() bool { return len(h.ToolNames("main", "fx")) == 10 },
		func() string { return fmt.Sprintf("%v", h.ToolNames("main", "fx")) })
})

var _ = Spec(Requirement{
	ID: "SHARED-RESTART-003", Level: Must, Profile: driver.ProfileSharedRestart, Area: "restart", Eras: Both,
	Statement: "An implementation MUST run at most one restart of a server at a time: two calls that time out together on a wedged server lead to one new process.",
	Source:    Source{"seed 001", "Concurrent callers during a restart get mcp_restart_in_progress rather than starting a second restart"},
}, func(h *H) {
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.wedgedFixture("fx", nil)},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(1000), ProbeTimeoutMs: Ms(3000), NoRetryAfterRestart: Bool(true)},
	})
	h.Open("main")
	c1 := h.Call("main", "mcp_fx_test", map[string]any{"text": "one"})
	c2 := h.Call("main", "mcp_fx_test", map[string]any{"text": "two"})
	h.AwaitJournal("fx", "hang-start", 1)
	h.EventuallySeen("both calls started", func() bool { return h.Count(Ev(event.ToolCallStarted, "fx")) == 2 },
		func() string { return fmt.Sprintf("%d tool.call_started", h.Count(Ev(event.ToolCallStarted, "fx"))) })
	pid := h.Journal("fx").PIDs()[0]
	h.failProbe("fx", pid)
	h.Await(Ev(event.RestartSucceeded, "fx"))
	for _, id := range []string{c1, c2} {
		r := h.Result(id)
		h.Verify(Response, r.Error != nil, "call "+id+" on the wedged server fails", "error=%v", r.Error)
	}
	// Bound of the negative checks: a call answered by the new process,
	// after the restart succeeded.
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "after"})
	j := h.Journal("fx")
	h.Verify(Journal, !r.Result.IsError && len(j.Launches()) == 2 && j.Last("call-start").Launch == 2,
		"one new process replaced the wedged one and answers", "%d launches, last call on launch %d", len(j.Launches()), j.Last("call-start").Launch)
	h.Verify(Events, h.Count(Ev(event.RestartAttempt, "fx")) == 1, "one restart attempt ran", "%d restart.attempt", h.Count(Ev(event.RestartAttempt, "fx")))
})

var _ = Spec(Requirement{
	ID: "SHARED-RESTART-004", Level: Must, Profile: driver.ProfileSharedRestart, Area: "restart", Eras: Both,
	Statement: "An implementation MUST end a call in flight on a connection it closes to restart the server with mcp_restart_in_progress, not mcp_connection_lost: the server did not fail under that call, the implementation replaced it.",
	Source:    Source{"seed 001", "Concurrent callers during a restart get mcp_restart_in_progress rather than starting a second restart"},
}, func(h *H) {
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.wedgedFixture("fx", nil)},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(1000), ProbeTimeoutMs: Ms(3000), NoRetryAfterRestart: Bool(true)},
	})
	h.Open("main")
	wedge := h.Call("main", "mcp_fx_test", map[string]any{"text": "wedge"})
	h.AwaitJournal("fx", "hang-start", 1)
	// The bystander's own timeout is far away: only the restart ends it.
	bystander := h.CallTimeout("main", "mcp_fx_echo", map[string]any{"text": "bystander"}, Ms(600000))
	h.EventuallySeen("both calls started", func() bool { return h.Count(Ev(event.ToolCallStarted, "fx")) == 2 },
		func() string { return fmt.Sprintf("%d tool.call_started", h.Count(Ev(event.ToolCallStarted, "fx"))) })
	pid := h.Journal("fx").PIDs()[0]
	h.failProbe("fx", pid)
	r := h.Result(wedge)
	h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeToolTimeout), "the wedged call fails with mcp_tool_timeout", "error=%v", r.Error)
	rb := h.Result(bystander)
	h.Verify(Response, rb.Error != nil && rb.Error.Code == string(driver.OutcomeRestartInProgress),
		"the bystander call, cut off by the restart, fails with mcp_restart_in_progress", "error=%v", rb.Error)
	h.Await(Ev(event.RestartSucceeded, "fx"))
	j := h.AwaitJournal("fx", "launch", 2)
	h.Verify(Journal, len(j.Launches()) == 2, "the implementation replaced the wedged process: the restart, not a failure of the server, ended the bystander", "%d launches", len(j.Launches()))
})

var _ = Spec(Requirement{
	ID: "SHARED-RESTART-005", Level: Must, Profile: driver.ProfileSharedRestart, Area: "restart", Eras: Both,
	Statement: "An implementation MUST end a call whose tool timeout led to a restart with mcp_restart_failed, carrying the failed attempt's cause, as soon as the restart's first attempt fails, without waiting for the later attempts of the backoff.",
	Source:    Source{"seed 001", "Timeout callbacks propagate MCPRestartFailedError / MCPRestartInProgressError through ToolsOrchestrator, so tool logs, accounting, and final reports surface the exact code whenever a restart actually happens"},
}, func(h *H) {
	state := h.StateFile("fx")
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.wedgedFixture("fx", Knobs{"MCP_FIXTURE_STATE_FILE": state})},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(1000), ProbeTimeoutMs: Ms(3000)},
	})
	h.Open("main")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	// The server cannot come back: every later launch fails.
	h.setState(state, func(s *fixture.State) { s.FailOnStart = true })
	id := h.Call("main", "mcp_fx_test", map[string]any{"text": "wedge"})
	h.AwaitJournal("fx", "hang-start", 1)
	h.failProbe("fx", pid)
	h.Await(Ev(event.RestartFailed, "fx", "attempt", "1"))
	next := h.Await(Ev(event.RestartScheduled, "fx", "attempt", "2"))
	delay, _ := next.Get("delay_ms")
	// Between the attempts the server is restarting (DRIVER.md, status).
	st := h.Status("fx")
	h.Verify(Response, st.State == "restarting", "status says restarting while the second attempt waits", "state %q", st.State)
	// The clock stays before the second attempt: only the first one's
	// failure can end the call.
	r := h.Result(id)
	h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeRestartFailed),
		"the call ends with mcp_restart_failed after the first attempt failed", "error=%v (second attempt due in %s ms)", r.Error, delay)
	// Field failure 15: a failed start must reach the user with the
	// server's stderr, not only a log file.
	h.Verify(Response, r.Error != nil && strings.Contains(r.Error.Message, "fail-on-start"),
		"the error carries the failed attempt's cause (the relaunch's stderr says fail-on-start)", "message %q", pick(r.Error != nil, fmt.Sprint(r.Error), ""))
	j := h.AwaitJournalFunc("fx", "the first relaunch, failed on start", func(j JournalEntries) bool {
		return len(j.Where("exit", "reason", "fail-on-start")) == 1
	})
	h.Verify(Journal, len(j.Launches()) == 2, "one relaunch ran (and failed) before the call ended", "%d launches", len(j.Launches()))
	h.Verify(Events, h.Count(Ev(event.RestartAttempt, "fx")) == 1, "no second attempt ran", "%d restart.attempt", h.Count(Ev(event.RestartAttempt, "fx")))
	// The call's own event says the same (DRIVER.md: tool.call_finished's
	// code carries the runtime code of a failed call).
	fin := h.Await(Ev(event.ToolCallFinished, "fx", "tool", "mcp_fx_test"))
	outcome, _ := fin.Get("outcome")
	code, _ := fin.Get("code")
	h.Verify(Events, outcome == "error" && code == string(driver.OutcomeRestartFailed),
		"tool.call_finished of the call says outcome error, code mcp_restart_failed", "outcome %q code %q", outcome, code)
})
