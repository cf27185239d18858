package repro

import (
	"strings"
	"testing"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/scenarios"
)

// eraTrace is a stdio server fx recorded at protocol (nothing when ""):
// a call that hung until its probe failed and fx was restarted, and, on
// server fy, a call that timed out while the probe found fy healthy.
func eraTrace(protocol string, fyProtocol string) *Trace {
	probe := func(p string) string {
		if EraOf(p) == EraModern {
			return "tools/list"
		}
		return "ping"
	}
	var evs []event.Event
	add := func(server string, kind event.Kind, attrs ...any) {
		evs = append(evs, ev(uint64(len(evs)+1), server, kind, attrs...))
	}
	connected := func(server, p string) {
		if p == "" {
			add(server, event.ServerConnected)
		} else {
			add(server, event.ServerConnected, "protocol", p)
		}
	}
	connected("fx", protocol)
	connected("fy", fyProtocol)
	add("fx", event.ToolCallStarted, "call", "c1")
	add("fx", event.ToolTimeout, "call", "c1")
	if probe(protocol) == "ping" {
		add("fx", event.ProbeStarted, "method", "ping")
		add("fx", event.ProbeFinished, "method", "ping", "healthy", "false")
	}
	add("fx", event.ProbeStarted, "method", "tools/list")
	add("fx", event.ProbeFinished, "method", "tools/list", "healthy", "false")
	add("fx", event.RestartScheduled, "reason", "probe-failure", "attempt", int64(1), "delay_ms", int64(0))
	add("fx", event.RestartAttempt)
	connected("fx", protocol)
	add("fx", event.RestartSucceeded)
	add("fy", event.ToolCallStarted, "call", "c2")
	add("fy", event.ToolTimeout, "call", "c2")
	add("fy", event.ProbeStarted, "method", probe(fyProtocol))
	add("fy", event.ProbeFinished, "method", probe(fyProtocol), "healthy", "true")
	return &Trace{
		Format:  Format,
		Servers: map[string]Server{"fx": {Transport: "stdio", ToolTimeoutMS: 1000, Proxied: true}, "fy": {Transport: "stdio", ToolTimeoutMS: 1000, Proxied: true}},
		Calls: []Call{
			{ID: "c1", Server: "fx", Tool: "echo", Exposed: "mcp_fx_echo", Outcome: "ok"},
			{ID: "c2", Server: "fy", Tool: "echo", Exposed: "mcp_fy_echo", Outcome: "error", Code: "mcp_tool_timeout"},
		},
		Events: evs,
	}
}

// A session recorded in the stateless era replays in that era: its
// fixtures speak it, the probe has no ping, and the header restricts the
// scenario to the modern era; the same session in the handshake era
// replays with ping, restricted to the legacy era; servers of both eras
// run in both, each fixture in its own.
func TestGenerateEras(t *testing.T) {
	for _, tc := range []struct {
		name          string
		tr            *Trace
		era           string // the scenario's era, "" for both
		want, notWant []string
	}{
		{"modern", eraTrace("2026-07-28", "2026-07-28"), "modern", []string{
			`"MCP_FIXTURE_ERA": "modern"`,
			"[cap:health-probe] await -after mc1 tool.timeout server=fx\n[cap:health-probe] await -after mc1 probe.started server=fx method=tools/list\n[cap:health-probe] [cap:virtual-clock] advance 3s\n[cap:health-probe] await -after mc1 probe.finished server=fx method=tools/list healthy=false\n",
			"await -after mc2 probe.finished server=fy method=tools/list healthy=true",
			"# Era: modern. The session was recorded in the stateless era\n# (protocol 2026-07-28), so",
		}, []string{"method=ping", `"MCP_FIXTURE_ERA": "legacy"`}},
		{"legacy", eraTrace("2025-11-25", "2025-11-25"), "legacy", []string{
			`"MCP_FIXTURE_ERA": "legacy"`,
			"await -after mc1 probe.started server=fx method=ping",
			"await -after mc2 probe.finished server=fy method=ping healthy=true",
		}, []string{`"MCP_FIXTURE_ERA": "modern"`}},
		{"unknown: legacy assumed", eraTrace("", ""), "legacy", []string{
			"# Era: legacy. The trace names no protocol version",
			"method=ping",
		}, nil},
		{"mixed", eraTrace("2026-07-28", "2025-11-25"), "", []string{
			`"MCP_FIXTURE_ERA": "modern"`, `"MCP_FIXTURE_ERA": "legacy"`,
			"await -after mc1 probe.started server=fx method=tools/list",
			"await -after mc2 probe.finished server=fy method=ping healthy=true",
		}, []string{"Era:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Generate(tc.tr, "950-era", "era.json")
			if err != nil {
				t.Fatal(err)
			}
			s := string(res.Script)
			if res.Partial() || res.Classes["c1"] != ClassHangRestart || res.Classes["c2"] != ClassTimeoutHealthy {
				t.Errorf("classes %v, notes %q", res.Classes, res.Notes)
			}
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("the scenario lacks %q:\n%s", w, s)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(s, w) {
					t.Errorf("the scenario has %q:\n%s", w, s)
				}
			}
			sc, err := scenarios.Parse("950-era.txtar", res.Script)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Era != tc.era {
				t.Errorf("the scenario's era %q, want %q", sc.Era, tc.era)
			}
		})
	}
}

// The trace's own era and protocol fields take precedence over the
// events; EraOf sorts versions into eras.
func TestServerEra(t *testing.T) {
	tr := eraTrace("2025-11-25", "")
	s := tr.Servers["fx"]
	s.Protocol, s.Era = "2026-07-28", EraModern
	tr.Servers["fx"] = s
	if era, p := tr.ServerEra("fx"); era != EraModern || p != "2026-07-28" {
		t.Errorf("fx: %s %s", era, p)
	}
	if era, p := tr.ServerEra("fy"); era != "" || p != "" {
		t.Errorf("fy: %q %q", era, p)
	}
	for v, want := range map[string]string{"": "", "2024-11-05": EraLegacy, "2025-11-25": EraLegacy, "2026-07-28": EraModern, "2027-01-01": EraModern} {
		if got := EraOf(v); got != want {
			t.Errorf("EraOf(%q) = %q, want %q", v, got, want)
		}
	}
}
