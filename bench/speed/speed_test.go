package speed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/fixturebuild"
	"github.com/mcplife/mcplife/internal/proctest"
)

// driverRoleEnv makes the test binary the reference driver (driver.Serve
// on stdin and stdout): a client to measure.
const driverRoleEnv = "MCPLIFE_SPEED_TEST_DRIVER"

func TestMain(m *testing.M) {
	if os.Getenv(driverRoleEnv) != "" {
		if err := driver.Serve(context.Background(), os.Stdin, os.Stdout, driver.ServeOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, "driver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// proctest.Main checks for leaked goroutines (goleak) and for
	// processes left behind: drivers and fixture servers.
	proctest.Main(m)
}

// TestRun measures the reference driver and a driver that cannot start,
// interleaved: the reference completes every run with plausible figures,
// the broken one completes none and says why, and neither stops the other.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts drivers and fixture servers")
	}
	fixture, err := fixturebuild.Build(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	cfg := Config{
		Impls: []Impl{
			{Name: "reference", Command: []string{"env", driverRoleEnv + "=1", exe}},
			{Name: "missing", Command: []string{"/nonexistent/driver"}},
		},
		Fixture:  []string{fixture},
		Runs:     2,
		Servers:  3,
		Calls:    5,
		Progress: &progress,
	}
	rep, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want 2", len(rep.Results))
	}
	ref, missing := rep.Results[0], rep.Results[1]
	if ref.Runs != 2 || len(ref.Errors) != 0 {
		t.Errorf("reference: %d runs, errors %v; want 2 runs and no error\n%s", ref.Runs, ref.Errors, progress.String())
	}
	if len(ref.Eras) != 1 || ref.Eras[0] != driver.EraModern {
		t.Errorf("reference: eras %v, want [modern] (the fixture speaks both; go-sdk prefers the newest)", ref.Eras)
	}
	if !strings.HasPrefix(ref.Implementation, "mcplife ") {
		t.Errorf("reference: implementation %q, want the name hello gave", ref.Implementation)
	}
	for what, s := range map[string]Stat{"connect 1": ref.ConnectOneMs, "connect 3": ref.ConnectManyMs, "call": ref.CallUs} {
		if !(s.Min > 0 && s.Min <= s.Median && s.Median <= s.Max) {
			t.Errorf("reference %s: %+v, want 0 < min <= median <= max", what, s)
		}
	}
	if missing.Runs != 0 || len(missing.Errors) != 2 || !strings.Contains(missing.Errors[0], "/nonexistent/driver") {
		t.Errorf("missing: %d runs, errors %v; want 0 runs and an error per run naming the command", missing.Runs, missing.Errors)
	}
	var table bytes.Buffer
	WriteTable(&table, rep)
	for _, want := range []string{"2 runs, interleaved", "reference", "missing                no run completed"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
}

// TestValidate refuses configurations that cannot be measured.
func TestValidate(t *testing.T) {
	ok := Config{Impls: []Impl{{Name: "a", Command: []string{"a"}}}, Fixture: []string{"fx"}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	for name, edit := range map[string]func(*Config){
		"no client":    func(c *Config) { c.Impls = nil },
		"no fixture":   func(c *Config) { c.Fixture = nil },
		"one server":   func(c *Config) { c.Servers = 1 },
		"unnamed":      func(c *Config) { c.Impls = []Impl{{Command: []string{"a"}}} },
		"no command":   func(c *Config) { c.Impls = []Impl{{Name: "a"}} },
		"named twice":  func(c *Config) { c.Impls = append(c.Impls, c.Impls[0]) },
		"unknown era":  func(c *Config) { c.Era = "future" },
		"negative run": func(c *Config) { c.Runs = -1 },
	} {
		c := ok
		c.Impls = append([]Impl(nil), ok.Impls...)
		edit(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestStat: the median of an even count is the lower middle, and the
// spread is the extremes.
func TestStat(t *testing.T) {
	if got := stat([]float64{4, 1, 3, 2}); got != (Stat{Median: 2, Min: 1, Max: 4}) {
		t.Errorf("stat = %+v", got)
	}
	if got := median([]time.Duration{3, 1, 2}); got != 2 {
		t.Errorf("median = %v", got)
	}
}

// TestWriteMarkdownSanitizes: a client name from the command line cannot
// break the table or smuggle markup or terminal controls into it.
func TestWriteMarkdownSanitizes(t *testing.T) {
	rep := Report{Date: "2026-11-27", Config: Config{Runs: 1, Servers: 50, Calls: 100, Era: DefaultEra},
		Results: []Result{{Name: "a|b<script>\x1b[31m", Runs: 1}}}
	var b bytes.Buffer
	WriteMarkdown(&b, rep)
	out := b.String()
	for _, bad := range []string{"a|b", "<script>", "\x1b"} {
		if strings.Contains(out, bad) {
			t.Errorf("the table holds %q:\n%s", bad, out)
		}
	}
}
