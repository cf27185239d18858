package conformance

import (
	"fmt"
	"maps"
	"strings"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/runtime/event"
)

// Requirements of the shared-restart profile: seed 001's shared pool,
// probe-gated restarts, relentless backoff and idle-exit recovery.

// relentlessDelays is seed 001's backoff table, in ms.
var relentlessDelays = []int64{0, 1000, 2000, 5000, 10000, 30000, 60000}

// wedgedFixture is fixture key whose test tool hangs 600 s with its event
// loop blocked (MCP_FIXTURE_BLOCK_EVENT_LOOP), so that no health probe gets
// an answer; extra adds knobs.
func (h *H) wedgedFixture(key string, extra Knobs) Server {
	knobs := Knobs{"MCP_FIXTURE_BLOCK_EVENT_LOOP": "1", "MCP_FIXTURE_HANG_MS": "600000"}
	maps.Copy(knobs, extra)
	return h.Fixture(key, knobs)
}

// failProbe lets the tool timeout (1000 ms) of a call on the wedged
// server key pass, then both health probes time out (ping, then
// tools/list, 3000 ms each: options toolTimeoutMs 1000 and probeTimeoutMs
// 3000; in the modern era, which has no ping, tools/list alone), and
// awaits the stop of its process pid. The fixture must block
// its event loop (MCP_FIXTURE_BLOCK_EVENT_LOOP), so nothing answers.
func (h *H) failProbe(key string, pid int) {
	ginkgo.GinkgoHelper()
	h.Advance(1000)
	if !h.Modern() { // the stateless era has no ping: tools/list alone
		h.Await(Ev(event.ProbeStarted, key, "method", "ping"))
		h.Advance(3000)
	}
	h.Await(Ev(event.ProbeStarted, key, "method", "tools/list"))
	h.Advance(3000)
	h.AwaitStopped(key, pid)
}

// setState rewrites a fixture state file, keeping what change leaves alone.
func (h *H) setState(path string, change func(*fixture.State)) {
	s, _, err := fixture.ReadState(path)
	h.must(err, "reading the fixture state")
	change(&s)
	h.must(fixture.WriteState(path, s), "writing the fixture state")
}

// restartSchedule follows a restart loop of server key for the given
// delays, starting after event seq after: each next restart.scheduled must
// announce the next delay; no launch may happen 1 ms before the delay has
// passed, and exactly one when it has. The journal must then show launches
// launchesBefore+1, +2, ... It returns the seq of the last restart.scheduled.
func (h *H) restartSchedule(key string, after uint64, launchesBefore int, delays []int64) uint64 {
	ginkgo.GinkgoHelper()
	for i, d := range delays {
		var next event.Event
		h.Eventually(fmt.Sprintf("restart %d: restart.scheduled (or restart.gave_up)", i+1), func() bool {
			for _, e := range h.Client().Events() {
				if e.Seq > after && e.Server == key && (e.Kind == event.RestartScheduled || e.Kind == event.RestartGaveUp) {
					next = e
					return true
				}
			}
			return false
		})
		if next.Kind == event.RestartGaveUp {
			h.fail("restart %d: the restart policy gave up after %d launches", i+1, len(h.Journal(key).Launches()))
		}
		after = next.Seq
		got, _ := next.Get("delay_ms")
		h.Verify(Events, got == fmt.Sprint(d), fmt.Sprintf("restart %d is scheduled after %d ms", i+1, d), "delay_ms=%s", got)
		want := launchesBefore + i + 1
		if d > 0 {
			h.Advance(d - 1)
			h.AwaitTimerDue(1, fmt.Sprintf("restart %d", i+1))
			n := len(h.Journal(key).Launches())
			h.Verify(Journal, n == want-1, fmt.Sprintf("no launch 1 ms before restart %d is due", i+1), "%d launches", n)
			h.Advance(1)
		}
		h.AwaitJournalFunc(key, fmt.Sprintf("launch %d (or the policy giving up)", want), func(j JournalEntries) bool {
			return len(j.Launches()) >= want || h.Count(Ev(event.RestartGaveUp, key)) > 0
		})
		n := len(h.Journal(key).Launches())
		h.Verify(Journal, n == want, fmt.Sprintf("restart %d launches the server once", i+1), "%d launches", n)
	}
	return after
}

