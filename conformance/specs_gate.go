package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/runtime/event"
)

// Requirements of the startup-gate profile: seed 000's bounded session
// start, deferred tools from the cache and late registration.

// slowFixture is a fixture that answers initialize only once the file named
// by the variable FX_WAIT of the implementation's config layer exists (see
// H.InitHold): the configuration as written stays the same whichever file
// it names, so the tool cache recorded with a released hold applies when
// the server is held.
func slowFixture(h *H) Server {
	return h.Fixture("fx", Knobs{"MCP_FIXTURE_INIT_WAIT_FILE": "${FX_WAIT}"})
}

// warmCache runs a first driver whose fast connect writes the tool cache of
// the slow fixture, then shuts it down.
func warmCache(h *H) {
	released, release := h.InitHold("warm")
	release()
	h.Start(Setup{Servers: map[string]Server{"fx": slowFixture(h)}, Env: map[string]string{"FX_WAIT": released}, Cache: true})
	h.Open("warm")
	h.Await(Ev(event.CacheWritten, "fx"))
	h.StopDriver()
}

var _ = Spec(Requirement{
	ID: "GATE-TIMING-001", Level: Must, Profile: driver.ProfileStartupGate, Area: "gate", Timing: true, Eras: Both,
	Statement: "An implementation MUST answer session.open when options.startupGateMs passes while a server with cached tools is still connecting, and not before.",
	Source:    Source{"seed 000", "connectServers() waits on a race between all connect/tool-load tasks settled, and STARTUP_TIMEOUT_MS"},
}, func(h *H) {
	const gate = 400
	warmCache(h)
	hold, _ := h.InitHold("fx")
	h.Start(Setup{
		Servers: map[string]Server{"fx": slowFixture(h)}, Env: map[string]string{"FX_WAIT": hold}, Cache: true,
		Options: &driver.StartOptions{StartupGateMs: Ms(gate)},
	})
	open := h.OpenAsync("main")
	opened := h.Await(Ev(event.GateOpened, ""))
	h.AwaitJournal("fx", "launch", 2)
	h.Advance(gate - 1)
	h.AwaitTimerDue(1, "the startup gate")
	h.Verify(Response, !open.Answered(), "session.open is still waiting 1 ms before the gate", "%s", pick(open.Answered(), "answered", "waiting"))
	h.Advance(1)
	rep := open.Report()
	j := h.Journal("fx")
	h.Verify(Journal, j.Count(Handshake) == 1, "the server had not answered initialize when session.open returned",
		"%d initialize entries (1 from the cache-warming run)", j.Count(Handshake))
	closed := h.Await(Ev(event.GateClosed, ""))
	h.VerifyElapsed(Events, "gate.closed comes startupGateMs after gate.opened", closed.At-opened.At, ms(gate))
	h.Verify(Response, rep.ElapsedMs == gate && contains(rep.Deferred, "fx"), "the report says deferred after the gate's time",
		"elapsedMs=%d deferred=%v ready=%v late=%v", rep.ElapsedMs, rep.Deferred, rep.Ready, rep.Late)
})

var _ = Spec(Requirement{
	ID: "GATE-TIMING-002", Level: Should, Profile: driver.ProfileStartupGate, Area: "gate", Timing: true, Eras: Both,
	Statement: "An implementation SHOULD bound session.open by a startup gate of 250 ms when no startupGateMs is given.",
	Source:    Source{"seed 000", "Fast startup gate waits up to 250ms"},
}, func(h *H) {
	warmCache(h)
	hold, _ := h.InitHold("fx")
	h.Start(Setup{Servers: map[string]Server{"fx": slowFixture(h)}, Env: map[string]string{"FX_WAIT": hold}, Cache: true})
	open := h.OpenAsync("main")
	h.Await(Ev(event.GateOpened, ""))
	h.AwaitJournal("fx", "launch", 2)
	h.Advance(249)
	h.AwaitTimerDue(1, "the startup gate")
	h.Verify(Response, !open.Answered(), "session.open is still waiting at 249 ms", "%s", pick(open.Answered(), "answered", "waiting"))
	h.Advance(1)
	rep := open.Report()
	h.Verify(Journal, h.Journal("fx").Count(Handshake) == 1, "the server had not answered initialize when session.open returned",
		"%d initialize entries", h.Journal("fx").Count(Handshake))
	h.Verify(Response, rep.ElapsedMs == 250 && contains(rep.Deferred, "fx"), "session.open returned at 250 ms", "elapsedMs=%d deferred=%v", rep.ElapsedMs, rep.Deferred)
})

