package conformance

import (
	"fmt"
	"slices"
	"syscall"

	"github.com/onsi/ginkgo/v2"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/runtime/event"
)

// Requirements of the registration profile: seed 003's tool registration
// bridge (register on connect, graceful unregister window, no flapping, no
// duplicates), list_changed, disconnect, reload and collisions.

// passRestartDelay waits for the implementation to schedule the restart
// of server key announced after event seq after, and lets its delay pass.
func (h *H) passRestartDelay(key string, after uint64) {
	ginkgo.GinkgoHelper()
	sched := h.AwaitAfter(after, Ev(event.RestartScheduled, key))
	d, _ := sched.Get("delay_ms")
	var ms int64
	_, _ = fmt.Sscan(d, &ms)
	if h.Virtual() && ms > 0 {
		h.Advance(ms)
	}
}

// passDebounce lets the list_changed debounce of server key pass:
// tools.changed announces its timer (the armed-timer rule).
func (h *H) passDebounce(key string) {
	ginkgo.GinkgoHelper()
	h.Await(Ev(event.ToolsChanged, key))
	if h.Virtual() {
		if p := h.Pending(); len(p) > 0 {
			h.Advance(max(p[0].Milliseconds(), 1))
		}
	}
}

var _ = Spec(Requirement{
	ID: "REG-GRACE-001", Level: Must, Profile: driver.ProfileRegistration, Area: "grace", Timing: true, Eras: Both,
	Statement: "An implementation MUST keep the tools of a server whose connection dropped registered for options.unregisterGraceMs, and unregister them when the window passes without a reconnect.",
	Source:    Source{"seed 003", "If graceful=True, delays unregistration to allow for reconnection during transient disconnects (GRACEFUL_UNREGISTER_TIMEOUT = 5.0 s)"},
}, func(h *H) {
	grace := h.D(5000)
	state := h.StateFile("fx")
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_STATE_FILE": state})},
		Options: &driver.StartOptions{UnregisterGraceMs: Ms(grace)},
	})
	h.Open("main")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	// The server cannot come back: every later launch fails.
	h.setState(state, func(s *fixture.State) { s.FailOnStart = true })
	seq := h.Last()
	h.Kill(pid, syscall.SIGKILL)
	sched := h.AwaitAfter(seq, Ev(event.ToolsUnregisterScheduled, "fx"))
	h.Verify(Response, len(h.ToolNames("main", "fx")) == 9, "the tools stay registered right after the drop", "%d tools", len(h.ToolNames("main", "fx")))
	early := grace - 1
	if !h.Virtual() {
		early = grace / 2
	}
	h.Pass(early)
	h.AwaitTimerDue(grace-early, "the unregister grace window")
	h.Verify(Response, len(h.ToolNames("main", "fx")) == 9, "they are still registered just before the window ends", "%d tools after %d ms", len(h.ToolNames("main", "fx")), early)
	h.Pass(grace - early)
	h.Eventually("the tools to be unregistered", func() bool { return len(h.ToolNames("main", "fx")) == 0 })
	unreg := h.AwaitAfter(seq, Ev(event.ToolsUnregistered, "fx"))
	h.VerifyElapsed(Events, "tools.unregistered comes one grace window after tools.unregister_scheduled", unreg.At-sched.At, ms(grace))
	// Relaunches go on in the background; await a moment when every one
	// that started has ended.
	j := h.AwaitJournalFunc("fx", "a relaunch, and every relaunch ended with fail-on-start", func(j JournalEntries) bool {
		return len(j.Launches()) >= 2 && len(j.Where("exit", "reason", "fail-on-start")) == len(j.Launches())-1
	})
	h.Verify(Journal, j.Count(Handshake) == 1, "the server never came back (every relaunch failed)",
		"%d launches, %d fail-on-start exits, %d handshakes", len(j.Launches()), len(j.Where("exit", "reason", "fail-on-start")), j.Count(Handshake))
})

var _ = Spec(Requirement{
	ID: "REG-GRACE-002", Level: Must, Profile: driver.ProfileRegistration, Area: "grace", Eras: Both,
	Statement: "An implementation MUST cancel the pending unregistration when a dropped server reconnects inside the grace window, so its tools never disappear and are not duplicated.",
	Source:    Source{"seed 003", "Cancel any pending unregister for this server ... no flapping, no duplicates"},
}, func(h *H) {
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", nil)},
		Options: &driver.StartOptions{UnregisterGraceMs: Ms(h.D(20000))},
	})
	h.Open("main")
	before := h.ToolNames("main", "fx")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	h.Kill(pid, syscall.SIGKILL)
	h.Await(Ev(event.ToolsUnregisterScheduled, "fx"))
	h.passRestartDelay("fx", 0)
	h.AwaitJournal("fx", "tools-list", 2)
	h.Await(Ev(event.ToolsUnregisterCancelled, "fx"))
	after := h.ToolNames("main", "fx")
	h.Verify(Journal, len(h.Journal("fx").Launches()) == 2, "a new process came back inside the window", "%d launches", len(h.Journal("fx").Launches()))
	h.Verify(Response, slices.Equal(before, after) && len(after) == 9, "the session lists the same tools once each", "before %v, after %v", before, after)
	h.Verify(Events, h.Count(Ev(event.ToolsUnregistered, "fx")) == 0, "the tools were never unregistered", "%d tools.unregistered", h.Count(Ev(event.ToolsUnregistered, "fx")))
})