var _ = Spec(Requirement{
	ID: "SHARED-POOL-001", Level: Must, Profile: driver.ProfileSharedRestart, Area: "pool", Eras: Both,
	Statement: "An implementation MUST serve every session of a runtime from one process per shared server.",
	Source:    Source{"seed 001", "Shared stdio MCP pooling is live and already the default; per-session providers simply acquire the shared handle"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("s1")
	h.Open("s2")
	h.Open("s3")
	acq := h.Find(Ev(event.PoolAcquired, "fx", "refs", "3"))
	h.Verify(Events, len(acq) == 1, "the third session holds the third reference", "%d pool.acquired refs=3", len(acq))
	for _, s := range []string{"s1", "s2", "s3"} {
		h.CallNow(s, "mcp_fx_echo", map[string]any{"text": s})
	}
	j := h.AwaitJournal("fx", "call-start", 3)
	pids := map[int]bool{}
	for _, e := range j.Of("call-start") {
		pids[e.PID] = true
	}
	h.Verify(Journal, len(j.Launches()) == 1 && len(pids) == 1, "one process served the three sessions", "%d launches, %d distinct pids", len(j.Launches()), len(pids))
})

var _ = Spec(Requirement{
	ID: "SHARED-POOL-002", Level: Must, Profile: driver.ProfileSharedRestart, Area: "pool", Eras: Both,
	Statement: "An implementation MUST share one initialization among concurrent first acquires of a cold shared server, launching one process.",
	Source:    Source{"seed 001", "a per-server initializing promise map so only the first caller actually runs initializeEntry; all concurrent requests await the same promise (stops the duplicate npx fetcher-mcp launches)"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_INIT_DELAY_MS": "300"})}})
	var ids []string
	for range 5 {
		ids = append(ids, h.Acquire("fx"))
	}
	for _, id := range ids {
		r := h.AcquireResult(id)
		h.Verify(Response, r.OK, "acquire "+id+" succeeds", "ok=%v error=%v", r.OK, r.Error)
	}
	j := h.AwaitJournal("fx", Handshake, 1)
	h.Verify(Journal, len(j.Launches()) == 1 && j.Count(Handshake) == 1, "five concurrent acquires launched one process", "%d launches", len(j.Launches()))
})

var _ = Spec(Requirement{
	ID: "SHARED-POOL-003", Level: Must, Profile: driver.ProfileSharedRestart, Area: "pool", Eras: Both,
	Statement: "An implementation MUST give each session its own process of a server configured with \"shared\": false, and stop it when that session closes.",
	Source:    Source{"seed 001", "per-session providers simply acquire the shared handle unless shared: false is set; private servers still close on provider cleanup"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil).With("shared", false)}})
	h.Open("s1")
	h.Open("s2")
	j := h.AwaitJournal("fx", Handshake, 2)
	pids := j.PIDs()
	h.Verify(Journal, len(pids) == 2 && pids[0] != pids[1], "each session got its own process", "pids %v", pids)
	h.CloseSession("s1")
	exit := h.AwaitJournal("fx", "exit", 1).Last("exit")
	other := pids[0]
	if other == exit.PID {
		other = pids[1]
	}
	h.Verify(Journal, exit.Str("reason") == "stdin-eof", "closing one session stopped one of the processes", "exit %v", exit.Fields)
	h.Verify(Process, h.AwaitGone(exit.PID) && h.Alive(other), "exactly that one is gone, the other runs", "stopped %d, other %d", exit.PID, other)
	r := h.CallNow("s2", "mcp_fx_echo", map[string]any{"text": "still mine"})
	h.Verify(Response, !r.Result.IsError, "the other session's server still works", "%+v", r.Result)
})

