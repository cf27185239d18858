package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/realservers"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/scenarios"
	"github.com/mcplife/mcplife/scenarios/repro"
)

// record -> repro -> run: a session against two servers, one of which is
// wedged through its proxy (hang=*) and recovered by probe and restart, is
// recorded; the trace becomes a scenario that passes under harness run.
func TestRecordReproRun(t *testing.T) {
	t.Parallel()
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
	for _, want := range []string{"mcp_fx_test", "recovered:", "mcp_fy_echo", "mcp_fy_fail", "MCP_FIXTURE_BLOCK_EVENT_LOOP",
		// Issue 28: the recovery is conditioned on health-probe, and a
		// client without it is held to the black-box expectation.
		"[cap:health-probe] await -after", "[!cap:health-probe] result c2 outcome~^(ok|error)$", "[!cap:health-probe] result c2b outcome~^(ok|error)$"} {
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
	// Issue 28: the scenario replays on the real clock too, against a
	// driver without virtual-clock: its advance lines are skipped and the
	// recorded timers (tool timeout, probe timeouts, stop grace) fire by
	// themselves.
	if !strings.Contains(string(data), "[cap:virtual-clock] advance ") || strings.Contains(string(data), "[!cap:virtual-clock]") ||
		strings.Contains(string(data), "\n[!cap:health-probe] skip") || strings.Contains(string(data), "\n[!cap:restart-policies] skip") {
		t.Errorf("the scenario should advance the virtual clock only when there is one:\n%s", data)
	}
	replayAsRoles(t, "legacy", sdir, data, reproAgainstMinimalNode)
}

// replayAsRoles runs the scenario in sdir (data) in era against the
// reference behind a driver without virtual-clock ("realclock") and behind
// one without health-probe and restart-policies either ("blackbox"), which
// is held to the black-box expectation of a recorded hang; both must pass.
// minimal runs it against the tutorial driver. The three wait out the
// recorded timers on the real clock, so they run side by side.
func replayAsRoles(t *testing.T, era, sdir string, data []byte, minimal func(*testing.T, string)) {
	for _, role := range []string{"realclock", "blackbox"} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			code, out, errs := harness(t, "run", "-era", era, "-dir", sdir, "-impl", roleImpl(t, role))
			if code != 0 || !strings.Contains(out, "1 passed, 0 failed") {
				t.Fatalf("run as %s: exit %d\nstdout:\n%s\nstderr:\n%s\nscenario:\n%s", role, code, out, errs, data)
			}
		})
	}
	t.Run("minimal-node", func(t *testing.T) {
		t.Parallel()
		minimal(t, sdir)
	})
}

// reproAgainstMinimalNode runs the repro of the recorded hang against the
// tutorial driver (conformance/drivers/minimal-node, real clock only).
// Node and the driver's npm packages are needed: without them the check is
// skipped, or fails under MCPLIFE_REQUIRE_NODE=1.
func reproAgainstMinimalNode(t *testing.T, sdir string) {
	driverJS, _ := filepath.Abs("../../conformance/drivers/minimal-node/driver.js")
	if _, err := exec.LookPath("node"); err != nil {
		needNode(t, "node is not on PATH")
		return
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(driverJS), "node_modules")); err != nil {
		needNode(t, "conformance/drivers/minimal-node has no node_modules (npm ci)")
		return
	}
	// Neither the clock nor the capabilities of the recorded recovery
	// keep the scenario from minimal-node, which announces neither
	// health-probe nor restart-policies: it is held to the black-box
	// expectation of the hang ([!cap:health-probe] lines) and gets a real
	// verdict, whichever it is (exit 0 with ok, or exit 1 with FAIL), not
	// a skip.
	code, out, errs := harness(t, "run", "-era", "legacy", "-dir", sdir, "-impl", "node "+driverJS)
	judged := (code == 0 && strings.Contains(out, "ok    legacy 950-recorded-hang") && strings.Contains(out, "1 passed, 0 failed")) ||
		(code == 1 && strings.Contains(out, "FAIL  legacy 950-recorded-hang") && strings.Contains(out, "0 passed, 1 failed"))
	if !judged || strings.Contains(out, "skip  legacy 950-recorded-hang") || strings.Contains(out, "no scenario ran") {
		t.Fatalf("against minimal-node: exit %d, want a verdict on 950-recorded-hang\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	t.Logf("minimal-node on the recorded hang: exit %d\n%s", code, out)
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

// needNode skips the test for a missing Node prerequisite, or fails it
// under MCPLIFE_REQUIRE_NODE=1 (as conformance/drivers_test.go does).
func needNode(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(realservers.RequireNodeEnv) == "1" {
		t.Fatalf("%s, and %s=1 requires the Node drivers", why, realservers.RequireNodeEnv)
	}
	t.Skipf("skipping the run against minimal-node: %s (set %s=1 to make this a failure)", why, realservers.RequireNodeEnv)
}
