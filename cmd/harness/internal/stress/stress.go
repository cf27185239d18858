// Package stress runs one harness command many times under CPU contention
// and tallies, per check, how often it failed: the flake table that shows
// whether a verdict depends on timing.
//
// Each run is a separate process (ginkgo runs its specs once per process)
// started with GOMAXPROCS set low, while burner goroutines of the calling
// process keep the machine's cores busy. A verdict layer that awaits what it
// checks passes every run; one that races the implementation shows up as a
// row with failures.
package stress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplife/mcplife/internal/textsafe"
)

// Verdict is the outcome of one check (a requirement, a scenario) in one run.
type Verdict struct {
	ID      string
	Failed  bool
	Skipped bool
	// Message is the failure message, when Failed.
	Message string
}

// Config configures a stress run.
type Config struct {
	// Command is the argv of one run; Run appends the JSONFlag and a file.
	Command []string
	// JSONFlag is the flag that makes a run write its report ("-json").
	JSONFlag string
	// Parse reads the verdicts from a run's report file.
	Parse func(path string) ([]Verdict, error)
	// Runs is how many runs to make (at least 1).
	Runs int
	// GOMAXPROCS is the runs' GOMAXPROCS (0: 1).
	GOMAXPROCS int
	// Burners is how many goroutines of this process spin while the runs go
	// on (negative: none; 0: one per CPU).
	Burners int
	// Parallel is how many runs go on at once (0: 1); runs beside each
	// other contend for the CPUs as the burners do.
	Parallel int
	// RunTimeout bounds one run in real time (0: 30 minutes).
	RunTimeout time.Duration
	// Progress, when not nil, gets one line per run.
	Progress io.Writer
	// TempDir holds the reports ("": os.TempDir()).
	TempDir string
}

// Row is one check's tally over all runs.
type Row struct {
	ID           string `json:"id"`
	Runs         int    `json:"runs"`
	Failures     int    `json:"failures"`
	Skipped      int    `json:"skipped,omitempty"`
	FirstFailure string `json:"firstFailure,omitempty"`
	FirstRun     int    `json:"firstFailureRun,omitempty"`
}

// RunResult is how one run ended.
type RunResult struct {
	Run      int           `json:"run"`
	Exit     int           `json:"exit"`
	Passed   int           `json:"passed"`
	Failed   int           `json:"failed"`
	Duration time.Duration `json:"durationNs"`
	// Error is set when the run produced no report.
	Error string `json:"error,omitempty"`
	// Output is the tail of a run that failed without a report.
	Output string `json:"output,omitempty"`
}

// Report is the result of a stress run.
type Report struct {
	Command    []string      `json:"command"`
	GOMAXPROCS int           `json:"gomaxprocs"`
	Burners    int           `json:"burners"`
	Parallel   int           `json:"parallel"`
	Runs       []RunResult   `json:"runs"`
	Rows       []Row         `json:"rows"`
	Wall       time.Duration `json:"wallNs"`
}

// Flaky returns the rows with at least one failure.
func (r *Report) Flaky() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Failures > 0 {
			out = append(out, row)
		}
	}
	return out
}

// BrokenRuns returns the runs that produced no report.
func (r *Report) BrokenRuns() []RunResult {
	var out []RunResult
	for _, run := range r.Runs {
		if run.Error != "" {
			out = append(out, run)
		}
	}
	return out
}

// OK reports whether every run produced a report and no check ever failed.
func (r *Report) OK() bool { return len(r.Flaky()) == 0 && len(r.BrokenRuns()) == 0 }

// ErrNoRuns is returned for a Config that asks for no run.
var ErrNoRuns = errors.New("stress: at least one run is needed")

