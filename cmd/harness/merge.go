package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
)

const mergeUsage = `usage: harness merge-reports -o OUT.json REPORT.json...

Merges the -json reports of sharded runs (harness run -shard I/N, or
harness conformance -shard I/N) into one report. Scenario reports: the
scenarios are joined and sorted by name, the counts and virtual time
summed, and the wall time is the longest shard's. Conformance reports
(ginkgo's JSON, a list of suite reports) are concatenated. All inputs must
be of one kind. Exit status: 0 when merged and nothing failed, 1 when a
merged report has failures, 2 for bad input.

flags:
`

// runMerge implements `harness merge-reports`.
func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("merge-reports", mergeUsage, stdout, stderr)
	out := fs.String("o", "", "write the merged report to `FILE` (required)")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if *out == "" || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "harness merge-reports: want -o OUT.json and at least one report")
		return 2
	}
	var scenarioReports []jsonReport
	var suites []json.RawMessage
	for _, file := range fs.Args() {
		b, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(stderr, "harness merge-reports: %v\n", err)
			return 2
		}
		switch t := bytes.TrimSpace(b); {
		case len(t) > 0 && t[0] == '[':
			var list []json.RawMessage
			if err := json.Unmarshal(t, &list); err != nil {
				fmt.Fprintf(stderr, "harness merge-reports: %s: not a conformance (ginkgo) report: %v\n", file, err)
				return 2
			}
			suites = append(suites, list...)
		default:
			var r jsonReport
			if err := json.Unmarshal(t, &r); err != nil {
				fmt.Fprintf(stderr, "harness merge-reports: %s: not a harness run report: %v\n", file, err)
				return 2
			}
			scenarioReports = append(scenarioReports, r)
		}
	}
	if len(suites) > 0 && len(scenarioReports) > 0 {
		fmt.Fprintln(stderr, "harness merge-reports: the inputs mix scenario and conformance reports")
		return 2
	}
	var data any
	failed := 0
	if len(suites) > 0 {
		data = suites
		for _, s := range suites {
			var v struct {
				SuiteSucceeded bool
			}
			if json.Unmarshal(s, &v) == nil && !v.SuiteSucceeded {
				failed++
			}
		}
		fmt.Fprintf(stdout, "merged %d conformance suite reports, %d not succeeded\n", len(suites), failed)
	} else {
		m := mergeScenarioReports(scenarioReports)
		data = m
		failed = m.Failed
		fmt.Fprintf(stdout, "merged %d reports: %d passed, %d failed, %d skipped, %d not applicable\n", len(scenarioReports), m.Passed, m.Failed, m.Skipped, m.NotApplicable)
	}
	b, err := json.MarshalIndent(data, "", "  ")
	if err == nil {
		err = writeFileDirs(*out, append(b, '\n'))
	}
	if err != nil {
		fmt.Fprintf(stderr, "harness merge-reports: %v\n", err)
		return 1
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// mergeScenarioReports joins shard reports of harness run.
func mergeScenarioReports(reports []jsonReport) jsonReport {
	var m jsonReport
	m.Scenarios = []jsonScenario{}
	for _, r := range reports {
		if m.Protocol == "" {
			m.Protocol, m.Implementation, m.Capabilities = r.Protocol, r.Implementation, r.Capabilities
		}
		m.Passed += r.Passed
		m.Failed += r.Failed
		m.Skipped += r.Skipped
		m.NotApplicable += r.NotApplicable
		for _, e := range r.Eras {
			if !slices.Contains(m.Eras, e) {
				m.Eras = append(m.Eras, e)
			}
		}
		m.WallSeconds = max(m.WallSeconds, r.WallSeconds)
		m.VirtualSeconds += r.VirtualSeconds
		m.Scenarios = append(m.Scenarios, r.Scenarios...)
	}
	sort.SliceStable(m.Scenarios, func(i, j int) bool {
		a, b := m.Scenarios[i], m.Scenarios[j]
		if a.Era != b.Era {
			return slices.Index(m.Eras, a.Era) < slices.Index(m.Eras, b.Era)
		}
		return a.Name < b.Name
	})
	return m
}
