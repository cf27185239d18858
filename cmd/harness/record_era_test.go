package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/scenarios"
	"github.com/mcplife/mcplife/scenarios/repro"
)

// modernSecret is a token in a modern server's env: the trace must not
// hold it.
const modernSecret = "modern-era-token-5e3f"

// record -> repro -> run in the stateless era (issue 26): a session whose
// servers speak only 2026-07-28 (MCP_FIXTURE_PROTOCOL_VERSIONS), one of
// them wedged through its proxy (hang=*) and recovered by a ping-less
// probe and a restart, is recorded; the trace names the era, its journals
// show it on every request, its secret is redacted; the scenario repro
// writes pins its fixtures to the modern era, probes without ping and runs
// in the modern era only, on the virtual and on the real clock.
func TestRecordReproRunModern(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	server := func(toolTimeoutMS int) map[string]any {
		return map[string]any{"command": exe(t), "args": []string{"fixture"}, "toolTimeout": toolTimeoutMS,
			"env": map[string]string{roleEnv: "cli", "GORACE": "atexit_sleep_ms=0", "MCP_FIXTURE_PROTOCOL_VERSIONS": "2026-07-28",
				"API_TOKEN": modernSecret}}
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fx": server(3000), "fy": server(60000)}})
	cfgFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "modern.trace.json")
	code, out, errs := harness(t, "record", "-config", cfgFile, "-o", trace, "-probe-timeout", "300ms",
		"-fault", "fx:hang=*",
		"-call", `fy:echo:{"text":"a `+modernSecret+`"}`, "-call", `fx:echo:{"text":"b"}`, "-call", `fy:fail:{"message":"m"}`)
	if code != 0 {
		t.Fatalf("record: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "harness record: fx: recorded in the modern era (protocol 2026-07-28)") {
		t.Errorf("record does not name the era on stderr:\n%s", errs)
	}
	raw, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), modernSecret) || !strings.Contains(string(raw), "[redacted:env.API_TOKEN]") {
		t.Errorf("the modern trace holds the secret, or no marker for it")
	}
	tr, err := repro.Read(trace)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fx", "fy"} {
		if s := tr.Servers[name]; s.Protocol != "2026-07-28" || s.Era != repro.EraModern {
			t.Errorf("server %s recorded as protocol %q era %q, want 2026-07-28 modern", name, s.Protocol, s.Era)
		}
	}
	restarts, pings := 0, 0
	for _, e := range tr.Events {
		switch {
		case e.Kind == event.RestartSucceeded && e.Server == "fx":
			restarts++
		case e.Kind == event.ProbeStarted && e.Server == "fx" && e.Attrs["method"] == "ping":
			pings++
		}
	}
	if restarts != 1 || pings != 0 {
		t.Fatalf("trace: %d restarts of fx (want 1), %d ping probes (want 0)", restarts, pings)
	}
	// The proxy's journal shows the era of every request.
	var opens, modernCalls, legacy, watchPings, probes int
	for _, l := range tr.Journals["fx"] {
		var f map[string]any
		_ = json.Unmarshal(l, &f)
		kind := f["kind"]
		switch {
		case kind == "open" && f["method"] == "server/discover" && f["era"] == "modern":
			opens++
		case kind == "call-start" && f["era"] == "modern" && f["protocolVersion"] == "2026-07-28":
			modernCalls++
		case kind == "request" && f["method"] == "mcplife/probe-unknown-method":
			probes++
		case kind == "ping" && f["era"] == "legacy":
			watchPings++
		case f["era"] == "legacy", kind == "initialize":
			legacy++
		}
	}
	// A server that read server/discover and has not answered it at the
	// runtime's first look (300 ms; a busy machine) gets a request of an
	// unknown method and then a ping (docs/LIFECYCLE.md, "Protocol eras"):
	// those pings belong to no era.
	legacy += max(0, watchPings-probes)
	// Under load a discover may outlast -probe-timeout: the runtime then
	// tries initialize, which the modern-only server refuses, and asks
	// the modern era again (server.protocol_fallback); only then does a
	// legacy entry belong in the journal.
	fallbacks := 0
	for _, e := range tr.Events {
		if e.Kind == event.ServerProtocolFallback && e.Server == "fx" {
			fallbacks++
		}
	}
	if opens < 2 || modernCalls != 2 || (legacy > 0 && fallbacks == 0) {
		t.Errorf("fx's journal: %d sessions opened by a modern discover (want one per launch, 2 at least), %d modern calls (want 2: the hung one and its retry), %d legacy entries with %d protocol fallbacks (want none without one)", opens, modernCalls, legacy, fallbacks)
	}

	sdir := filepath.Join(dir, "scenarios")
	if err := os.Mkdir(sdir, 0o755); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(sdir, "951-recorded-modern-hang.txtar")
	code, out, errs = harness(t, "repro", "-o", scen, trace)
	if code != 0 || strings.Contains(errs, "not reproduced") {
		t.Fatalf("repro: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	data, err := os.ReadFile(scen)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Era: modern.", `"MCP_FIXTURE_ERA": "modern"`, "recovered:", "MCP_FIXTURE_BLOCK_EVENT_LOOP",
		"probe.started server=fx method=tools/list", "[!cap:health-probe] result c2 outcome~^(ok|error)$"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the scenario lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), "method=ping") || strings.Contains(string(data), modernSecret) {
		t.Errorf("the modern scenario probes with ping or holds the secret:\n%s", data)
	}
	sc, err := scenarios.Parse(filepath.Base(scen), data)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Era != scenarios.EraModern {
		t.Fatalf("the scenario's era is %q, want modern", sc.Era)
	}
	// -era both runs it in the modern era only.
	code, out, errs = harness(t, "run", "-era", "both", "-dir", sdir)
	if code != 0 || !strings.Contains(out, "1 passed, 0 failed, 0 skipped, 1 not applicable") || !strings.Contains(out, "n/a   legacy") {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s\nscenario:\n%s", code, out, errs, data)
	}
	// The real clock, and a client without health-probe and
	// restart-policies (held to the black-box expectation).
	replayAsRoles(t, "modern", sdir, data, modernReproAgainstMinimalNode)
}

// modernReproAgainstMinimalNode runs the repro of the recorded modern hang
// against the tutorial driver: it speaks the handshake era only (its
// hello names eras ["legacy"]), so the scenario is not applicable in
// either era (in legacy by its header, in modern because the driver does
// not speak it), and a run in which nothing ran exits 1 saying why.
func modernReproAgainstMinimalNode(t *testing.T, sdir string) {
	driverJS, _ := filepath.Abs("../../conformance/drivers/minimal-node/driver.js")
	if _, err := exec.LookPath("node"); err != nil {
		needNode(t, "node is not on PATH")
		return
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(driverJS), "node_modules")); err != nil {
		needNode(t, "conformance/drivers/minimal-node has no node_modules (npm ci)")
		return
	}
	code, out, errs := harness(t, "run", "-era", "both", "-dir", sdir, "-impl", "node "+driverJS)
	if code != 1 || !strings.Contains(out, "n/a   legacy 951-recorded-modern-hang") || !strings.Contains(out, "n/a   modern 951-recorded-modern-hang") ||
		!strings.Contains(out, "FAIL: no scenario ran (0 skipped, 2 not applicable)") || !strings.Contains(out, "1 not applicable in modern: the driver does not speak the modern era") {
		t.Fatalf("against minimal-node: exit %d, want 951-recorded-modern-hang not applicable in both eras\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
