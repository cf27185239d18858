package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/proctest"
)

// roleEnv makes the test binary play another role: "driver" (the
// reference driver on stdin/stdout), doNothingRole or version1Role. The servers the suite
// configures are the fixture built on its own (buildFixture).
const roleEnv = "MCPLIFE_CONFORMANCE_ROLE"

var (
	flagImpl         = flag.String("impl", "", "command line of the driver under test (default: the reference driver, in-process)")
	flagClock        = flag.String("clock", ClockAuto, "clock mode: auto, virtual or real")
	flagTimeScale    = flag.Float64("time-scale", DefaultTimeScale, "real-time mode: factor applied to the durations the suite configures")
	flagBaseline     = flag.String("baseline", "", "file of expected failures (requirement id and reason per line)")
	flagProfiles     = flag.String("profile", "", "comma-separated profiles to run (default: all)")
	flagReqs         = flag.String("req", "", "comma-separated requirement ids to run (default: all)")
	flagJUnit        = flag.String("junit", "", "write a JUnit XML report to this file")
	flagJSON         = flag.String("json", "", "write a JSON report to this file")
	flagAwaitTimeout = flag.Duration("await-timeout", DefaultAwaitTimeout, "real-time bound of each wait")
	flagShutdown     = flag.Duration("shutdown-timeout", DefaultShutdownTimeout, "real-time bound of a driver's shutdown at the end of each spec")
	flagAhead        = flag.Int("drivers-ahead", 2, "with -impl: how many driver processes to keep started ahead of the specs that will use them")
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case doNothingRole:
		if err := serveDoNothing(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "do-nothing driver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case version1Role:
		if err := serveVersion1(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "version-1 driver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "driver":
		if err := driver.Serve(context.Background(), os.Stdin, os.Stdout, claimsFromEnv()); err != nil {
			fmt.Fprintln(os.Stderr, "driver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	proctest.Main(m, ginkgoLeakOptions()...)
}

// claimsEnv, for the driver role, restricts the profiles the reference
// driver claims (comma-separated) and its capabilities to what they
// require: a stand-in for an implementation that does less.
const claimsEnv = "MCPLIFE_CONFORMANCE_CLAIMS"

func claimsFromEnv() driver.ServeOptions {
	v, ok := os.LookupEnv(claimsEnv)
	if !ok {
		return driver.ServeOptions{}
	}
	opts := driver.ServeOptions{Profiles: []driver.Profile{}, Capabilities: []driver.Capability{}}
	for _, name := range splitList(v) {
		for _, p := range driver.Profiles() {
			if string(p.Name) != name {
				continue
			}
			opts.Profiles = append(opts.Profiles, p.Name)
			for _, c := range p.Requires {
				if !slices.Contains(opts.Capabilities, c) {
					opts.Capabilities = append(opts.Capabilities, c)
				}
			}
		}
	}
	return opts
}

// ginkgoLeakOptions ignores the goroutines ginkgo keeps for its whole
// process (its interrupt handler and signal watchers).
func ginkgoLeakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"),
		goleak.IgnoreAnyFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts"),
		goleak.IgnoreAnyFunction("os/signal.signal_recv"),
		goleak.IgnoreAnyFunction("os/signal.loop"),
	}
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// fastEnv, when set, makes TestConformance stop at the first failing
// requirement and bound each wait by fastAwaitTimeout (unless
// -await-timeout is given): .ci/mutation sets it, where a mutant only has
// to be caught, not diagnosed, and a run that waits out the default bound
// on every broken requirement would exceed gremlins' timeout.
const fastEnv = "MCPLIFE_CONFORMANCE_FAST"

// fastAwaitTimeout is the wait bound under fastEnv. A wait that outlasts
// it fails the run, and in a mutation run that counts the mutant as killed,
// so it must hold for the reference on a loaded machine: 10 s did not, for
// CORE-HOSTILE-008's 10,000-tool server in a coverage build beside a
// 500-server benchmark (load average 11-16). With fail-fast, a mutant that
// hangs a requirement costs one such wait.
const fastAwaitTimeout = 30 * time.Second

// TestConformance runs the suite: against the reference runtime in-process
// by default, or against -impl.
func TestConformance(t *testing.T) {
	// Beside TestTeeth, whose runs are processes of their own: the two
	// take most of this package's time, much of it waiting on servers.
	t.Parallel()
	cfg := Config{
		Fixture:         Fixture{Command: buildFixture(t)},
		Clock:           *flagClock,
		TimeScale:       *flagTimeScale,
		AwaitTimeout:    *flagAwaitTimeout,
		ShutdownTimeout: *flagShutdown,
		JUnitReport:     *flagJUnit,
		JSONReport:      *flagJSON,
		IDs:             splitList(*flagReqs),
		TempDir:         t.TempDir(),
	}
	if os.Getenv(fastEnv) != "" {
		cfg.FailFast = true
		if !flagSet("await-timeout") {
			cfg.AwaitTimeout = fastAwaitTimeout
		}
	}
	for _, p := range splitList(*flagProfiles) {
		cfg.Profiles = append(cfg.Profiles, driver.Profile(p))
	}
	if *flagImpl != "" {
		argv, err := SplitCommand(*flagImpl)
		if err != nil {
			t.Fatalf("-impl: %v", err)
		}
		cfg.Target = Target{Command: argv, Ahead: *flagAhead}
	}
	if *flagBaseline != "" {
		b, err := ReadBaseline(*flagBaseline)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Baseline = b
	}
	start := time.Now()
	res, err := Run(&fakeT{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("conformance run took %v", time.Since(start).Round(time.Millisecond))
	if !res.OK {
		t.Errorf("conformance failed: %d passed, %d failed, %d skipped", res.Passed, res.Failed, res.Skipped)
	}
}
