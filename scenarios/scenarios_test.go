package scenarios_test

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mcplife/mcplife/scenarios"
)

var update = flag.Bool("update", false, "rewrite the golden trace sections of the scenario files (or set "+scenarios.UpdateEnv+"=1)")

// coverage sums what the scripts of one test covered.
type coverage struct {
	mu      sync.Mutex
	scripts int
	virtual time.Duration
	checks  int
}

func (c *coverage) add(r scenarios.ScriptResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scripts++
	c.virtual += r.Virtual
	c.checks += r.Checks
}

func (c *coverage) report(t *testing.T, start time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("%d scenarios, %d checks, virtual time covered %.3fs, wall time %.2fs",
		c.scripts, c.checks, c.virtual.Seconds(), time.Since(start).Seconds())
}

// eraFiles returns the scenario files of this directory that apply to
// era and whose name match matches (nil: all), so that a scenario of the
// other era is not run at all (harness run reports it n/a).
func eraFiles(t *testing.T, era string, match *regexp.Regexp) []string {
	t.Helper()
	list, err := scenarios.ListFS(os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, sc := range list {
		if sc.AppliesTo(era) && (match == nil || match.MatchString(sc.Name)) {
			files = append(files, sc.File)
		}
	}
	return files
}

// TestScenarios runs every scenario of the legacy era against the
// reference runtime in this process; TestScenariosExternal runs the modern
// era through a driver process, so that `go test ./scenarios/` proves the
// catalog in both eras for the time of two runs. Set MCPLIFE_SCENARIO_ERAS
// to "legacy,modern" to run both eras in each.
func TestScenarios(t *testing.T) {
	for _, era := range testEras(t, scenarios.EraLegacy) {
		runEra(t, era, func(t *testing.T) {
			var cov coverage
			start := time.Now()
			t.Cleanup(func() { cov.report(t, start) })
			opts := scenarios.Options{Update: *update, OnScript: cov.add, Era: era}
			hello, err := scenarios.Probe(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			p := scenarios.Params(".", opts, hello)
			p.Dir, p.Files = "", eraFiles(t, era, nil)
			testscript.Run(t, p)
		})
	}
}

// runEra runs f for era: as a subtest named after the era when the test
// runs more than one (MCPLIFE_SCENARIO_ERAS), else directly, so that the
// scenarios are TestScenarios/NNN-slug (legacy) and
// TestScenariosExternal/NNN-slug (modern) and -run 'Scenarios.*/NNN'
// selects one in both eras.
func runEra(t *testing.T, era string, f func(t *testing.T)) {
	if strings.Contains(os.Getenv("MCPLIFE_SCENARIO_ERAS"), ",") {
		t.Run(era, f)
		return
	}
	f(t)
}

// testEras returns the eras a test runs: MCPLIFE_SCENARIO_ERAS (a
// comma-separated list), else def.
func testEras(t *testing.T, def string) []string {
	v := os.Getenv("MCPLIFE_SCENARIO_ERAS")
	if v == "" {
		return []string{def}
	}
	var eras []string
	for _, e := range strings.Split(v, ",") {
		if e != scenarios.EraLegacy && e != scenarios.EraModern {
			t.Fatalf("MCPLIFE_SCENARIO_ERAS=%q: %q is not an era (legacy, modern)", v, e)
		}
		eras = append(eras, e)
	}
	return eras
}

// TestScenariosExternal runs the scenarios through the driver protocol
// against a separate driver process (mcplife-driver, which is `harness
// driver`): the path every other implementation takes, in the modern era
// (see TestScenarios). Set MCPLIFE_EXTERNAL_SCENARIOS to a regular
// expression to choose which (default: all).
func TestScenariosExternal(t *testing.T) {
	var match *regexp.Regexp
	if pat := os.Getenv("MCPLIFE_EXTERNAL_SCENARIOS"); pat != "" {
		re, err := regexp.Compile(pat)
		if err != nil {
			t.Fatal(err)
		}
		match = re
	}
	for _, era := range testEras(t, scenarios.EraModern) {
		runEra(t, era, func(t *testing.T) {
			var cov coverage
			start := time.Now()
			t.Cleanup(func() { cov.report(t, start) })
			opts := scenarios.Options{Driver: []string{"mcplife-driver"}, OnScript: cov.add, Era: era}
			hello, err := scenarios.Probe(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			p := scenarios.Params(".", opts, hello)
			p.Dir, p.Files = "", eraFiles(t, era, match)
			testscript.Run(t, p)
		})
	}
}