var _ = Spec(Requirement{
	ID: "GATE-DEFERRED-001", Level: Must, Profile: driver.ProfileStartupGate, Area: "deferred", Eras: Both,
	Statement: "An implementation MUST expose the cached tools of a server still connecting at the gate as deferred tools, and a call of a deferred tool MUST wait for the connection and then succeed.",
	Source:    Source{"seed 000", "still-pending tasks use cached tool definitions if available to create DeferredMCPTools; DeferredMCPTool waits for waitForConnection(server) before calling"},
}, func(h *H) {
	warmCache(h)
	hold, release := h.InitHold("fx")
	h.Start(Setup{Servers: map[string]Server{"fx": slowFixture(h)}, Env: map[string]string{"FX_WAIT": hold}, Cache: true})
	open := h.OpenAsync("main")
	h.Await(Ev(event.GateOpened, ""))
	h.AwaitJournal("fx", "launch", 2)
	h.AdvanceToNext()
	open.Report()
	tools := h.Tools("main")
	deferred := 0
	for _, t := range tools {
		if t.Server == "fx" && t.Deferred {
			deferred++
		}
	}
	h.Verify(Response, deferred == 9 && len(tools) == 9, "the 9 cached tools are listed, marked deferred", "%d tools, %d deferred", len(tools), deferred)
	id := h.Call("main", "mcp_fx_echo", map[string]any{"text": "waited"})
	h.Await(Ev(event.ToolCallStarted, "fx"))
	release()
	r := h.Result(id)
	j := h.Journal("fx")
	var order []string
	for _, e := range j {
		switch {
		case e.Launch != 2:
		case handshake(e):
			order = append(order, Handshake)
		case e.Kind == "call-start":
			order = append(order, e.Kind)
		}
	}
	h.Verify(Journal, strings.Join(order, ",") == Handshake+",call-start", "the call reached the server only after its handshake", "%v", order)
	h.Verify(Response, !r.Result.IsError && strings.Contains(r.Result.Text, "waited"), "the deferred call succeeds", "%+v", r.Result)
	for _, t := range h.Tools("main") {
		if t.Deferred {
			h.fail("tool %s still deferred after the connection", t.Name)
		}
	}
})

var _ = Spec(Requirement{
	ID: "GATE-FAST-001", Level: Must, Profile: driver.ProfileStartupGate, Area: "gate", Eras: Both,
	Statement: "An implementation MUST answer session.open as soon as every server has connected or failed, without waiting for the gate's timeout.",
	Source:    Source{"seed 000", "waits on a race between all connect/tool-load tasks settled, and STARTUP_TIMEOUT_MS"},
}, func(h *H) {
	h.Start(Setup{
		Servers: map[string]Server{"up": h.Fixture("up", nil), "down": h.Fixture("down", Knobs{"MCP_FIXTURE_FAIL_ON_START": "1"}).With("restart", "never")},
		Options: &driver.StartOptions{StartupGateMs: Ms(60000)},
	})
	rep := h.Open("main")
	h.AwaitJournal("up", "tools-list", 1)
	h.AwaitJournal("down", "exit", 1)
	h.Verify(Journal, contains(rep.Ready, "up") && contains(rep.Failed, "down"), "both servers settled: one ready, one failed", "ready=%v failed=%v", rep.Ready, rep.Failed)
	h.Verify(Response, rep.ElapsedMs == 0 && h.Now() == 0, "session.open returned without the clock moving", "elapsedMs=%d now=%v", rep.ElapsedMs, h.Now())
})

