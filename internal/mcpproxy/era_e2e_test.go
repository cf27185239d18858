package mcpproxy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// modern is the fixture knob of a modern-only upstream (2026-07-28).
var modern = map[string]string{"MCP_FIXTURE_ERA": "modern"}

// The journal of a modern session shows its era: server/discover opens
// it (open, then discover with the versions the server offered) and every
// request carries 2026-07-28; no handshake and no ping cross the wire.
func TestModernJournal(t *testing.T) {
	e := fixtureEnv(t, nil, modern, nil, host.Options{})
	e.await(event.ServerConnected, "protocol", "2026-07-28")
	o := e.result(e.call("mcp_fx_echo", map[string]any{"text": "a"}))
	if o.err != nil || !strings.Contains(o.res.Text, "a") {
		t.Fatalf("call: %+v %v", o.res, o.err)
	}
	e.awaitJournal("px.journal", 1, "call-end", "tool", "echo", "outcome", "ok")
	for _, c := range []struct {
		kind   string
		fields []string
		want   int
	}{
		{"open", []string{"method", "server/discover", "era", "modern", "protocolVersion", "2026-07-28"}, 1},
		{"discover", []string{"protocolVersion", "2026-07-28", "versions", "2026-07-28"}, 1},
		{"call-start", []string{"tool", "echo", "era", "modern", "protocolVersion", "2026-07-28"}, 1},
		{"request", []string{"method", "tools/list", "era", "modern", "protocolVersion", "2026-07-28"}, 1},
		{"initialize", nil, 0},
		{"initialized", nil, 0},
		{"ping", nil, 0},
	} {
		if n := e.count("px.journal", c.kind, c.fields...); n != c.want {
			t.Errorf("%d %s entries %v, want %d", n, c.kind, c.fields, c.want)
		}
	}
	for _, en := range e.entries("px.journal") {
		if en.Kind == "discover" && en.Fields["error"] != nil {
			t.Errorf("discover refused: %v", en.Fields)
		}
	}
}

// Against a handshake-era server the runtime's discover is refused (the
// journal names the refusal) and initialize opens the session in the
// legacy era; requests carry no version.
func TestLegacyJournalAfterDiscover(t *testing.T) {
	e := fixtureEnv(t, nil, nil, nil, host.Options{})
	e.await(event.ServerConnected, "protocol", "2025-11-25")
	e.result(e.call("mcp_fx_echo", map[string]any{"text": "a"}))
	e.awaitJournal("px.journal", 1, "call-start", "tool", "echo", "era", "legacy")
	e.awaitJournal("px.journal", 1, "open", "method", "initialize", "era", "legacy")
	if n := e.count("px.journal", "call-start", "protocolVersion", "2026-07-28"); n != 0 {
		t.Errorf("%d legacy calls journaled with a modern version", n)
	}
	for _, en := range e.entries("px.journal") {
		if en.Kind == "discover" && en.Fields["error"] == nil {
			t.Errorf("a legacy-only server's discover answered: %v", en.Fields)
		}
	}
}

// fail-init on a modern server fails its start at server/discover: the
// server never sees it and the runtime reports the server failed.
func TestModernFailInit(t *testing.T) {
	e := fixtureEnv(t, []string{"fail-init"}, modern, map[string]any{"restart": "never"}, host.Options{})
	e.await(event.ServerFailed)
	e.awaitJournal("px.journal", 1, "exit", "reason", "fault", "code", "5")
	if n := e.count("px.journal", "fault", "method", "server/discover", "rule", "fail-init"); n != 1 {
		t.Errorf("%d fail-init faults on server/discover, want 1", n)
	}
	if n := e.count("fx.journal", "received"); n != 0 {
		t.Errorf("the server received %d messages, want 0", n)
	}
}

// exit-after=discover: the modern server answers server/discover and
// exits right after, during the runtime's start of the connection.
func TestModernExitAfterDiscover(t *testing.T) {
	e := fixtureEnv(t, []string{"exit-after=discover,code=4"}, modern, map[string]any{"restart": "never"}, host.Options{})
	e.await(event.ServerFailed)
	e.awaitJournal("px.journal", 1, "exit", "reason", "fault", "code", "4")
	if n := e.count("px.journal", "discover", "versions", "2026-07-28"); n != 1 {
		t.Errorf("%d answered discovers journaled, want 1", n)
	}
	if n := e.count("fx.journal", "discover"); n != 1 {
		t.Errorf("the server answered %d discovers, want 1", n)
	}
}

// hang=* on a modern server: the probe has no ping (tools/list only), it
// fails, and the restarted server answers the retried call.
func TestModernHangRecoveredByRestart(t *testing.T) {
	e := fixtureEnv(t, nil, modern, map[string]any{"toolTimeout": 1000}, host.Options{})
	e.await(event.ServerConnected, "protocol", "2026-07-28")
	e.control("POST", "/rules", "hang=*")
	ch := e.call("mcp_fx_echo", map[string]any{"text": "x"})
	e.awaitJournal("px.journal", 1, "hang-start", "method", "tools/call")
	e.clock.Advance(time.Second)
	e.await(event.ToolTimeout)
	e.await(event.ProbeStarted, "method", "tools/list")
	e.awaitJournal("px.journal", 1, "fault", "method", "tools/list")
	e.clock.Advance(3 * time.Second)
	e.await(event.ProbeFinished, "method", "tools/list", "healthy", "false")
	e.await(event.RestartSucceeded, "reason", "probe-failure")
	o := e.result(ch)
	if o.err != nil || !strings.Contains(o.res.Text, "x") || o.res.IsError {
		t.Fatalf("retried call: %+v %v", o.res, o.err)
	}
	if n := e.rt.Events().Count(event.Matcher{Kind: event.ProbeStarted, Attrs: map[string]string{"method": "ping"}}); n != 0 {
		t.Errorf("%d ping probes of a modern server, want 0", n)
	}
	if n := e.count("px.journal", "ping"); n != 0 {
		t.Errorf("%d pings through the proxy, want 0", n)
	}
	if n := e.count("px.journal", "open", "method", "server/discover"); n != 2 {
		t.Errorf("%d sessions opened with server/discover, want 2 (one per launch)", n)
	}
}

// ping=drop never matches a modern session: the runtime sends no ping, so
// a hung tool's probe (tools/list) finds the server healthy and the rule
// is never applied.
func TestModernPingRuleNeverMatches(t *testing.T) {
	e := fixtureEnv(t, []string{"ping=drop", "hang=tool:echo"}, modern, map[string]any{"toolTimeout": 1000}, host.Options{})
	e.await(event.ServerConnected, "protocol", "2026-07-28")
	ch := e.call("mcp_fx_echo", map[string]any{"text": "x"})
	e.awaitJournal("px.journal", 1, "hang-start", "tool", "echo")
	e.clock.Advance(time.Second)
	e.await(event.ProbeFinished, "method", "tools/list", "healthy", "true")
	if o := e.result(ch); code(o) != "mcp_tool_timeout" {
		t.Fatalf("call: %+v %v", o.res, o.err)
	}
	if n := e.count("px.journal", "fault", "rule", "ping=drop"); n != 0 {
		t.Errorf("ping=drop applied %d times in a modern session", n)
	}
}
