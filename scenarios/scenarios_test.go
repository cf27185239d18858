package scenarios_test

import (
	"flag"
	"os"
	"path/filepath"
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

// TestScenarios runs every scenario against the reference runtime in this
// process.
func TestScenarios(t *testing.T) {
	var cov coverage
	start := time.Now()
	t.Cleanup(func() { cov.report(t, start) })
	opts := scenarios.Options{Update: *update, OnScript: cov.add}
	hello, err := scenarios.Probe(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, scenarios.Params(".", opts, hello))
}

// TestScenariosExternal runs the scenarios through the driver protocol
// against a separate driver process (mcplife-driver, which is `harness
// driver`): the path every other implementation takes. Set
// MCPLIFE_EXTERNAL_SCENARIOS to a regular expression to choose which
// (default: all).
func TestScenariosExternal(t *testing.T) {
	var cov coverage
	start := time.Now()
	t.Cleanup(func() { cov.report(t, start) })
	opts := scenarios.Options{Driver: []string{"mcplife-driver"}, OnScript: cov.add}
	hello, err := scenarios.Probe(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	p := scenarios.Params(".", opts, hello)
	if pat := os.Getenv("MCPLIFE_EXTERNAL_SCENARIOS"); pat != "" {
		re, err := regexp.Compile(pat)
		if err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob("*.txtar")
		if err != nil {
			t.Fatal(err)
		}
		p.Dir = ""
		for _, f := range files {
			if re.MatchString(strings.TrimSuffix(f, ".txtar")) {
				p.Files = append(p.Files, f)
			}
		}
	}
	testscript.Run(t, p)
}
