package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/conformance"
	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/conformance/driver/drivertest"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/internal/fixturebuild"
	"github.com/mcplife/mcplife/internal/fixturelink"
	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/mcplife/mcplife/runtime/host"
	"github.com/mcplife/mcplife/scenarios"
)

// roleEnv makes the test binary play a driver for `harness run -impl`:
// "cli" runs the harness CLI (so `<test binary> driver` is `harness
// driver`), "broken" a reference driver whose runtime caps results at 10
// characters, "limited" a reference driver that does not announce
// trust-gate, "fake-v0" a driver of protocol mcplife-driver/0; the
// "check-*" roles are broken stand-ins for driver-check (drivercheck_test.go).
const roleEnv = "HARNESS_TEST_ROLE"

func TestMain(m *testing.M) {
	// Run as mcp-fixture (the link harness run puts on PATH), the binary
	// is the fixture, as the real harness binary is.
	if fixturelink.Invoked(os.Args[0]) {
		quietRaceExit()
		os.Exit(fixture.Main())
	}
	// Copied to a file named harness (console_test.go), the binary is the
	// harness CLI, as its own children (proxies) are.
	if filepath.Base(os.Args[0]) == "harness" {
		quietRaceExit()
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	switch os.Getenv(roleEnv) {
	case "cli":
		quietRaceExit()
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	case "broken":
		quietRaceExit()
		os.Exit(serve(driver.ServeOptions{Configure: func(_ *driver.StartParams, o *host.Options) error {
			o.MaxResultChars = 10
			return nil
		}}))
	case "limited":
		quietRaceExit()
		var caps []driver.Capability
		for _, c := range driver.Capabilities() {
			if c.Name != driver.CapTrustGate {
				caps = append(caps, c.Name)
			}
		}
		os.Exit(serve(driver.ServeOptions{Capabilities: caps, Profiles: []driver.Profile{driver.ProfileCore}}))
	case "realclock":
		// The reference runtime behind a driver without virtual-clock:
		// every scenario it runs runs on the real clock (issue 28), where
		// it lists its timers (pending-timers).
		quietRaceExit()
		var caps []driver.Capability
		for _, c := range driver.Capabilities() {
			if c.Name != driver.CapVirtualClock {
				caps = append(caps, c.Name)
			}
		}
		os.Exit(serve(driver.ServeOptions{Capabilities: caps, Profiles: []driver.Profile{driver.ProfileCore}}))
	case "legacy-only":
		// The reference runtime behind a driver that speaks the handshake
		// era only.
		quietRaceExit()
		os.Exit(serve(driver.ServeOptions{Eras: []driver.Era{driver.EraLegacy}}))
	case "blackbox":
		// The reference runtime behind a real-clock driver that announces
		// neither health-probe nor restart-policies: a repro of a hang
		// holds it to the black-box expectation (issue 28).
		quietRaceExit()
		var caps []driver.Capability
		for _, c := range driver.Capabilities() {
			if c.Name != driver.CapVirtualClock && c.Name != driver.CapHealthProbe && c.Name != driver.CapRestartPolicies {
				caps = append(caps, c.Name)
			}
		}
		os.Exit(serve(driver.ServeOptions{Capabilities: caps, Profiles: []driver.Profile{driver.ProfileCore}}))
	case "fake-v0":
		os.Exit(exitCode(drivertest.ServeCanned(os.Stdin, os.Stdout, drivertest.OtherVersion())))
	case "check-canned", "check-bad", "check-crash", "check-leaky":
		os.Exit(serveCheckStandIn(os.Getenv(roleEnv)))
	}
	dir, err := os.MkdirTemp("", "harness-test-fixture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureDir = dir
	// The parallel tests (records, repros and runs on the real clock) wait
	// on real timers far more than they compute: unless -parallel is
	// given, they all run at once rather than GOMAXPROCS at a time.
	flag.Parse()
	parallelGiven := false
	flag.Visit(func(f *flag.Flag) { parallelGiven = parallelGiven || f.Name == "test.parallel" })
	if !parallelGiven {
		if err := flag.Set("test.parallel", "8"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	// goleak (goroutines) plus a check that no process outlives the tests.
	proctest.Main(removeAfter{m, dir})
}

// removeAfter runs the tests, then removes dir.
type removeAfter struct {
	m   *testing.M
	dir string
}

func (r removeAfter) Run() int {
	defer os.RemoveAll(r.dir)
	return r.m.Run()
}

// fixtureDir holds the fixture program the package's tests share
// (testFixture); TestMain removes it after the tests.
var fixtureDir string

var buildTestFixture = sync.OnceValues(func() (string, error) {
	return fixturebuild.Build(context.Background(), fixtureDir)
})

// testFixture returns the fixture program built once for the package. A
// `harness run` or `harness conformance` without -fixture builds its own
// (matchingFixture: the same fixturebuild.Build, about 2.5 s of CPU, most
// of it linking), which the package's twenty-odd such calls would repeat.
func testFixture(t *testing.T) string {
	t.Helper()
	bin, err := buildTestFixture()
	if err != nil {
		t.Fatalf("building the fixture: %v", err)
	}
	return bin
}

// quietRaceExit re-executes a race-enabled binary (same pid) with
// GORACE=atexit_sleep_ms=0, so that its exits do not take a second.
func quietRaceExit() {
	if !raceEnabled || strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	_ = syscall.Exec(exe, os.Args, env)
}

func serve(opts driver.ServeOptions) int {
	opts.ShutdownTimeout = 2 * time.Second
	if err := driver.Serve(context.Background(), os.Stdin, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func exe(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// roleImpl is an -impl command that runs this test binary in role (see
// TestMain) without changing the test process's environment, so that the
// tests that use it can run in parallel.
func roleImpl(t *testing.T, role string) string {
	t.Helper()
	return fmt.Sprintf("env %s=%s %q", roleEnv, role, exe(t))
}

// harness runs the CLI and returns its exit code, stdout and stderr. A
// `run` or `conformance` without -fixture runs the package's shared
// fixture program (testFixture), built as its default would build it;
// TestRunReferenceJSONAndJUnit runs the default itself (harnessDefault).
func harness(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	if len(args) > 0 && (args[0] == "run" || args[0] == "conformance") && !slices.Contains(args, "-fixture") {
		args = append([]string{args[0], "-fixture", testFixture(t)}, args[1:]...)
	}
	return harnessDefault(t, args...)
}

// harnessDefault runs the CLI as it is given, without a -fixture of the
// tests': a `run` or `conformance` builds its fixture itself.
func harnessDefault(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunReferenceJSONAndJUnit(t *testing.T) {
	dir := t.TempDir()
	jf, xf := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.xml")
	// No -era: both eras, legacy first. No -fixture: the fixture program
	// the harness builds from the checkout (matchingFixture).
	code, out, errs := harnessDefault(t, "run", "-run", "^00[12]-", "-json", jf, "-junit", xf)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"ok    legacy 001-echo-call", "ok    modern 001-echo-call", "ok    legacy 002-startup-gate-250ms", "ok    modern 002-startup-gate-250ms",
		"virtual 0.250s", "legacy: 2 passed, 0 failed, 0 skipped, 0 not applicable", "modern: 2 passed, 0 failed, 0 skipped, 0 not applicable",
		"4 passed, 0 failed, 0 skipped, 0 not applicable (era legacy and modern;"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	var rep jsonReport
	b, err := os.ReadFile(jf)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Passed != 4 || rep.Failed != 0 || len(rep.Scenarios) != 4 || rep.Protocol != driver.ProtocolVersion || !slices.Equal(rep.Eras, []string{"legacy", "modern"}) {
		t.Fatalf("json report %+v", rep)
	}
	if s := rep.Scenarios[1]; s.Name != "002-startup-gate-250ms" || s.Era != "legacy" || s.Status != "pass" || s.VirtualSeconds != 0.25 || s.Checks == 0 || s.Description == "" || s.Guards == "" {
		t.Errorf("json scenario %+v", s)
	}
	if s := rep.Scenarios[3]; s.Name != "002-startup-gate-250ms" || s.Era != "modern" || s.Status != "pass" || s.VirtualSeconds != 0.25 {
		t.Errorf("json scenario %+v", s)
	}
	var ju junitSuites
	b, err = os.ReadFile(xf)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &ju); err != nil {
		t.Fatal(err)
	}
	if ju.Tests != 4 || ju.Failures != 0 || len(ju.Suites) != 2 || len(ju.Suites[1].Cases) != 2 || ju.Suites[1].Cases[0].Name != "001-echo-call [modern]" {
		t.Fatalf("junit report %+v", ju)
	}
}

// TestRunEraNotApplicable: a scenario that declares one era is reported
// n/a in the other, with its reason, and counted apart, in the text, the
// JSON and the JUnit reports; an unknown era is bad input.
// TestRunUnspokenEra: a driver that does not speak an era gets none of its
// scenarios (each is reported not applicable, saying so), as the
// conformance suite does with requirements; the era it speaks runs.
func TestRunUnspokenEra(t *testing.T) {
	t.Parallel()
	code, out, errs := harness(t, "run", "-era", "both", "-run", "^(001|150)-", "-impl", roleImpl(t, "legacy-only"))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"ok    legacy 001-echo-call", "n/a   modern 001-echo-call", "n/a   legacy 150-modern-only-server", "n/a   modern 150-modern-only-server",
		"not applicable in modern: the driver does not speak the modern era", "1 passed, 0 failed, 0 skipped, 3 not applicable"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = harness(t, "run", "-era", "modern", "-run", "^001-", "-impl", roleImpl(t, "legacy-only"))
	if want := "FAIL: no scenario ran (0 skipped, 1 not applicable): every selected scenario was skipped for a capability the driver does not announce, or does not apply to the era (1 not applicable in modern: the driver does not speak the modern era)"; code != 1 || !strings.Contains(out, want) {
		t.Errorf("exit %d, want 1 and %q\nstdout:\n%s\nstderr:\n%s", code, want, out, errs)
	}
}

func TestRunEraNotApplicable(t *testing.T) {
	dir := t.TempDir()
	jf, xf := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.xml")
	code, out, errs := harness(t, "run", "-era", "both", "-run", "^15[01]-", "-json", jf, "-junit", xf)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"n/a   legacy 150-modern-only-server", "not applicable in legacy: A server without the initialize handshake",
		"ok    modern 150-modern-only-server", "ok    legacy 151-ignores-unknown-methods", "n/a   modern 151-ignores-unknown-methods",
		"2 passed, 0 failed, 0 skipped, 2 not applicable"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	var rep jsonReport
	b, _ := os.ReadFile(jf)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.NotApplicable != 2 || rep.Passed != 2 || rep.Scenarios[0].Status != "n/a" || rep.Scenarios[0].Era != "legacy" || !strings.HasPrefix(rep.Scenarios[0].Reason, "not applicable in legacy: ") {
		t.Errorf("json report %+v", rep)
	}
	var ju junitSuites
	b, _ = os.ReadFile(xf)
	if err := xml.Unmarshal(b, &ju); err != nil {
		t.Fatal(err)
	}
	if c := ju.Suites[0].Cases[0]; c.Skipped == nil || !strings.HasPrefix(c.Skipped.Message, "not applicable in legacy") {
		t.Errorf("junit case %+v", c)
	}
	if code, _, errs := harness(t, "run", "-era", "future"); code != 2 || !strings.Contains(errs, `-era: "future" is not an era`) {
		t.Errorf("-era future: exit %d, stderr %q", code, errs)
	}
}

func TestRunExternalDriver(t *testing.T) {
	t.Setenv(roleEnv, "cli")
	code, out, errs := harness(t, "run", "-run", "^07[14]-", "-impl", exe(t)+" driver")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "4 passed, 0 failed, 0 skipped, 0 not applicable") {
		t.Errorf("stdout:\n%s", out)
	}
}

func TestRunFailingImplementation(t *testing.T) {
	t.Setenv(roleEnv, "broken")
	dir := t.TempDir()
	jf, xf := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.xml")
	code, out, errs := harness(t, "run", "-era", "legacy", "-run", "^018-", "-timeout", "1s", "-impl", exe(t), "-json", jf, "-junit", xf)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"FAIL  legacy 018-truncation-boundary-wrap", "--- trace: last", "0 passed, 1 failed, 0 skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	var rep jsonReport
	b, _ := os.ReadFile(jf)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 1 || rep.Scenarios[0].Status != "fail" || rep.Scenarios[0].Reason == "" || !strings.Contains(rep.Scenarios[0].Log, "--- trace") {
		t.Errorf("json report %+v", rep)
	}
	var ju junitSuites
	b, _ = os.ReadFile(xf)
	if err := xml.Unmarshal(b, &ju); err != nil {
		t.Fatal(err)
	}
	if c := ju.Suites[0].Cases[0]; c.Failure == nil || c.Failure.Message == "" {
		t.Errorf("junit case %+v", c)
	}
}

func TestRunUndeclaredCapabilitySkips(t *testing.T) {
	t.Setenv(roleEnv, "limited")
	code, out, errs := harness(t, "run", "-era", "modern", "-run", "^01[24]-", "-impl", exe(t))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"skip  modern 014-trust-gate-project-stdio", "needs trust-gate", "ok    modern 012-disabled-server", "1 passed, 0 failed, 1 skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

// Issue 28: against a driver without virtual-clock, a scenario that needs
// no exact virtual instant runs on the real clock and gets a verdict, also
// one that advances the clock (127: advance waits, time-scaled, and the
// stop grace fires by itself; 106a: advance -by waits the debounce the
// implementation announced); one that checks a snapshot right after
// advance is skipped naming it; a run in which nothing ran exits 1 saying
// why.
func TestRunRealClockDriver(t *testing.T) {
	t.Parallel()
	code, out, errs := harness(t, "run", "-era", "legacy", "-run", "^(001|002|012|106a|127)-", "-impl", roleImpl(t, "realclock"))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"ok    legacy 001-echo-call", "real clock", "ok    legacy 012-disabled-server", "ok    legacy 127-stdout-closed",
		"ok    legacy 106a-list-changed-refresh", "skip  legacy 002-startup-gate-250ms", "needs virtual-clock (uses advance then running)", "4 passed, 0 failed, 1 skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = harness(t, "run", "-era", "legacy", "-run", "^002-", "-impl", roleImpl(t, "realclock"))
	if code != 1 {
		t.Fatalf("a run in which nothing ran: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if want := "FAIL: no scenario ran (1 skipped, 0 not applicable): every selected scenario was skipped for a capability the driver does not announce, or does not apply to the era (1 needs virtual-clock (uses advance then running)); a run that checks nothing proves nothing"; !strings.Contains(out, want) {
		t.Errorf("stdout lacks %q:\n%s", want, out)
	}
}

func TestRunWrongProtocolVersion(t *testing.T) {
	t.Setenv(roleEnv, "fake-v0")
	code, out, errs := harness(t, "run", "-impl", exe(t))
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "protocol version mismatch") || !strings.Contains(errs, `"mcplife-driver/0"`) || strings.Count(errs, "\n") != 1 {
		t.Errorf("stderr should be one line naming both versions:\n%s", errs)
	}
	if out != "" {
		t.Errorf("stdout: %s", out)
	}
}

func TestRunBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"run", "-run", "^no-such-scenario$"}, "no scenario matches"},
		{[]string{"run", "-run", "("}, "-run: error parsing regexp"},
		{[]string{"run", "001"}, "unexpected argument"},
		{[]string{"run", "-impl", "'unterminated"}, "-impl: unterminated quote"},
		{[]string{"run", "-impl", "/nonexistent/driver"}, "cannot use driver"},
		{[]string{"run", "-fixture", "/nonexistent/mcp-fixture"}, "-fixture: stat /nonexistent/mcp-fixture"},
		{[]string{"run", "-fixture", "."}, "is not an executable file"},
		{[]string{"run", "-dir", "/nonexistent/dir"}, "harness run: -dir: scenario directory /nonexistent/dir: no such file or directory"},
		{[]string{"conformance", "-fixture", "/nonexistent/mcp-fixture"}, "-fixture: stat /nonexistent/mcp-fixture"},
		{[]string{"list", "-x"}, "flag provided but not defined: -x"},
		{[]string{"list", "-run", "^zzz"}, "no scenario matches"},
	} {
		code, _, errs := harness(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("harness %q: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, errs, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	code, out, errs := harness(t, "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	list, err := scenarios.List()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(list) {
		t.Fatalf("%d lines for %d scenarios:\n%s", len(lines), len(list), out)
	}
	for i, sc := range list {
		f := strings.Fields(lines[i])
		if len(f) < 3 || f[0] != sc.Number || f[1] != sc.Name || !strings.Contains(lines[i], sc.Description) {
			t.Errorf("line %q, want number, name and description of %s", lines[i], sc.Name)
		}
	}
	code, out, _ = harness(t, "list", "-v", "-run", "^073")
	if code != 0 || !strings.Contains(out, "guards: seed 001 scenario 73") {
		t.Errorf("list -v: exit %d\n%s", code, out)
	}
}

// exitCode maps a serve error to a process exit code.
func exitCode(err error) int {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestStressChildArgs(t *testing.T) {
	in := []string{"-no-color", "-stress", "5", "-stress-json=x.json", "-impl", "harness driver", "-json", "r.json", "-stress-all", "-junit=j.xml", "-baseline", "b.txt"}
	got := strings.Join(childArgs(in), " ")
	if want := "-no-color -impl harness driver -baseline b.txt"; got != want {
		t.Fatalf("childArgs = %q, want %q", got, want)
	}
}

// A real-clock scenario run is time-scaled as the conformance suite's
// real-time mode is, by default by the same factor.
func TestTimeScaleMatchesConformance(t *testing.T) {
	if scenarios.DefaultTimeScale != conformance.DefaultTimeScale {
		t.Errorf("scenarios.DefaultTimeScale %v, conformance.DefaultTimeScale %v", scenarios.DefaultTimeScale, conformance.DefaultTimeScale)
	}
	code, _, errs := harness(t, "run", "-time-scale", "0", "-run", "^001-")
	if code != 2 || !strings.Contains(errs, "-time-scale 0: want a factor above 0") {
		t.Errorf("-time-scale 0: exit %d, stderr %q", code, errs)
	}
}
