// Package bench runs the scale workloads of `harness bench` against the
// reference runtime (runtime/host) with real stdio fixture servers: session
// start with many servers, concurrent calls, a restart storm and the tool
// cache's effect on the startup gate. Each workload repeats Config.Runs
// times and reports every metric as the median with its spread; two
// reports can be compared.
package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// Metric is one measured quantity of a workload over its runs.
type Metric struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Runs holds one value per run.
	Runs   []float64 `json:"runs"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	// Goal, when set, is the target the median should meet, e.g. "< 2".
	Goal string `json:"goal,omitempty"`
	// Met says whether the median meets Goal.
	Met *bool `json:"met,omitempty"`
}

// Workload is the result of one workload.
type Workload struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Metrics []Metric `json:"metrics"`
	// Notes holds observations that are not numbers (failures, leftovers).
	Notes []string `json:"notes,omitempty"`
}

// Machine describes where a report was measured.
type Machine struct {
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	// FDLimit is the soft limit of open files (ulimit -n) during the run,
	// after raising it to the hard limit; FDHard is the hard limit.
	FDLimit uint64 `json:"fd_limit"`
	FDHard  uint64 `json:"fd_hard"`
	// Load1 is the one-minute load average when the run started.
	Load1 float64 `json:"load1,omitempty"`
}

// Report is the outcome of a bench run; it is what -json writes.
type Report struct {
	Machine   Machine    `json:"machine"`
	Config    Config     `json:"config"`
	Workloads []Workload `json:"workloads"`
	// OK is false when a workload saw failures, leftover processes or a
	// peak of concurrent connects above the cap.
	OK bool `json:"ok"`
}

// series accumulates the runs of one metric.
type series struct {
	name, unit, goal string
	goalOK           func(float64) bool
	runs             []float64
}

func (s *series) add(v float64) { s.runs = append(s.runs, v) }

func (s *series) metric() Metric {
	m := Metric{Name: s.name, Unit: s.unit, Runs: s.runs, Goal: s.goal}
	if len(s.runs) == 0 {
		return m
	}
	sorted := slices.Clone(s.runs)
	slices.Sort(sorted)
	m.Min, m.Max = sorted[0], sorted[len(sorted)-1]
	n := len(sorted)
	if n%2 == 1 {
		m.Median = sorted[n/2]
	} else {
		m.Median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	if s.goalOK != nil {
		ok := s.goalOK(m.Median)
		m.Met = &ok
	}
	return m
}

// WriteTable prints the report as a table that fits a terminal.
func WriteTable(w io.Writer, r *Report) {
	fmt.Fprintf(w, "machine: %s/%s, %d CPUs (GOMAXPROCS %d), %s, open files limit %d (hard %d), load %.2f\n",
		r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Machine.GOMAXPROCS, r.Machine.GoVersion,
		r.Machine.FDLimit, r.Machine.FDHard, r.Machine.Load1)
	fmt.Fprintf(w, "%-10s %-26s %10s %10s %10s  %-6s %s\n", "workload", "metric", "median", "min", "max", "unit", "goal")
	for _, wl := range r.Workloads {
		for _, m := range wl.Metrics {
			goal := m.Goal
			if m.Met != nil {
				if *m.Met {
					goal += " ok"
				} else {
					goal += " MISSED"
				}
			}
			fmt.Fprintf(w, "%-10s %-26s %10s %10s %10s  %-6s %s\n", wl.Name, m.Name, num(m.Median), num(m.Min), num(m.Max), m.Unit, goal)
		}
		for _, n := range wl.Notes {
			fmt.Fprintf(w, "%-10s note: %s\n", wl.Name, n)
		}
	}
}

// WriteCompare prints, for every metric in both reports, the old and new
// medians and the change.
func WriteCompare(w io.Writer, old, cur *Report) {
	fmt.Fprintf(w, "%-10s %-26s %10s %10s %8s  %s\n", "workload", "metric", "old", "new", "delta", "unit")
	olds := map[string]Metric{}
	for _, wl := range old.Workloads {
		for _, m := range wl.Metrics {
			olds[wl.Name+"/"+m.Name] = m
		}
	}
	for _, wl := range cur.Workloads {
		for _, m := range wl.Metrics {
			o, ok := olds[wl.Name+"/"+m.Name]
			if !ok {
				fmt.Fprintf(w, "%-10s %-26s %10s %10s %8s  %s\n", wl.Name, m.Name, "-", num(m.Median), "new", m.Unit)
				continue
			}
			fmt.Fprintf(w, "%-10s %-26s %10s %10s %8s  %s\n", wl.Name, m.Name, num(o.Median), num(m.Median), delta(o.Median, m.Median), m.Unit)
		}
	}
}

func delta(old, cur float64) string {
	if old == 0 {
		if cur == 0 {
			return "0%"
		}
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", (cur-old)/math.Abs(old)*100)
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// WriteJSON writes r to path.
func WriteJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadJSON reads a report written by WriteJSON.
func ReadJSON(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