var _ = Spec(Requirement{
	ID: "REG-GRACE-003", Level: Must, Profile: driver.ProfileRegistration, Area: "grace", Eras: Both,
	Statement: "An implementation MUST apply the unregister grace window when it replaces a server itself after a failed health probe: the tools stay registered for options.unregisterGraceMs and are unregistered when the window passes without a reconnect.",
	Source:    Source{"seed 003", "If graceful=True, delays unregistration to allow for reconnection during transient disconnects (GRACEFUL_UNREGISTER_TIMEOUT = 5.0 s)"},
	Needs:     []driver.Capability{driver.CapVirtualClock, driver.CapHealthProbe},
}, func(h *H) {
	const grace = 20000
	state := h.StateFile("fx")
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.wedgedFixture("fx", Knobs{"MCP_FIXTURE_STATE_FILE": state})},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(1000), ProbeTimeoutMs: Ms(3000), UnregisterGraceMs: Ms(grace), NoRetryAfterRestart: Bool(true)},
	})
	h.Open("main")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	// The server cannot come back: every later launch fails.
	h.setState(state, func(s *fixture.State) { s.FailOnStart = true })
	seq := h.Last()
	h.Call("main", "mcp_fx_test", map[string]any{"text": "wedge"})
	h.AwaitJournal("fx", "hang-start", 1)
	h.failProbe("fx", pid)
	sched := h.AwaitAfter(seq, Ev(event.ToolsUnregisterScheduled, "fx"))
	h.Verify(Response, len(h.ToolNames("main", "fx")) == 9, "the tools stay registered right after the implementation replaced the server", "%d tools", len(h.ToolNames("main", "fx")))
	// Stopping the wedged process may have taken virtual time (its stop
	// grace): the window ends grace after tools.unregister_scheduled.
	left := (sched.At + ms(grace) - h.Now()).Milliseconds()
	h.Verify(Events, left > 1, "the grace window is still open once the wedged process is stopped", "%d ms left", left)
	h.Advance(left - 1)
	h.AwaitTimerDue(1, "the unregister grace window")
	h.Verify(Response, len(h.ToolNames("main", "fx")) == 9, "they are still registered 1 ms before the window ends", "%d tools", len(h.ToolNames("main", "fx")))
	h.Advance(1)
	unreg := h.AwaitAfter(seq, Ev(event.ToolsUnregistered, "fx"))
	h.Eventually("the tools to be unregistered", func() bool { return len(h.ToolNames("main", "fx")) == 0 })
	h.VerifyElapsed(Events, "tools.unregistered comes one grace window after tools.unregister_scheduled", unreg.At-sched.At, ms(grace))
	j := h.AwaitJournalFunc("fx", "a relaunch that failed on start", func(j JournalEntries) bool {
		return len(j.Where("exit", "reason", "fail-on-start")) >= 1
	})
	h.Verify(Journal, j.Count(Handshake) == 1, "the server never came back (every relaunch failed)", "%d handshakes", j.Count(Handshake))
})

