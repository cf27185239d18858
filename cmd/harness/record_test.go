package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/scenarios"
	"github.com/mcplife/mcplife/scenarios/repro"
)

// record -> repro -> run: a session against two servers, one of which is
// wedged through its proxy (hang=*) and recovered by probe and restart, is
// recorded; the trace becomes a scenario that passes under harness run.
func TestRecordReproRun(t *testing.T) {
	dir := t.TempDir()
	// The runtime runs on the real clock here: fx, which is wedged, gets a
	// short tool timeout; fy, whose calls must answer, a generous one.
	server := func(toolTimeoutMS int) map[string]any {
		return map[string]any{"command": exe(t), "args": []string{"fixture"}, "toolTimeout": toolTimeoutMS,
			// The proxy's rules and repro's knobs are of the handshake era.
			"env": map[string]string{roleEnv: "cli", "GORACE": "atexit_sleep_ms=0", "MCP_FIXTURE_ERA": "legacy"}}
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fx": server(3000), "fy": server(60000)}})
	cfgFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "session.trace.json")
	code, out, errs := harness(t, "record", "-config", cfgFile, "-o", trace, "-probe-timeout", "300ms",
		"-fault", "fx:hang=*",
		"-call", `fy:echo:{"text":"a"}`, "-call", `fx:echo:{"text":"b"}`, "-call", `fy:fail:{"message":"m"}`)
	if code != 0 {
		t.Fatalf("record: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	tr, err := repro.Read(trace)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, c := range tr.Calls {
		outcomes = append(outcomes, c.Outcome)
	}
	if strings.Join(outcomes, ",") != "ok,ok,tool-error" {
		t.Fatalf("recorded outcomes %v, want ok,ok,tool-error\n%s", outcomes, out)
	}
	restarts := 0
	for _, e := range tr.Events {
		if e.Kind == event.RestartSucceeded && e.Server == "fx" {
			restarts++
		}
	}
	if restarts != 1 || !tr.Servers["fx"].Proxied || len(tr.Journals["fx"]) == 0 || len(tr.Faults) != 1 {
		t.Fatalf("trace: %d restarts of fx, servers %+v, %d fx journal entries, faults %+v", restarts, tr.Servers, len(tr.Journals["fx"]), tr.Faults)
	}

	sdir := filepath.Join(dir, "scenarios")
	if err := os.Mkdir(sdir, 0o755); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(sdir, "950-recorded-hang.txtar")
	code, out, errs = harness(t, "repro", "-o", scen, trace)
	if code != 0 || strings.Contains(errs, "not reproduced") {
		t.Fatalf("repro: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	data, err := os.ReadFile(scen)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mcp_fx_test", "recovered:", "mcp_fy_echo", "mcp_fy_fail", "MCP_FIXTURE_BLOCK_EVENT_LOOP"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the scenario lacks %q:\n%s", want, data)
		}
	}
	if _, err := scenarios.Parse(filepath.Base(scen), data); err != nil {
		t.Fatal(err)
	}
	// The trace was recorded against handshake-era servers.
	code, out, errs = harness(t, "run", "-era", "legacy", "-dir", sdir)
	if code != 0 || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s\nscenario:\n%s", code, out, errs, data)
	}
}

func TestRecordReproBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"record"}, 2, "-config FILE and -o TRACE are required"},
		{[]string{"record", "-config", "x", "-o", "y", "-call", "nocolon"}, 2, "want SERVER:TOOL"},
		{[]string{"record", "-config", "x", "-o", "y", "-fault", "fx:frob=1"}, 2, "unknown action"},
		{[]string{"repro"}, 2, "exactly one TRACE"},
		{[]string{"repro", filepath.Join(dir, "missing.json")}, 1, "missing.json"},
		{[]string{"proxy"}, 2, "no upstream"},
		{[]string{"proxy", "-fault", "hang", "--", "true"}, 2, "needs a match"},
	} {
		code, _, errs := harness(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("harness %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"format":"other/9","servers":{}}`), 0o644)
	if code, _, errs := harness(t, "repro", bad); code != 1 || !strings.Contains(errs, `format "other/9"`) {
		t.Errorf("repro of a foreign format: exit %d, stderr %q", code, errs)
	}
}