var _ = Spec(Requirement{
	ID: "GATE-HOLD-001", Level: Must, Profile: driver.ProfileStartupGate, Area: "gate", Eras: Both,
	Statement: "An implementation MUST, without late registration, hold session.open past the gate for a pending server that has no cached tools, until that server connects or fails.",
	Source:    Source{"seed 000", "still-pending tasks: otherwise block until those pending tasks settle ... Hard wait for correctness"},
}, func(h *H) {
	hold, release := h.InitHold("fx")
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_INIT_WAIT_FILE": hold})},
		Options: &driver.StartOptions{StartupGateMs: Ms(250), LateRegistration: Bool(false)},
	})
	open := h.OpenAsync("main")
	h.Await(Ev(event.GateOpened, ""))
	h.AwaitJournal("fx", "init-wait", 1)
	h.Advance(250)
	// A snapshot once the gate's time has passed: the implementation
	// announces no decision to hold, and the server cannot answer before
	// the hold is released.
	h.Verify(Response, !open.Answered(), "session.open still waits past the gate while the server has not answered initialize", "%s", pick(open.Answered(), "answered", "waiting"))
	release()
	rep := open.Report()
	j := h.Journal("fx")
	h.Verify(Journal, j.Count("tools-list") >= 1, "session.open returned only after the server had listed its tools", "journal kinds %v", kinds(j))
	h.Verify(Response, contains(rep.Ready, "fx") && len(h.ToolNames("main", "fx")) == 9, "the server is ready with its tools", "ready=%v late=%v", rep.Ready, rep.Late)
})

var _ = Spec(Requirement{
	ID: "GATE-LATE-001", Level: Must, Profile: driver.ProfileStartupGate, Area: "late", Eras: Both,
	Statement: "An implementation MUST, with options.lateRegistration, answer session.open at the gate without waiting for a pending server that has no cached tools, and register that server's tools in the session when it connects.",
	Source:    Source{"reference semantics", "Later versions, after a field report of a 25 s startup hang, stopped blocking on pending servers without cache and register their tools when they arrive"},
}, func(h *H) {
	hold, release := h.InitHold("fx")
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_INIT_WAIT_FILE": hold})},
		Options: &driver.StartOptions{StartupGateMs: Ms(250), LateRegistration: Bool(true)},
	})
	open := h.OpenAsync("main")
	h.Await(Ev(event.GateOpened, ""))
	h.AwaitJournal("fx", "launch", 1)
	h.Advance(250)
	rep := open.Report()
	h.Verify(Journal, h.Journal("fx").Count(Handshake) == 0, "session.open returned before the server answered initialize", "journal kinds %v", kinds(h.Journal("fx")))
	h.Verify(Response, contains(rep.Late, "fx") && len(h.ToolNames("main", "fx")) == 0, "the report lists it late, with no tools yet", "late=%v tools=%v", rep.Late, h.ToolNames("main", "fx"))
	release()
	h.AwaitJournal("fx", "tools-list", 1)
	h.Await(Ev(event.ToolsRegistered, "fx"))
	h.Eventually("the late server's tools in the session", func() bool { return len(h.ToolNames("main", "fx")) == 9 })
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "late"})
	h.Verify(Journal, !r.Result.IsError && h.Journal("fx").Count("call-start") == 1, "its tools registered on arrival and work", "%+v", r.Result)
})

