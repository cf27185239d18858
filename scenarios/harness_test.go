package scenarios_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/scenarios"
)

// runSelf runs self-test scripts of testdata/selftest whose names match
// pattern, the way `harness run` does.
func runSelf(t *testing.T, pattern string, mod func(*scenarios.RunOptions)) *scenarios.Report {
	t.Helper()
	ro := scenarios.RunOptions{Dir: "testdata/selftest", Run: regexp.MustCompile(pattern)}
	if mod != nil {
		mod(&ro)
	}
	rep, err := scenarios.RunCatalog(t.Context(), ro)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func only(t *testing.T, rep *scenarios.Report) scenarios.Result {
	t.Helper()
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, want 1", len(rep.Results))
	}
	return rep.Results[0]
}

func wantLog(t *testing.T, r scenarios.Result, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.Log, p) {
			t.Errorf("the log of %s lacks %q:\n%s", r.Name, p, r.Log)
		}
	}
}

// wantFailure runs the self-test scripts matching pattern, wants exactly
// one, failed with a reason that contains reason, and returns it.
func wantFailure(t *testing.T, pattern, reason string) scenarios.Result {
	t.Helper()
	r := only(t, runSelf(t, pattern, nil))
	if r.Status != "fail" {
		t.Fatalf("status %s, want fail", r.Status)
	}
	if !strings.Contains(r.Reason, reason) {
		t.Errorf("reason %q lacks %q", r.Reason, reason)
	}
	return r
}

func TestAwaitTimeoutNamesWhatItWaitedFor(t *testing.T) {
	r := wantFailure(t, "^901", "await: waited for restart.succeeded server=fx reason=probe-failure: nothing matched within 200ms")
	wantLog(t, r,
		"--- trace: last", "gate.closed session=s1",
		"--- journal fx.journal: last", "initialized")
}

func TestAwaitFailsWhenIdle(t *testing.T) {
	wantFailure(t, "^911", "await: waited for restart.succeeded server=fx reason=probe-failure: nothing matched before the implementation went idle")
}

func TestScriptWithoutChecksFails(t *testing.T) {
	r := only(t, runSelf(t, "^902", nil))
	if r.Status != "fail" || !strings.Contains(r.Log, "ended without checking anything") {
		t.Fatalf("status %s, log:\n%s", r.Status, r.Log)
	}
}

func TestUndeclaredCapabilitySkips(t *testing.T) {
	var caps []driver.Capability
	for _, c := range driver.Capabilities() {
		if c.Name != driver.CapTrustGate {
			caps = append(caps, c.Name)
		}
	}
	rep := runSelf(t, "^903", func(ro *scenarios.RunOptions) { ro.Capabilities = caps })
	r := only(t, rep)
	if r.Status != "skip" || r.Reason != "needs trust-gate" {
		t.Fatalf("status %s reason %q, want skip with 'needs trust-gate'", r.Status, r.Reason)
	}
	if rep.Skipped != 1 || rep.Passed != 0 {
		t.Errorf("report counts %d passed, %d skipped", rep.Passed, rep.Skipped)
	}
	// With the capability, the same script runs and passes.
	if r := only(t, runSelf(t, "^903", nil)); r.Status != "pass" {
		t.Fatalf("with trust-gate: %s\n%s", r.Status, r.Log)
	}
}

func TestUnknownCapabilityFails(t *testing.T) {
	r := only(t, runSelf(t, "^904", nil))
	if r.Status != "fail" {
		t.Fatalf("status %s, want fail", r.Status)
	}
	wantLog(t, r, `unknown capability "virtual-clok"`)
}

func TestExpectationFailureShowsOutcome(t *testing.T) {
	r := only(t, runSelf(t, "^905", nil))
	if r.Status != "fail" {
		t.Fatalf("status %s, want fail", r.Status)
	}
	wantLog(t, r, "result c1: expectation failed", `text~goodbye: got`, "hello", "--- trace: last", "tool.call_finished")
}

func TestGoldenMismatchShowsDiff(t *testing.T) {
	r := only(t, runSelf(t, "^906", nil))
	if r.Status != "fail" {
		t.Fatalf("status %s, want fail", r.Status)
	}
	wantLog(t, r, "differs from the golden section", "- +0.000s restart.scheduled server=fx", "  +0.000s gate.opened session=s1")
}