var _ = Spec(Requirement{
	ID: "SHARED-PROBE-001", Level: Must, Profile: driver.ProfileSharedRestart, Area: "probe", Eras: Legacy,
	Statement: "An implementation MUST NOT restart a server whose health probe succeeds after a tool timeout; the call fails with mcp_tool_timeout and the process keeps running.",
	Source:    Source{"seed 001", "A single slow tool call must never kill a healthy async server; we treat it as a per-request SLA miss, not a crash"},
}, func(h *H) {
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_HANG_MS": "600000"})},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(1000), ProbeTimeoutMs: Ms(3000), NoRetryAfterRestart: Bool(true)},
	})
	h.Open("main")
	id := h.Call("main", "mcp_fx_test", map[string]any{"text": "slow"})
	h.AwaitJournal("fx", "hang-start", 1)
	h.Advance(1000)
	r := h.Result(id)
	h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeToolTimeout), "the call fails with mcp_tool_timeout", "error=%v", r.Error)
	h.Await(Ev(event.ProbeFinished, "fx", "healthy", "true"))
	j := h.AwaitJournal("fx", "ping", 1)
	h.Verify(Journal, j.Last("ping").Str("action") == "answered", "the server answered one ping probe", "ping %v", j.Last("ping").Fields)
	// Bound of the negative checks: the next call's answer, after the
	// probe's verdict.
	r2 := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "next"})
	j = h.Journal("fx")
	h.Verify(Journal, !r2.Result.IsError && len(j.Launches()) == 1 && j.Last("call-start").PID == j.PIDs()[0],
		"the server process was not restarted: the same process answers the next call", "launches=%d", len(j.Launches()))
	h.Verify(Events, h.Count(Ev(event.RestartScheduled, "fx")) == 0, "no restart was scheduled", "%d restart.scheduled", h.Count(Ev(event.RestartScheduled, "fx")))
})

var _ = Spec(Requirement{
	ID: "SHARED-PROBE-002", Level: Must, Profile: driver.ProfileSharedRestart, Area: "probe", Eras: Legacy,
	Statement: "An implementation MUST restart a server whose health probe fails after a tool timeout (ping, then tools/list, each bounded by probeTimeoutMs) and retry the timed-out call once on the new process.",
	Source:    Source{"seed 001", "Deterministic restart fixture must exercise hang -> timeout -> probe failure -> restart success (run-test-71: answer contains recovered)"},
}, func(h *H) {
	state := h.StateFile("fx")
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{
			"MCP_FIXTURE_MODE": "restart", "MCP_FIXTURE_BLOCK_EVENT_LOOP": "1", "MCP_FIXTURE_HANG_MS": "600000", "MCP_FIXTURE_STATE_FILE": state,
		})},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(1000), ProbeTimeoutMs: Ms(3000)},
	})
	h.Open("main")
	id := h.Call("main", "mcp_fx_test", map[string]any{"text": "x"})
	h.AwaitJournal("fx", "hang-start", 1)
	h.Advance(1000)
	p1 := h.Await(Ev(event.ProbeStarted, "fx"))
	h.Advance(3000)
	p2 := h.AwaitAfter(p1.Seq, Ev(event.ProbeStarted, "fx"))
	m1, _ := p1.Get("method")
	m2, _ := p2.Get("method")
	h.Verify(Events, m1 == "ping" && m2 == "tools/list", "the probe tried ping, then tools/list", "%s, then %s", m1, m2)
	h.Advance(3000)
	// The implementation stops the wedged process (it reads nothing, so
	// only a signal ends it), then restarts it and retries the call.
	h.AwaitStopped("fx", h.Journal("fx").PIDs()[0])
	r := h.Result(id)
	j := h.Journal("fx")
	h.Verify(Journal, len(j.Launches()) == 2, "the wedged server was replaced by a new process", "%d launches", len(j.Launches()))
	retried := 0
	for _, e := range j.Of("call-start") {
		if e.Launch == 2 && e.Str("tool") == "test" {
			retried++
		}
	}
	h.Verify(Journal, retried == 1, "the timed-out call was sent once more, to the new process", "%d call-start on launch 2", retried)
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "recovered:x"), "the call answers from the new process", "error=%v text=%q", r.Error, r.Result.Text)
})

