package stress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// childEnv makes the test binary play one stressed run: it appends a line
// to the counter file, and the check "flaky" fails on the second run.
const childEnv = "STRESS_TEST_COUNTER"

// byNameEnv makes the child take its run number from its report's name.
const byNameEnv = "STRESS_TEST_BY_NAME"

func TestMain(m *testing.M) {
	if counter := os.Getenv(childEnv); counter != "" {
		os.Exit(child(counter, os.Args[len(os.Args)-1]))
	}
	goleak.VerifyTestMain(m)
}

func child(counter, report string) int {
	f, err := os.OpenFile(counter, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 3
	}
	fmt.Fprintln(f, os.Getenv("GOMAXPROCS"))
	f.Close()
	b, _ := os.ReadFile(counter)
	run := strings.Count(string(b), "\n")
	if os.Getenv(byNameEnv) != "" {
		// Runs beside each other: the run number is the report's name.
		fmt.Sscanf(filepath.Base(report), "run-%d.json", &run)
	}
	verdicts := []Verdict{{ID: "steady"}, {ID: "flaky", Failed: run == 2, Message: "run " + strconv.Itoa(run) + " lost a race\nsecond line"}, {ID: "skipped", Skipped: true}}
	out, _ := json.Marshal(verdicts)
	if err := os.WriteFile(report, out, 0o644); err != nil {
		return 3
	}
	if run == 2 {
		return 1
	}
	return 0
}

func parse(path string) ([]Verdict, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v []Verdict
	return v, json.Unmarshal(b, &v)
}

func TestRunTalliesFlakes(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "counter")
	t.Setenv(childEnv, counter)
	var progress bytes.Buffer
	rep, err := Run(context.Background(), Config{
		Command: []string{os.Args[0], "-test.run=^$"}, JSONFlag: "-report", Parse: parse,
		Runs: 3, GOMAXPROCS: 1, Burners: 1, Progress: &progress, TempDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Fatalf("a check failed once, but the report is OK: %+v", rep)
	}
	flaky := rep.Flaky()
	if len(flaky) != 1 || flaky[0].ID != "flaky" || flaky[0].Runs != 3 || flaky[0].Failures != 1 || flaky[0].FirstRun != 2 ||
		!strings.HasPrefix(flaky[0].FirstFailure, "run 2 lost a race") {
		t.Errorf("flake rows %+v", flaky)
	}
	for _, row := range rep.Rows {
		if row.ID == "skipped" && (row.Skipped != 3 || row.Failures != 0) {
			t.Errorf("skipped row %+v", row)
		}
	}
	if len(rep.Runs) != 3 || rep.Runs[1].Exit != 1 || rep.Runs[1].Error != "" {
		t.Errorf("runs %+v", rep.Runs)
	}
	b, _ := os.ReadFile(counter)
	if got := strings.Fields(string(b)); len(got) != 3 || got[0] != "1" {
		t.Errorf("the runs' GOMAXPROCS: %q, want 1 three times", got)
	}
	if !strings.Contains(progress.String(), "stress run 2/3: 1 passed, 1 failed (flaky)") {
		t.Errorf("progress:\n%s", progress.String())
	}
	var table bytes.Buffer
	rep.WriteTable(&table, false)
	row, details, _ := strings.Cut(table.String(), "first failure of flaky (run 2):\n")
	if !strings.Contains(row, "run 2: run 2 lost a race") || strings.Contains(row, "second line") ||
		!strings.Contains(details, "    run 2 lost a race") || !strings.Contains(details, "    second line") ||
		!strings.Contains(table.String(), "3 runs of 2 checks, 1 skipped in every run") || !strings.Contains(table.String(), "1 failures in 1 checks") {
		t.Errorf("table:\n%s", table.String())
	}
}

// TestRunParallel makes 4 runs, 2 at a time: every run is made once and
// tallied in run order, whichever finished first.
func TestRunParallel(t *testing.T) {
	t.Setenv(childEnv, filepath.Join(t.TempDir(), "counter"))
	t.Setenv(byNameEnv, "1")
	rep, err := Run(context.Background(), Config{
		Command: []string{os.Args[0], "-test.run=^$"}, JSONFlag: "-report", Parse: parse,
		Runs: 4, GOMAXPROCS: 1, Burners: -1, Parallel: 2, TempDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Parallel != 2 || len(rep.Runs) != 4 {
		t.Fatalf("report: %d at a time, %d runs; want 2 and 4", rep.Parallel, len(rep.Runs))
	}
	for i, r := range rep.Runs {
		if r.Run != i+1 || r.Exit != map[bool]int{true: 1, false: 0}[i == 1] {
			t.Errorf("run %d: %+v", i+1, r)
		}
	}
	flaky := rep.Flaky()
	if len(flaky) != 1 || flaky[0].ID != "flaky" || flaky[0].Runs != 4 || flaky[0].Failures != 1 || flaky[0].FirstRun != 2 {
		t.Errorf("flake rows %+v", flaky)
	}
}

func TestRunWithoutReport(t *testing.T) {
	rep, err := Run(context.Background(), Config{
		Command: []string{"/bin/sh", "-c", "echo boom >&2; exit 2", "sh"}, JSONFlag: "-json", Parse: parse,
		Runs: 1, Burners: -1, TempDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	broken := rep.BrokenRuns()
	if rep.OK() || len(broken) != 1 || !strings.Contains(broken[0].Output, "boom") {
		t.Fatalf("a run without a report must fail the stress run: %+v", rep)
	}
}

func TestNoRuns(t *testing.T) {
	if _, err := Run(context.Background(), Config{}); err != ErrNoRuns {
		t.Fatalf("err %v, want ErrNoRuns", err)
	}
}

// TestRunEnv: runs get GOMAXPROCS and a GORACE that does not sleep at exit,
// keeping the caller's other GORACE options and an explicit sleep.
func TestRunEnv(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string
	}{
		{[]string{"A=1", "GOMAXPROCS=8"}, []string{"A=1", "GOMAXPROCS=1", "GORACE=atexit_sleep_ms=0"}},
		{[]string{"GORACE=halt_on_error=1"}, []string{"GOMAXPROCS=1", "GORACE=halt_on_error=1 atexit_sleep_ms=0"}},
		{[]string{"GORACE=atexit_sleep_ms=50"}, []string{"GORACE=atexit_sleep_ms=50", "GOMAXPROCS=1"}},
	} {
		if got := runEnv(tc.in, 1); !slices.Equal(got, tc.want) {
			t.Errorf("runEnv(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