var _ = Spec(Requirement{
	ID: "GATE-CACHE-001", Level: Must, Profile: driver.ProfileStartupGate, Area: "cache", Eras: Both,
	Statement: "An implementation MUST key its tool cache on the server configuration as written, so that a changed value of a variable it references still hits the cache and the value is never written to the cache.",
	Source:    Source{"reference semantics", "configHash is SHA-256 of a canonical (sorted-key) JSON of the unresolved config, so rotating secrets do not change the key and do not land in the cache"},
}, func(h *H) {
	const secret1, secret2 = "s3cret-rotated-0001", "s3cret-rotated-0002"
	srv := slowFixture(h).WithEnv(map[string]string{"API_TOKEN": "${TOKEN}"})
	released, release := h.InitHold("warm")
	release()
	h.Start(Setup{Servers: map[string]Server{"fx": srv}, Env: map[string]string{"FX_WAIT": released, "TOKEN": secret1}, Cache: true})
	h.Open("warm")
	h.Await(Ev(event.CacheWritten, "fx"))
	h.StopDriver()
	leaked := ""
	_ = filepath.WalkDir(h.CacheDir(), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), secret1) {
				leaked = p
			}
		}
		return nil
	})
	h.Verify(Files, leaked == "" && dirHasFiles(h.CacheDir()), "the cache was written without the secret value", "secret found in %q", leaked)
	hold, _ := h.InitHold("fx")
	h.Start(Setup{Servers: map[string]Server{"fx": srv}, Env: map[string]string{"FX_WAIT": hold, "TOKEN": secret2}, Cache: true})
	open := h.OpenAsync("main")
	h.Await(Ev(event.GateOpened, ""))
	h.AwaitJournal("fx", "launch", 2)
	h.AdvanceToNext()
	rep := open.Report()
	h.Verify(Events, h.Count(Ev(event.CacheHit, "fx")) == 1, "the rotated secret still hits the cache", "%d cache.hit", h.Count(Ev(event.CacheHit, "fx")))
	h.Verify(Journal, contains(rep.Deferred, "fx") && h.Journal("fx").Count(Handshake) == 1, "the server is deferred on cached tools while still connecting",
		"deferred=%v initialize=%d", rep.Deferred, h.Journal("fx").Count(Handshake))
})