var _ = Spec(Requirement{
	ID: "SHARED-PROBE-003", Level: Must, Profile: driver.ProfileSharedRestart, Area: "probe", Eras: Legacy,
	Statement: "An implementation MUST fall back to tools/list when the health probe's ping gets no answer, and keep a server that answers tools/list running.",
	Source:    Source{"field failure 5", "A server that silently drops ping was restarted 362 times a day. Needs: fall back to tools/list before declaring a server dead"},
}, func(h *H) {
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_HANG_MS": "600000", "MCP_FIXTURE_PING": "drop"})},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(1000), ProbeTimeoutMs: Ms(3000), NoRetryAfterRestart: Bool(true)},
	})
	h.Open("main")
	id := h.Call("main", "mcp_fx_test", map[string]any{"text": "slow"})
	h.AwaitJournal("fx", "hang-start", 1)
	h.Advance(1000)
	j := h.AwaitJournal("fx", "ping", 1)
	h.Verify(Journal, j.Last("ping").Str("action") == "dropped", "the server dropped the ping probe", "ping %v", j.Last("ping").Fields)
	h.Advance(3000)
	r := h.Result(id)
	h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeToolTimeout), "the call fails with mcp_tool_timeout", "error=%v", r.Error)
	h.AwaitJournal("fx", "tools-list", 2)
	h.Await(Ev(event.ProbeFinished, "fx", "method", "tools/list", "healthy", "true"))
	// Bound of the negative check: the next call's answer, after the
	// probe's verdict.
	r2 := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "next"})
	j = h.Journal("fx")
	h.Verify(Journal, !r2.Result.IsError && j.Count("tools-list") == 2 && len(j.Launches()) == 1 && j.Last("call-start").PID == j.PIDs()[0],
		"the server answered a tools/list probe and was not restarted: the same process answers the next call",
		"tools-list %d, launches %d", j.Count("tools-list"), len(j.Launches()))
})

var _ = Spec(Requirement{
	ID: "SHARED-PROBE-004", Level: Should, Profile: driver.ProfileSharedRestart, Area: "probe", Eras: Legacy,
	Statement: "An implementation SHOULD remember a server that answers ping with method-not-found and probe it with tools/list only from then on.",
	Source:    Source{"field failure 5", "fall back to tools/list before declaring a server dead; remember that ping is unsupported"},
}, func(h *H) {
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_HANG_MS": "600000", "MCP_FIXTURE_PING": "error"})},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(1000), ProbeTimeoutMs: Ms(3000), NoRetryAfterRestart: Bool(true)},
	})
	h.Open("main")
	var verdict uint64
	for i := 1; i <= 2; i++ {
		id := h.Call("main", "mcp_fx_test", map[string]any{"text": "slow"})
		h.AwaitJournal("fx", "hang-start", i)
		h.Advance(1000)
		r := h.Result(id)
		h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeToolTimeout), fmt.Sprintf("timed-out call %d fails with mcp_tool_timeout", i), "error=%v", r.Error)
		h.AwaitJournal("fx", "tools-list", 1+i)
		verdict = h.AwaitAfter(verdict, Ev(event.ProbeFinished, "fx", "method", "tools/list", "healthy", "true")).Seq
	}
	// Bound of the negative checks: the next call's answer, after the
	// second probe's verdict.
	h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "next"})
	j := h.Journal("fx")
	h.Verify(Journal, j.Count("ping") == 1 && j.Last("ping").Str("action") == "errored", "ping was sent once, answered method-not-found, and never again",
		"%d pings", j.Count("ping"))
	h.Verify(Journal, j.Count("tools-list") == 3 && len(j.Launches()) == 1, "both probes listed tools and nothing restarted",
		"tools-list %d, launches %d", j.Count("tools-list"), len(j.Launches()))
})