// Run makes the runs, Config.Parallel at a time, and tallies the verdicts.
// It stops early, with the runs made so far, when ctx is done.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Runs < 1 {
		return nil, ErrNoRuns
	}
	if len(cfg.Command) == 0 || cfg.Parse == nil || cfg.JSONFlag == "" {
		return nil, errors.New("stress: Command, JSONFlag and Parse are required")
	}
	procs := cfg.GOMAXPROCS
	if procs <= 0 {
		procs = 1
	}
	burners := cfg.Burners
	if burners == 0 {
		burners = runtime.NumCPU()
	}
	if burners < 0 {
		burners = 0
	}
	parallel := max(cfg.Parallel, 1)
	timeout := cfg.RunTimeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	dir, err := os.MkdirTemp(cfg.TempDir, "mcplife-stress-")
	if err != nil {
		return nil, fmt.Errorf("stress: %w", err)
	}
	defer os.RemoveAll(dir)

	stop := burn(burners)
	defer stop()

	rep := &Report{Command: cfg.Command, GOMAXPROCS: procs, Burners: burners, Parallel: parallel}
	type outcome struct {
		res      RunResult
		verdicts []Verdict
		made     bool
	}
	outcomes := make([]outcome, cfg.Runs)
	start := time.Now()
	var mu sync.Mutex // Progress
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
runs:
	for i := 1; i <= cfg.Runs; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break runs
		}
		wg.Go(func() {
			defer func() { <-sem }()
			res, verdicts := runOnce(ctx, cfg, dir, i, procs, timeout)
			var failing []string
			for _, v := range verdicts {
				switch {
				case v.Failed:
					res.Failed++
					failing = append(failing, v.ID)
				case !v.Skipped:
					res.Passed++
				}
			}
			outcomes[i-1] = outcome{res, verdicts, true}
			if cfg.Progress != nil {
				status := fmt.Sprintf("%d passed, %d failed", res.Passed, res.Failed)
				if len(failing) > 0 {
					status += " (" + strings.Join(failing, ", ") + ")"
				}
				if res.Error != "" {
					status = "no report: " + res.Error
				}
				mu.Lock()
				fmt.Fprintf(cfg.Progress, "stress run %d/%d: %s (exit %d, %.1fs)\n", i, cfg.Runs, status, res.Exit, res.Duration.Seconds())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	rep.Wall = time.Since(start)
	rows := map[string]*Row{}
	for i, o := range outcomes {
		if !o.made {
			continue
		}
		for _, v := range o.verdicts {
			row := rows[v.ID]
			if row == nil {
				row = &Row{ID: v.ID}
				rows[v.ID] = row
			}
			row.Runs++
			switch {
			case v.Failed:
				row.Failures++
				if row.FirstFailure == "" {
					row.FirstFailure, row.FirstRun = v.Message, i+1
				}
			case v.Skipped:
				row.Skipped++
			}
		}
		rep.Runs = append(rep.Runs, o.res)
	}
	for _, row := range rows {
		rep.Rows = append(rep.Rows, *row)
	}
	slices.SortFunc(rep.Rows, func(a, b Row) int {
		if a.Failures != b.Failures {
			return b.Failures - a.Failures
		}
		return strings.Compare(a.ID, b.ID)
	})
	return rep, ctx.Err()
}

// runEnv is the environment of a run: GOMAXPROCS=procs, and GORACE with
// atexit_sleep_ms=0 unless it sets that already, so a race-built run and
// the race-built processes it starts (a driver, the fixture) exit at once
// instead of sleeping a second each at exit.
func runEnv(environ []string, procs int) []string {
	env := append(withoutVar(environ, "GOMAXPROCS"), fmt.Sprintf("GOMAXPROCS=%d", procs))
	gorace := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			gorace = v
		}
	}
	if !strings.Contains(gorace, "atexit_sleep_ms") {
		env = append(withoutVar(env, "GORACE"), "GORACE="+strings.TrimSpace(gorace+" atexit_sleep_ms=0"))
	}
	return env
}

func runOnce(ctx context.Context, cfg Config, dir string, i, procs int, timeout time.Duration) (RunResult, []Verdict) {
	res := RunResult{Run: i}
	report := filepath.Join(dir, fmt.Sprintf("run-%03d.json", i))
	argv := append(slices.Clip(cfg.Command), cfg.JSONFlag, report)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, argv[0], argv[1:]...)
	cmd.Env = runEnv(os.Environ(), procs)
	out := &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	t0 := time.Now()
	err := cmd.Run()
	res.Duration = time.Since(t0)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.Exit = ee.ExitCode()
	case err != nil:
		res.Exit = -1
		res.Error = err.Error()
		res.Output = out.String()
		return res, nil
	}
	verdicts, err := cfg.Parse(report)
	if err != nil {
		res.Error = err.Error()
		res.Output = out.String()
		return res, nil
	}
	if res.Exit != 0 && !slices.ContainsFunc(verdicts, func(v Verdict) bool { return v.Failed }) {
		res.Error = fmt.Sprintf("exit %d with no failing check", res.Exit)
		res.Output = out.String()
	}
	return res, verdicts
}

// burn starts n spinning goroutines and returns the function that stops them.
func burn(n int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			x := 0
			for !done.Load() {
				for j := 0; j < 1<<16; j++ {
					x += j
				}
			}
			_ = x
		})
	}
	return func() {
		done.Store(true)
		wg.Wait()
	}
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = slices.Clone(t.b[len(t.b)-t.max:])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// WriteTable prints the flake table: every check that failed at least once
// (all checks when all is set), then a summary line.
func (r *Report) WriteTable(w io.Writer, all bool) {
	rows := r.Rows
	if !all {
		rows = r.Flaky()
	}
	if len(rows) > 0 {
		fmt.Fprintf(w, "%-32s %5s %8s  %s\n", "CHECK", "RUNS", "FAILURES", "FIRST FAILURE")
		for _, row := range rows {
			msg := "-"
			if row.FirstFailure != "" {
				msg = fmt.Sprintf("run %d: %s", row.FirstRun, textsafe.Line(firstLine(row.FirstFailure, 100)))
			}
			fmt.Fprintf(w, "%-32s %5d %8d  %s\n", row.ID, row.Runs, row.Failures, msg)
		}
	}
	// The table keeps one line per check; what decided each first failure
	// follows in full (its last lines), so a flake seen once in CI can be
	// diagnosed from the log alone.
	for _, row := range rows {
		if row.FirstFailure != "" {
			fmt.Fprintf(w, "first failure of %s (run %d):\n%s\n", row.ID, row.FirstRun, indent(textsafe.Block(row.FirstFailure)))
		}
	}
	for _, run := range r.BrokenRuns() {
		fmt.Fprintf(w, "run %d produced no report: %s\n%s\n", run.Run, run.Error, indent(run.Output))
	}
	failures, ran := 0, 0
	for _, row := range r.Rows {
		failures += row.Failures
		if row.Runs > row.Skipped {
			ran++
		}
	}
	skipped := ""
	if n := len(r.Rows) - ran; n > 0 {
		skipped = fmt.Sprintf(", %d skipped in every run", n)
	}
	fmt.Fprintf(w, "stress: %d runs of %d checks%s (GOMAXPROCS=%d, %d burners, %d at a time, %.1fs): %d failures in %d checks, %d runs without a report\n",
		len(r.Runs), ran, skipped, r.GOMAXPROCS, r.Burners, max(r.Parallel, 1), r.Wall.Seconds(), failures, len(r.Flaky()), len(r.BrokenRuns()))
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
