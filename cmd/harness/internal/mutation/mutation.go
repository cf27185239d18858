// Package mutation reads the results of mutation runs (gremlins JSON reports
// written by .ci/mutation) and computes the mutation scores: per package,
// what share of the covered mutants each part of the test suite kills, and
// what the whole suite kills (the union over its parts, by mutant).
package mutation

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Status is a mutant's outcome in one run.
type Status string

// The outcomes gremlins reports.
const (
	Killed     Status = "KILLED"
	Lived      Status = "LIVED"
	NotCovered Status = "NOT COVERED"
	TimedOut   Status = "TIMED OUT"
	NotViable  Status = "NOT VIABLE"
	Skipped    Status = "SKIPPED"
)

// caught reports whether the tests detected the mutant: a test failed, or
// the mutant made them hang past the timeout.
func (s Status) caught() bool { return s == Killed || s == TimedOut }

// Mutant identifies one mutation: file, position and operator.
type Mutant struct {
	Package string `json:"package"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Type    string `json:"type"`
}

func (m Mutant) String() string {
	return fmt.Sprintf("%s/%s:%d:%d %s", m.Package, m.File, m.Line, m.Column, m.Type)
}

// Run is one mode's results for one package.
type Run struct {
	Mode    string
	Package string
	// Files are the package's files the run mutated, when .ci/mutation ran
	// over some files only (MUTATION_FILES: a result named
	// MODE-PKG-only-a+b.json); nil when it ran over the whole package.
	Files []string
	// Written orders runs of the same mode and package: a later run
	// replaces the earlier results of the files it covers.
	Written time.Time
	Status  map[Mutant]Status
}

type gremlinsReport struct {
	Files []struct {
		FileName  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

// ReadDir reads every MODE-PKG.json and MODE-PKG-only-FILES.json of dir
// (PKG with "/" written as "_", FILES the mutated files' names without
// ".go", joined by "+").
func ReadDir(dir string) ([]Run, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var runs []Run
	for _, p := range paths {
		base := strings.TrimSuffix(filepath.Base(p), ".json")
		mode, pkg, ok := strings.Cut(base, "-")
		if !ok || !slices.Contains(Modes, mode) {
			continue // another file kept beside the results
		}
		pkg, only, subset := strings.Cut(pkg, "-only-")
		r, err := readRun(p, mode, strings.ReplaceAll(pkg, "_", "/"))
		if err != nil {
			return nil, err
		}
		if subset {
			for _, f := range strings.Split(only, "+") {
				r.Files = append(r.Files, f+".go")
			}
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no mutation results (MODE-PKG.json); run .ci/mutation first", dir)
	}
	return runs, nil
}

func readRun(path, mode, pkg string) (Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Run{}, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return Run{}, err
	}
	var rep gremlinsReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return Run{}, fmt.Errorf("%s: %w", path, err)
	}
	r := Run{Mode: mode, Package: pkg, Written: info.ModTime(), Status: map[Mutant]Status{}}
	for _, f := range rep.Files {
		for _, m := range f.Mutations {
			r.Status[Mutant{Package: pkg, File: filepath.Base(f.FileName), Line: m.Line, Column: m.Column, Type: m.Type}] = Status(m.Status)
		}
	}
	return r, nil
}

// Score is what one part of the suite (or the whole) does to a package's
// mutants.
type Score struct {
	Killed  int `json:"killed"`
	Lived   int `json:"lived"`
	Covered int `json:"covered"` // killed + lived
}

// Percent is the share of covered mutants killed.
func (s Score) Percent() float64 {
	if s.Covered == 0 {
		return 0
	}
	return 100 * float64(s.Killed) / float64(s.Covered)
}

// Row is one package's scores.
type Row struct {
	Package string           `json:"package"`
	Mutants int              `json:"mutants"`
	Modes   map[string]Score `json:"modes"`
	// Whole is the union over the modes: a mutant any mode killed is
	// killed; one that lived in some mode and was killed by none lived.
	Whole Score `json:"whole"`
	// Survivors are the mutants no mode killed though some covered them.
	Survivors []Mutant `json:"survivors"`
	// ConformanceSurvivors are the mutants the conformance mode covered
	// and did not kill.
	ConformanceSurvivors []Mutant `json:"conformanceSurvivors,omitempty"`
	// Partial names, for each mode that ran over some of the package's
	// files only, the files it mutated: its score is of those files.
	Partial map[string][]string `json:"partial,omitempty"`
}

// Table computes the rows, one per package, sorted by package. Runs of
// one mode over parts of a package (MUTATION_FILES) count together as that
// mode's run; the row's Partial says which files they covered.
func Table(runs []Run) []Row {
	byPkg := map[string][]Run{}
	for _, r := range merge(runs) {
		byPkg[r.Package] = append(byPkg[r.Package], r)
	}
	var rows []Row
	for _, pkg := range slices.Sorted(maps.Keys(byPkg)) {
		row := Row{Package: pkg, Modes: map[string]Score{}}
		all := map[Mutant]bool{}
		killedBy := map[Mutant]bool{}
		livedIn := map[Mutant]bool{}
		for _, r := range byPkg[pkg] {
			var s Score
			for m, st := range r.Status {
				all[m] = true
				switch {
				case st.caught():
					s.Killed++
					killedBy[m] = true
				case st == Lived:
					s.Lived++
					livedIn[m] = true
					if r.Mode == "conformance" {
						row.ConformanceSurvivors = append(row.ConformanceSurvivors, m)
					}
				}
			}
			s.Covered = s.Killed + s.Lived
			row.Modes[r.Mode] = s
			if r.Files != nil {
				if row.Partial == nil {
					row.Partial = map[string][]string{}
				}
				row.Partial[r.Mode] = r.Files
			}
		}
		row.Mutants = len(all)
		for m := range all {
			switch {
			case killedBy[m]:
				row.Whole.Killed++
			case livedIn[m]:
				row.Whole.Lived++
				row.Survivors = append(row.Survivors, m)
			}
		}
		row.Whole.Covered = row.Whole.Killed + row.Whole.Lived
		sortMutants(row.Survivors)
		sortMutants(row.ConformanceSurvivors)
		rows = append(rows, row)
	}
	return rows
}

// merge folds the runs of one mode over one package into one run, in the
// order they were written: a later run replaces the earlier outcomes of
// every file it covers. The merged run's Files is the union of the parts'
// files, or nil when any part covered the whole package.
func merge(runs []Run) []Run {
	type key struct{ mode, pkg string }
	parts := map[key][]Run{}
	for _, r := range runs {
		k := key{r.Mode, r.Package}
		parts[k] = append(parts[k], r)
	}
	var out []Run
	for k, rs := range parts {
		slices.SortStableFunc(rs, func(a, b Run) int { return a.Written.Compare(b.Written) })
		m := Run{Mode: k.mode, Package: k.pkg, Status: map[Mutant]Status{}}
		whole := false
		files := map[string]bool{}
		for _, r := range rs {
			// A later run replaces what earlier ones said about the files
			// it covers (lines may have moved between the runs).
			for mu := range m.Status {
				if r.Files == nil || slices.Contains(r.Files, mu.File) {
					delete(m.Status, mu)
				}
			}
			maps.Copy(m.Status, r.Status)
			m.Written = r.Written
			if r.Files == nil {
				whole = true
			}
			for _, f := range r.Files {
				files[f] = true
			}
		}
		if !whole {
			m.Files = slices.Sorted(maps.Keys(files))
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Run) int {
		return strings.Compare(a.Package+"\x00"+a.Mode, b.Package+"\x00"+b.Mode)
	})
	return out
}

// DropCompletePartials clears the partial mark of every mode whose runs
// together mutated every non-test Go file of the package, as found under
// root (the module's directory; a package that is not there keeps its
// marks).
func DropCompletePartials(rows []Row, root string) {
	for i := range rows {
		r := &rows[i]
		if len(r.Partial) == 0 {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(r.Package)))
		if err != nil {
			continue
		}
		var files []string
		for _, e := range entries {
			if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				files = append(files, n)
			}
		}
		for mode, covered := range r.Partial {
			if len(files) > 0 && !slices.ContainsFunc(files, func(f string) bool { return !slices.Contains(covered, f) }) {
				delete(r.Partial, mode)
			}
		}
		if len(r.Partial) == 0 {
			r.Partial = nil
		}
	}
}

func sortMutants(ms []Mutant) {
	slices.SortFunc(ms, func(a, b Mutant) int { return strings.Compare(a.String(), b.String()) })
}

// Modes is the documentation order of the modes.
var Modes = []string{"unit", "conformance", "scenarios"}

// Write prints the table; with survivors, every surviving mutant too.
func Write(w io.Writer, rows []Row, survivors bool) {
	fmt.Fprintf(w, "%-20s %7s", "PACKAGE", "MUTANTS")
	for _, m := range Modes {
		fmt.Fprintf(w, " %18s", m)
	}
	fmt.Fprintf(w, " %18s\n", "whole suite")
	var total Row
	total.Modes = map[string]Score{}
	for _, r := range rows {
		fmt.Fprintf(w, "%-20s %7d", r.Package, r.Mutants)
		for _, m := range Modes {
			c := cell(r.Modes[m], r.Modes[m] != Score{} || hasMode(r, m))
			if r.Partial[m] != nil {
				c += "*"
			}
			fmt.Fprintf(w, " %18s", c)
			t := total.Modes[m]
			t.Killed += r.Modes[m].Killed
			t.Lived += r.Modes[m].Lived
			t.Covered += r.Modes[m].Covered
			total.Modes[m] = t
		}
		fmt.Fprintf(w, " %18s\n", cell(r.Whole, true))
		total.Mutants += r.Mutants
		total.Whole.Killed += r.Whole.Killed
		total.Whole.Lived += r.Whole.Lived
		total.Whole.Covered += r.Whole.Covered
	}
	fmt.Fprintf(w, "%-20s %7d", "total", total.Mutants)
	for _, m := range Modes {
		fmt.Fprintf(w, " %18s", cell(total.Modes[m], true))
	}
	fmt.Fprintf(w, " %18s\n", cell(total.Whole, true))
	fmt.Fprintln(w, "cells: killed/covered (percent); covered = killed + lived; a timed-out mutant counts as killed")
	for _, r := range rows {
		for _, m := range Modes {
			if files := r.Partial[m]; files != nil {
				fmt.Fprintf(w, "* %s %s: only %s\n", r.Package, m, strings.Join(files, " "))
			}
		}
	}
	if survivors {
		for _, r := range rows {
			for _, m := range r.Survivors {
				fmt.Fprintf(w, "survivor %s\n", m)
			}
			for _, m := range r.ConformanceSurvivors {
				fmt.Fprintf(w, "conformance survivor %s\n", m)
			}
		}
	}
}

func hasMode(r Row, mode string) bool {
	_, ok := r.Modes[mode]
	return ok
}

func cell(s Score, present bool) string {
	if !present {
		return "-"
	}
	return fmt.Sprintf("%d/%d (%.1f%%)", s.Killed, s.Covered, s.Percent())
}