var _ = Spec(Requirement{
	ID: "SHARED-ABORT-001", Level: Must, Profile: driver.ProfileSharedRestart, Area: "probe", Eras: Both,
	Statement: "An implementation MUST NOT probe or restart a server because the caller cancelled a call.",
	Source:    Source{"reference semantics", "The probe runs only after a tool timeout, never after a user abort"},
}, func(h *H) {
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_HANG_MS": "600000"})},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(1000), ProbeTimeoutMs: Ms(3000)},
	})
	h.Open("main")
	id := h.Call("main", "mcp_fx_test", map[string]any{"text": "abandon"})
	h.AwaitJournal("fx", "hang-start", 1)
	h.Cancel(id)
	r := h.Result(id)
	h.Verify(Response, r.Result.Aborted, "the call ends aborted", "%+v", r.Result)
	j := h.AwaitJournal("fx", "hang-end", 1)
	h.Verify(Journal, j.Last("hang-end").Bool("cancelled"), "the server saw the cancellation", "hang-end %v", j.Last("hang-end").Fields)
	// Bound of the negative checks: the answer of a call made after the
	// aborted one ended.
	h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "after"})
	j = h.Journal("fx")
	h.Verify(Journal, j.Count("ping") == 0 && j.Count("tools-list") == 1, "no probe reached the server", "ping %d, tools-list %d", j.Count("ping"), j.Count("tools-list"))
	h.Verify(Journal, len(j.Launches()) == 1, "the server was not restarted", "%d launches", len(j.Launches()))
	h.Verify(Events, h.Count(Ev(event.ProbeStarted, "fx")) == 0, "no probe.started event", "%d", h.Count(Ev(event.ProbeStarted, "fx")))
})

var _ = Spec(Requirement{
	ID: "SHARED-RESTART-001", Level: Must, Profile: driver.ProfileSharedRestart, Area: "restart", Timing: true, Eras: Both,
	Statement: "An implementation MUST by default retry a failing shared server forever, with delays of 0, 1, 2, 5, 10, 30 and 60 s between attempts and 60 s after that.",
	Source:    Source{"seed 001", "Any shared MCP server failure must trigger relentless restart attempts with exponential backoff [0, 1, 2, 5, 10, 30, 60 s]"},
}, func(h *H) {
	state := h.StateFile("fx")
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_FAIL_INIT_ATTEMPTS": "8", "MCP_FIXTURE_STATE_FILE": state})}})
	rep := h.Open("main")
	h.Verify(Response, contains(rep.Failed, "fx"), "the first launch fails", "failed=%v", rep.Failed)
	h.AwaitJournal("fx", "exit", 1)
	h.restartSchedule("fx", 0, 1, append(relentlessDelays, 60000))
	j := h.AwaitJournal("fx", Handshake, 1)
	h.Verify(Journal, len(j.Launches()) == 9 && j.Last(Handshake).Launch == 9, "the ninth launch connects", "%d launches", len(j.Launches()))
	h.Await(Ev(event.RestartSucceeded, "fx", "attempt", "8"))
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "back"})
	h.Verify(Response, !r.Result.IsError, "its tools work once it connected", "%+v", r.Result)
})