var _ = Spec(Requirement{
	ID: "GATE-CACHE-003", Level: Must, Profile: driver.ProfileStartupGate, Area: "cache", Eras: Both,
	Statement: "An implementation MUST keep hitting the tool cache when a server's entry is rewritten without a change of meaning (another key order, other whitespace, a comment).",
	Source:    Source{"reference semantics", "configHash is SHA-256 of a canonical (sorted-key) JSON of the unresolved config"},
	Needs:     []driver.Capability{driver.CapConfigDiscovery},
}, func(h *H) {
	warmCache(h)
	hold, release := h.InitHold("fx")
	// The entry warmCache used, as a person might rewrite it in a file:
	// keys in reverse order, one per line, and a comment.
	srv := slowFixture(h)
	keys := slices.Sorted(maps.Keys(srv))
	slices.Reverse(keys)
	var b strings.Builder
	b.WriteString("{\n  \"mcpServers\": {\n    // rewritten by hand\n    \"fx\": {\n")
	for i, k := range keys {
		v, err := json.Marshal(srv[k])
		h.must(err, "encoding "+k)
		b.WriteString(fmt.Sprintf("      %q:   %s", k, v))
		if i < len(keys)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("    }\n  }\n}\n")
	file := h.Path("rewritten.json")
	h.must(os.WriteFile(file, []byte(b.String()), 0o644), "writing "+file)
	h.Start(Setup{ConfigFiles: []driver.ConfigFile{{Path: file, Level: "user"}}, Env: map[string]string{"FX_WAIT": hold}, Cache: true})
	open := h.OpenAsync("main")
	h.Await(Ev(event.GateOpened, ""))
	h.AwaitJournal("fx", "launch", 2)
	h.AdvanceToNext()
	rep := open.Report()
	h.Verify(Events, h.Count(Ev(event.CacheHit, "fx")) == 1 && h.Count(Ev(event.CacheMiss, "fx")) == 0,
		"the rewritten entry hits the cache", "%d cache.hit, %d cache.miss", h.Count(Ev(event.CacheHit, "fx")), h.Count(Ev(event.CacheMiss, "fx")))
	h.Verify(Journal, contains(rep.Deferred, "fx") && h.Journal("fx").Count(Handshake) == 1, "the server is deferred on cached tools while still connecting",
		"deferred=%v initialize=%d", rep.Deferred, h.Journal("fx").Count(Handshake))
	release()
	h.AwaitJournal("fx", "tools-list", 2)
})

var _ = Spec(Requirement{
	ID: "GATE-CACHE-004", Level: Should, Profile: driver.ProfileStartupGate, Area: "cache", Timing: true, Eras: Modern,
	Statement: "An implementation SHOULD treat a tool list that came with a positive ttlMs (2026-07-28) as stale once ttlMs has passed on its clock: a connected server's tools are listed again at their first use from then on, not before, and the list's tool cache record gives no deferred tools at a later start.",
	Source:    Source{"MCP 2026-07-28", "If ttlMs is positive, the client SHOULD consider the result fresh for that many milliseconds after receiving the response ... Once the TTL expires, the response is stale and the client SHOULD re-fetch on next access (server/utilities/caching, SEP-2549)"},
}, func(h *H) {
	const ttl = 60000
	srv := h.Fixture("fx", Knobs{"MCP_FIXTURE_INIT_WAIT_FILE": "${FX_WAIT}", "MCP_FIXTURE_TOOLS_TTL_MS": fmt.Sprint(ttl)})
	released, release := h.InitHold("warm")
	release()
	h.Start(Setup{Servers: map[string]Server{"fx": srv}, Env: map[string]string{"FX_WAIT": released}, Cache: true})
	h.Open("main")
	h.Await(Ev(event.CacheWritten, "fx"))
	first := h.AwaitJournal("fx", "tools-list", 1).Last("tools-list")
	h.Verify(Journal, first.Int("ttlMs") == ttl, "the server sent its tools with ttlMs 60000", "tools-list %v", first.Fields)

	// A use 1 ms before ttlMs has passed; bound: the answer of a call made
	// after it.
	h.Advance(ttl - 1)
	h.Tools("main")
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "fresh"})
	h.Verify(Journal, !r.Result.IsError && h.Journal("fx").Count("tools-list") == 1, "no tools/list at a use 1 ms before ttlMs passed",
		"%d tools-list entries, call %+v", h.Journal("fx").Count("tools-list"), r.Result)

	// The first use once it has passed lists the tools again, once.
	h.Advance(1)
	h.Tools("main")
	h.AwaitJournal("fx", "tools-list", 2)
	h.EventuallySeen("the refreshed list recorded in the tool cache", func() bool { return h.Count(Ev(event.CacheWritten, "fx")) == 2 },
		func() string { return fmt.Sprintf("%d cache.written", h.Count(Ev(event.CacheWritten, "fx"))) })
	h.Tools("main")
	r = h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "fresh again"})
	h.Verify(Journal, !r.Result.IsError && h.Journal("fx").Count("tools-list") == 2, "the first use at ttlMs listed the tools again, once",
		"%d tools-list entries, call %+v", h.Journal("fx").Count("tools-list"), r.Result)
	h.StopDriver()

	// A later start, once the record (written at the refresh, 60 s) is
	// ttlMs old, with the server held in its opening request.
	hold, releaseHold := h.InitHold("fx")
	h.Start(Setup{Servers: map[string]Server{"fx": srv}, Env: map[string]string{"FX_WAIT": hold}, Cache: true,
		Options: &driver.StartOptions{LateRegistration: Bool(true)}})
	h.Advance(2 * ttl)
	open := h.OpenAsync("main")
	h.Await(Ev(event.GateOpened, ""))
	h.AwaitJournal("fx", "init-wait", 2)
	h.AdvanceToNext()
	rep := open.Report()
	h.Verify(Journal, h.Journal("fx").Count(Handshake) == 1, "the server was still held in its opening request at the gate",
		"%d handshakes (1 from the first run)", h.Journal("fx").Count(Handshake))
	h.Verify(Response, !contains(rep.Deferred, "fx") && contains(rep.Late, "fx") && len(h.ToolNames("main", "fx")) == 0,
		"the stale record gives no deferred tools", "deferred=%v late=%v tools=%v", rep.Deferred, rep.Late, h.ToolNames("main", "fx"))
	h.Verify(Events, h.Count(Ev(event.CacheHit, "fx")) == 0, "the stale record is no cache hit", "%d cache.hit", h.Count(Ev(event.CacheHit, "fx")))
	releaseHold()
	h.AwaitJournal("fx", "tools-list", 3)
})

// kinds lists the kinds of a journal's entries, for messages.
func kinds(j JournalEntries) []string {
	out := make([]string, len(j))
	for i, e := range j {
		out[i] = e.Kind
	}
	return out
}

func dirHasFiles(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found = true
		}
		return nil
	})
	return found
}