func TestCountJournalFailure(t *testing.T) {
	r := only(t, runSelf(t, "^907", nil))
	if r.Status != "fail" {
		t.Fatalf("status %s, want fail", r.Status)
	}
	wantLog(t, r, "count-journal: 1 launch entries in fx.journal, want 2", "--- journal fx.journal")
}

func TestStrictCondition(t *testing.T) {
	if r := only(t, runSelf(t, "^908", nil)); r.Status != "pass" {
		t.Fatalf("without strict: %s\n%s", r.Status, r.Log)
	}
	r := only(t, runSelf(t, "^908", func(ro *scenarios.RunOptions) { ro.Strict = true }))
	if r.Status != "fail" {
		t.Fatalf("with strict: %s, want fail", r.Status)
	}
}

func TestReportCountsAndVirtualTime(t *testing.T) {
	var progress []string
	rep := runSelf(t, "^(902|910)", func(ro *scenarios.RunOptions) {
		ro.Progress = func(r scenarios.Result) { progress = append(progress, r.Name+" "+r.Status) }
	})
	if rep.Passed != 1 || rep.Failed != 1 || rep.Skipped != 0 {
		t.Fatalf("passed %d failed %d skipped %d", rep.Passed, rep.Failed, rep.Skipped)
	}
	slices.Sort(progress)
	if want := []string{"902-no-checks fail", "910-pass pass"}; !slices.Equal(progress, want) {
		t.Errorf("progress %q, want %q", progress, want)
	}
	for _, r := range rep.Results {
		if r.Description == "" || r.Guards == "" {
			t.Errorf("%s: header not attached to the result: %+v", r.Name, r.Scenario)
		}
	}
	if rep.Hello == nil || rep.Hello.Implementation.Name != "mcplife" {
		t.Errorf("hello %+v", rep.Hello)
	}
}

func TestRunCatalogNoMatch(t *testing.T) {
	_, err := scenarios.RunCatalog(t.Context(), scenarios.RunOptions{Dir: "testdata/selftest", Run: regexp.MustCompile("^nothing$")})
	if !errors.Is(err, scenarios.ErrNoMatch) {
		t.Fatalf("err = %v, want ErrNoMatch", err)
	}
}

func TestProbeRejectsWrongProtocolVersion(t *testing.T) {
	_, err := scenarios.Probe(t.Context(), scenarios.Options{Driver: []string{"fake-driver-v0"}})
	var ve *driver.VersionError
	if !errors.As(err, &ve) || ve.Got != "mcplife-driver/0" {
		t.Fatalf("err = %v, want a version error naming mcplife-driver/0", err)
	}
}

// TestUpdateRewritesGolden runs a script whose golden section is empty with
// update on: cmp-trace writes the section, and a second run without update
// passes with it.
func TestUpdateRewritesGolden(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/selftest/909-update-golden.txtar")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "909-update-golden.txtar")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	hello, err := scenarios.Probe(t.Context(), scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("update", func(t *testing.T) {
		testscript.Run(t, scenarios.Params(dir, scenarios.Options{Update: true}, hello))
	})
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := "-- trace.golden --\n+0.000s gate.opened session=s1 servers=1 timeout_ms=250\n+0.000s gate.closed session=s1 deferred=0 elapsed_ms=0 failed=0 late=0 ready=1\n"
	if !strings.HasSuffix(string(got), want) {
		t.Fatalf("golden section not rewritten:\n%s", got)
	}
	t.Run("check", func(t *testing.T) {
		testscript.Run(t, scenarios.Params(dir, scenarios.Options{}, hello))
	})
}

func TestAdvanceByNeedsTheAnnouncingEvent(t *testing.T) {
	wantFailure(t, "^912", "advance -by debounce_ms: no event matches tools.changed server=fx yet (await it first)")
}

// TestAdvanceByTakesTheAnnouncedDuration: the script checks (stdout) that
// advance -by took the 100 ms the reference announced, and that the
// refresh came after it.
func TestAdvanceByTakesTheAnnouncedDuration(t *testing.T) {
	r := only(t, runSelf(t, "^913", nil))
	if r.Status != "pass" {
		t.Fatalf("status %s: %s\n%s", r.Status, r.Reason, r.Log)
	}
}