var _ = Spec(Requirement{
	ID: "SHARED-RESTART-002", Level: Must, Profile: driver.ProfileSharedRestart, Area: "restart", Eras: Both,
	Statement: "An implementation MUST fail calls made while a shared server waits to retry after a failed restart with mcp_restart_failed at once, and serve them again once a restart succeeds.",
	Source:    Source{"reference semantics", "While an attempt runs, callers get in_progress; during the backoff sleep after a failed attempt they get failed with the last cause"},
}, func(h *H) {
	state := h.StateFile("fx")
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_STATE_FILE": state})}})
	h.Open("main")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	h.setState(state, func(s *fixture.State) { s.FailOnStart = true })
	h.Kill(pid, syscall.SIGKILL)
	j := h.AwaitJournal("fx", "exit", 1)
	h.Verify(Journal, j.Last("exit").Str("reason") == "fail-on-start" && len(j.Launches()) == 2, "the restart after the exit failed", "exit %v", j.Last("exit").Fields)
	h.Await(Ev(event.RestartFailed, "fx"))
	h.Await(Ev(event.RestartScheduled, "fx", "attempt", "2"))
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "during backoff"})
	h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeRestartFailed), "a call during the backoff fails with mcp_restart_failed", "error=%v", r.Error)
	h.Verify(Response, h.Now() == 0, "at once, without the clock moving", "now=%v", h.Now())
	h.setState(state, func(s *fixture.State) { s.FailOnStart = false })
	h.Advance(1000)
	h.AwaitJournal("fx", Handshake, 2)
	h.Await(Ev(event.RestartSucceeded, "fx"))
	r = h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "after"})
	j = h.Journal("fx")
	h.Verify(Journal, !r.Result.IsError && j.Last("call-start").Launch == 3, "after the restart the third launch answers calls", "error=%v launch=%d", r.Error, j.Last("call-start").Launch)
})

var _ = Spec(Requirement{
	ID: "SHARED-IDLE-001", Level: Must, Profile: driver.ProfileSharedRestart, Area: "idle-exit", Eras: Both,
	Statement: "An implementation MUST notice a shared server's process exiting while no call is in flight and restart it without waiting for the next call.",
	Source:    Source{"seed 001", "Detect shared MCP exits even when idle ... watch stdio child close/exit events and immediately schedule the shared restart loop so the next caller doesn't pay a timeout penalty"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	h.Kill(pid, syscall.SIGKILL)
	j := h.AwaitJournal("fx", Handshake, 2)
	h.Verify(Journal, len(j.Launches()) == 2 && j.Count("call-start") == 0, "a new process was launched and connected without any call", "%d launches, %d calls", len(j.Launches()), j.Count("call-start"))
	h.Await(Ev(event.RestartSucceeded, "fx"))
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "first call"})
	j = h.Journal("fx")
	h.Verify(Journal, !r.Result.IsError && j.Last("call-start").Launch == 2, "the next call goes straight to the new process", "error=%v", r.Error)
})

var _ = Spec(Requirement{
	ID: "SHARED-IDLE-002", Level: Must, Profile: driver.ProfileSharedRestart, Area: "idle-exit", Timing: true, Eras: Both,
	Statement: "An implementation MUST, with options.idleTimeoutMs, stop a shared server that no session references once that time has passed, and not before.",
	Source:    Source{"seed 001", "Shared entries never auto-shutdown when refCount reaches zero. Decide whether that is acceptable for long-lived daemons or if we want an idle timeout"},
}, func(h *H) {
	const idle = 30000
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}, Options: &driver.StartOptions{IdleTimeoutMs: Ms(idle)}})
	h.Open("s1")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	h.CloseSession("s1")
	released := h.Await(Ev(event.PoolReleased, "fx", "refs", "0"))
	h.Advance(idle - 1)
	h.AwaitTimerDue(1, "the idle timeout")
	h.Verify(Process, h.Alive(pid), "the unreferenced server still runs 1 ms before the idle timeout", "pid %d", pid)
	h.Advance(1)
	exit := h.AwaitJournal("fx", "exit", 1).Last("exit")
	h.Verify(Journal, exit.Str("reason") == "stdin-eof", "then it is stopped", "exit %v", exit.Fields)
	stop := h.Await(Ev(event.PoolIdleStop, "fx"))
	h.VerifyElapsed(Events, "pool.idle_stop comes idleTimeoutMs after the last release", stop.At-released.At, ms(idle))
	h.Open("s2")
	h.AwaitJournal("fx", Handshake, 2)
	h.Verify(Journal, len(h.Journal("fx").Launches()) == 2, "a later session launches it again", "%d launches", len(h.Journal("fx").Launches()))
})