var _ = Spec(Requirement{
	ID: "REG-LISTCHANGED-001", Level: Must, Profile: driver.ProfileRegistration, Area: "list-changed", Eras: Both,
	Statement: "An implementation MUST, on notifications/tools/list_changed, list the server's tools again and update them in every open session.",
	Source:    Source{"field failure 6", "notifications/tools/list_changed ignored, or the new list only visible on the next turn. Needs: refresh that server's tools promptly, debounce bursts"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("s1")
	h.Open("s2")
	h.CallNow("s1", "mcp_fx_set_tools", map[string]any{"add": []string{"fresh_tool"}, "remove": []string{"big"}})
	h.AwaitJournal("fx", "list-changed", 1)
	h.passDebounce("fx")
	updated := func() bool {
		for _, s := range []string{"s1", "s2"} {
			names := h.ToolNames(s, "fx")
			if !contains(names, "mcp_fx_fresh_tool") || contains(names, "mcp_fx_big") {
				return false
			}
		}
		return true
	}
	h.Eventually("both sessions to show the new tool list", updated)
	j := h.Journal("fx")
	h.Verify(Journal, j.Count("tools-list") >= 2, "the server was asked for its tools again", "%d tools/list", j.Count("tools-list"))
	h.Verify(Response, updated(), "both sessions list fresh_tool and no longer big", "s1 %v", h.ToolNames("s1", "fx"))
	r := h.CallNow("s2", "mcp_fx_fresh_tool", map[string]any{"text": "new"})
	h.Verify(Journal, !r.Result.IsError && h.Journal("fx").Last("call-start").Str("tool") == "fresh_tool", "the new tool is callable", "error=%v", r.Error)
})

var _ = Spec(Requirement{
	ID: "REG-LISTCHANGED-002", Level: Should, Profile: driver.ProfileRegistration, Area: "list-changed", Eras: Both,
	Statement: "An implementation SHOULD keep a server's previous tools when a refresh after list_changed returns an empty list.",
	Source:    Source{"field failure 6", "keep the old list if the refresh comes back empty by mistake"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	h.CallNow("main", "mcp_fx_set_tools", map[string]any{"remove": builtinTools()})
	h.AwaitJournal("fx", "list-changed", 1)
	h.passDebounce("fx")
	h.AwaitJournal("fx", "tools-list", 2)
	j := h.Journal("fx")
	h.Verify(Journal, j.Last("tools-list").Int("count") == 0, "the refresh got an empty list", "tools-list %v", j.Last("tools-list").Fields)
	h.Await(Ev(event.ToolsRefreshKept, "fx"))
	h.Verify(Response, len(h.ToolNames("main", "fx")) == 9, "the session keeps the previous 9 tools", "%v", h.ToolNames("main", "fx"))
})

var _ = Spec(Requirement{
	ID: "REG-DISCONNECT-001", Level: Must, Profile: driver.ProfileRegistration, Area: "disconnect", Eras: Both,
	Statement: "An implementation MUST, on server.disconnect, unregister the server's tools at once, stop its process and not restart it until the next reload.",
	Source:    Source{"seed 000", "disconnectServer(name): closes transport if connected, removes that server's mcp_ tools from manager state"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	ctx, cancel := h.awaitCtx()
	h.must(h.Client().Disconnect(ctx, "fx"), "server.disconnect")
	cancel()
	h.Verify(Response, len(h.ToolNames("main", "fx")) == 0, "its tools are gone when server.disconnect answers", "%v", h.ToolNames("main", "fx"))
	exit := h.AwaitJournal("fx", "exit", 1).Last("exit")
	h.Verify(Journal, exit.Str("reason") == "stdin-eof" && exit.PID == pid, "its process was stopped", "exit %v", exit.Fields)
	disc := h.Await(Ev(event.ServerDisconnected, "fx"))
	if h.Virtual() {
		h.Advance(10 * 60 * 1000)
	} else {
		h.Pass(1000)
	}
	// Bound: the status answer after ten virtual minutes.
	st := h.Status("fx")
	later := h.EventsAfter(disc.Seq, "fx", event.RestartScheduled, event.RestartAttempt, event.ProcessStarted)
	h.Verify(Journal, len(h.Journal("fx").Launches()) == 1 && len(later) == 0 && st.State != "connected", "it is not restarted",
		"%d launches, state %s, events after server.disconnected: %v", len(h.Journal("fx").Launches()), st.State, later)
	ctx, cancel = h.awaitCtx()
	h.must(h.Client().Reload(ctx), "reload")
	cancel()
	h.AwaitJournal("fx", "tools-list", 2)
	h.Eventually("the tools back after reload", func() bool { return len(h.ToolNames("main", "fx")) == 9 })
	h.Verify(Journal, len(h.Journal("fx").Launches()) == 2, "reload brings it back", "%d launches", len(h.Journal("fx").Launches()))
})

var _ = Spec(Requirement{
	ID: "REG-RELOAD-001", Level: Must, Profile: driver.ProfileRegistration, Area: "reload", Eras: Both,
	Statement: "An implementation MUST, on reload, re-read its configuration files, stop servers no longer configured, start new ones and swap the tools of open sessions.",
	Source:    Source{"field failure 13", "\"restart\" reuses a stale cached config. Needs: deferred calls wait for the connection; reload re-reads config"},
}, func(h *H) {
	file := h.Path("servers.json")
	h.WriteConfig(file, map[string]Server{"old": h.Fixture("old", nil)})
	h.Start(Setup{ConfigFiles: []driver.ConfigFile{{Path: file, Level: "user"}}})
	h.Open("main")
	h.AwaitJournal("old", "tools-list", 1)
	h.WriteConfig(file, map[string]Server{"new": h.Fixture("new", nil)})
	ctx, cancel := h.awaitCtx()
	h.must(h.Client().Reload(ctx), "reload")
	cancel()
	h.AwaitJournal("new", "tools-list", 1)
	exit := h.AwaitJournal("old", "exit", 1).Last("exit")
	h.Verify(Journal, exit.Str("reason") == "stdin-eof", "the server removed from the file was stopped", "exit %v", exit.Fields)
	h.Eventually("the new server's tools in the session", func() bool { return len(h.ToolNames("main", "new")) == 9 })
	h.Verify(Response, len(h.ToolNames("main", "old")) == 0, "the session no longer lists the old server's tools", "%v", h.ToolNames("main", "old"))
	r := h.CallNow("main", "mcp_new_echo", map[string]any{"text": "reloaded"})
	h.Verify(Journal, !r.Result.IsError && h.Journal("new").Count("call-start") == 1, "the same session calls the new server", "error=%v", r.Error)
})

var _ = Spec(Requirement{
	ID: "REG-COLLISION-001", Level: Must, Profile: driver.ProfileConventions, Formerly: driver.ProfileRegistration, Area: "collision", Eras: Both,
	Statement: "An implementation MUST expose one tool per exposed name when two servers' tools collide after sanitizing, pick the same winner in every session and report the collision, whichever of the two servers' tools arrive first.",
	Source:    Source{"seed 002", "Different raw names can still sanitize to the same identifier (for example my-server and my.server), and registry insertion is last-write-wins"},
}, func(h *H) {
	// Two pairs of servers whose names sanitize alike. In each pair the
	// second server's handshake is held until the first's tools are
	// registered, the dash first in one pair and the dot first in the
	// other: whichever tool an implementation picks, one collision arises
	// when the winner's tools arrive and the other when the loser's do.
	pairs := []struct{ first, second, firstKey, secondKey, name string }{
		{"my.server", "my-server", "my-dot", "my-dash", "mcp_my_server_echo"},
		{"your-server", "your.server", "your-dash", "your-dot", "mcp_your_server_echo"},
	}
	key := map[string]string{}
	servers := map[string]Server{}
	var releases []func()
	for _, p := range pairs {
		hold, release := h.InitHold(p.secondKey)
		servers[p.first] = h.Fixture(p.firstKey, nil)
		servers[p.second] = h.Fixture(p.secondKey, Knobs{"MCP_FIXTURE_INIT_WAIT_FILE": hold})
		key[p.first], key[p.second] = p.firstKey, p.secondKey
		releases = append(releases, release)
	}
	h.Start(Setup{Servers: servers})
	open := h.OpenAsync("s1")
	for _, p := range pairs {
		h.AwaitJournal(p.firstKey, "tools-list", 1)
		h.Await(Ev(event.ToolsRegistered, p.first))
	}
	for _, release := range releases {
		release()
	}
	open.Report()
	for _, p := range pairs {
		h.AwaitJournal(p.secondKey, "tools-list", 1)
		h.Await(Ev(event.ToolsCollision, "", "name", p.name))
	}
	h.Verify(Events, h.Count(Ev(event.ToolsCollision, "", "name", pairs[0].name)) > 0 && h.Count(Ev(event.ToolsCollision, "", "name", pairs[1].name)) > 0,
		"tools.collision reports both collisions, the one whose dash server came second and the one whose dot server did", "%d and %d events",
		h.Count(Ev(event.ToolsCollision, "", "name", pairs[0].name)), h.Count(Ev(event.ToolsCollision, "", "name", pairs[1].name)))
	h.Open("s2")
	winner := map[string]map[string]string{} // session -> exposed name -> server
	for _, s := range []string{"s1", "s2"} {
		count := map[string]int{}
		winner[s] = map[string]string{}
		for _, t := range h.Tools(s) {
			count[t.Name]++
			winner[s][t.Name] = t.Server
		}
		dups := 0
		for _, n := range count {
			if n > 1 {
				dups++
			}
		}
		h.Verify(Response, dups == 0 && len(count) == 18, "session "+s+" lists each exposed name once", "%d names, %d duplicated", len(count), dups)
	}
	for _, p := range pairs {
		w := winner["s1"][p.name]
		h.Verify(Response, w != "" && w == winner["s2"][p.name], "both sessions pick the same winner of "+p.name, "s1 %q, s2 %q", w, winner["s2"][p.name])
		loser := p.first
		if w == p.first {
			loser = p.second
		}
		h.CallNow("s2", p.name, map[string]any{"text": "who"})
		h.Verify(Journal, h.AwaitJournal(key[w], "call-start", 1).Count("call-start") == 1 && h.Journal(key[loser]).Count("call-start") == 0,
			"the call of "+p.name+" reached the winner only", "winner %s", w)
	}
})