var _ = Spec(Requirement{
	ID: "SHARED-ACQUIRE-001", Level: Must, Profile: driver.ProfileSharedRestart, Area: "acquire", Timing: true, Eras: Both,
	Statement: "An implementation MUST bound the first acquire of a cold shared server that keeps failing by options.acquireTimeoutMs, and fail later acquires at once with mcp_unavailable while it retries in the background.",
	Source:    Source{"reference semantics", "First acquire of a cold shared server races initialization against 60 s; after that, later acquires fail at once with an unavailable, retrying in background error while the loop continues"},
}, func(h *H) {
	const timeout = 5000
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_FAIL_ON_START": "1"})},
		Options: &driver.StartOptions{AcquireTimeoutMs: Ms(timeout)},
	})
	a1 := h.Acquire("fx")
	h.AwaitJournal("fx", "exit", 1)
	h.Await(Ev(event.RestartScheduled, "fx", "attempt", "2"))
	h.Advance(timeout - 1)
	h.AwaitTimerDue(1, "the first acquire's timeout")
	_, done := h.Client().AcquireResult(a1)
	h.Verify(Response, !done, "the first acquire still waits 1 ms before acquireTimeoutMs", "%s", pick(done, "answered", "waiting"))
	h.Advance(1)
	r1 := h.AcquireResult(a1)
	h.Verify(Response, !r1.OK && r1.Error != nil && r1.Error.Code == string(driver.OutcomeUnavailable), "then it fails with mcp_unavailable", "ok=%v error=%v", r1.OK, r1.Error)
	before := len(h.Journal("fx").Launches())
	a2 := h.Acquire("fx")
	r2 := h.AcquireResult(a2)
	h.Verify(Response, !r2.OK && r2.Error != nil && r2.Error.Code == string(driver.OutcomeUnavailable), "a later acquire fails with mcp_unavailable at once", "ok=%v error=%v", r2.OK, r2.Error)
	j := h.Journal("fx")
	h.Verify(Journal, before >= 2 && j.Where("exit", "reason", "fail-on-start") != nil && len(j.Launches()) >= before,
		"the server kept failing and being retried in the background", "%d launches", len(j.Launches()))
})

var _ = Spec(Requirement{
	ID: "SHARED-ACQUIRE-002", Level: Must, Profile: driver.ProfileSharedRestart, Area: "acquire", Eras: Both,
	Statement: "An implementation MUST count each successful acquire of a shared server as one reference, shown as the server's refs in status, until that acquire is released.",
	Source:    Source{"seed 001", "per-session providers simply acquire the shared handle ... the entry is stored before any ref-counting; Shared entries never auto-shutdown when refCount reaches zero"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	refs := func(n int, after string) {
		ginkgo.GinkgoHelper()
		st := h.AwaitStatus("fx", fmt.Sprintf("refs %d %s", n, after), func(s driver.ServerStatus) bool { return s.Refs == n })
		h.Verify(Response, st.Refs == n, fmt.Sprintf("status shows refs %d %s", n, after), "refs %d", st.Refs)
	}
	a1 := h.Acquire("fx")
	r1 := h.AcquireResult(a1)
	h.Verify(Response, r1.OK, "the first acquire succeeds", "error=%v", r1.Error)
	h.AwaitJournal("fx", "tools-list", 1)
	refs(1, "after one acquire")
	a2 := h.Acquire("fx")
	r2 := h.AcquireResult(a2)
	h.Verify(Response, r2.OK, "the second acquire succeeds", "error=%v", r2.Error)
	refs(2, "after two acquires")
	ctx, cancel := h.awaitCtx()
	h.must(h.Client().Release(ctx, a1), "release")
	cancel()
	refs(1, "after one release")
	h.Verify(Journal, len(h.Journal("fx").Launches()) == 1, "both acquires share one process", "%d launches", len(h.Journal("fx").Launches()))
})

var _ = Spec(Requirement{
	ID: "SHARED-STABLE-001", Level: Must, Profile: driver.ProfileSharedRestart, Area: "restart", Eras: Both,
	Statement: "An implementation MUST NOT reset a server's restart backoff when a restart succeeds, but only after the server has stayed up for options.stabilityWindowMs.",
	Source:    Source{"field failure 4", "A server that exits cleanly right after initialize + tools/list was respawned 66,487 times in about 7 minutes. Needs: a crash-loop breaker or a backoff that does not reset on a short-lived success"},
}, func(h *H) {
	const window = 10000
	state := h.StateFile("fx")
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_FAIL_INIT_ATTEMPTS": "2", "MCP_FIXTURE_STATE_FILE": state})},
		Options: &driver.StartOptions{StabilityWindowMs: Ms(window)},
	})
	h.Open("main")
	h.restartSchedule("fx", 0, 1, []int64{0, 1000})
	j := h.AwaitJournal("fx", Handshake, 1)
	h.Await(Ev(event.RestartSucceeded, "fx"))
	// Up for less than the window: the backoff goes on where it was.
	after := h.Last()
	h.Kill(j.PIDs()[2], syscall.SIGKILL)
	h.restartSchedule("fx", after, 3, []int64{2000})
	j = h.AwaitJournal("fx", Handshake, 2)
	h.AwaitAfter(after, Ev(event.RestartSucceeded, "fx"))
	// Up for the whole window: the backoff starts over. The reset is not an
	// event; status shows it (restartAttempts is the backoff step).
	h.Verify(Response, h.Status("fx").RestartAttempts == 3, "status counts the three restarts so far", "restartAttempts=%d", h.Status("fx").RestartAttempts)
	h.Advance(window)
	h.Eventually("status to show the backoff reset", func() bool { return h.Status("fx").RestartAttempts == 0 })
	after = h.Last()
	h.Kill(j.PIDs()[3], syscall.SIGKILL)
	h.restartSchedule("fx", after, 4, []int64{0})
	h.AwaitJournal("fx", Handshake, 3)
})

// startWithToolTimeout starts fx, the server of the fail-fast specs, under a
// tool timeout of 60 s (scaled): long enough that a call which waits for
// it visibly did. It returns the timeout.
func (h *H) startWithToolTimeout(fx Server) time.Duration {
	timeout := h.D(60000)
	h.Start(Setup{
		Servers: map[string]Server{"fx": fx},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(timeout)},
	})
	return time.Duration(timeout) * time.Millisecond
}

// crashEndsCallAtOnce crashes server fx in a call of session main and
// verifies that the call fails with mcp_connection_lost without waiting for
// the tool timeout (claim says what that shows), the virtual clock unmoved.
// On the real clock the wait for the result is bounded by half the timeout.
func (h *H) crashEndsCallAtOnce(timeout time.Duration, claim string) {
	ginkgo.GinkgoHelper()
	id := h.Call("main", "mcp_fx_crash", map[string]any{"code": 3})
	exit := h.AwaitJournal("fx", "exit", 1).Last("exit")
	h.Verify(Journal, exit.Str("reason") == "crash", "the server died mid-call", "exit %v", exit.Fields)
	wait := h.s.cfg.AwaitTimeout
	if !h.Virtual() {
		wait = min(wait, timeout/2)
	}
	r, ok := h.ResultWithin(id, wait)
	h.Verify(Response, ok, claim, "%s within %v of real time", pick(ok, "result", "no result"), wait)
	h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeConnectionLost), "the call fails with mcp_connection_lost", "error=%v", r.Error)
	if h.Virtual() {
		h.Verify(Response, h.Now() == 0, "the virtual clock never moved", "now=%v", h.Now())
	}
}
