package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/mcplife/mcplife/conformance/driver"
)

// Baseline lists the requirements an implementation is known to fail, each
// with the reason. An expected failure passes the run; an unexpected failure
// fails it; a baselined requirement that passes fails it too (the baseline
// is stale and must shrink).
type Baseline struct {
	// File is where the baseline was read from, for messages.
	File string
	// Reasons maps requirement ids to why they are expected to fail.
	Reasons map[string]string
	// errs are problems found while parsing.
	errs []string
}

// ParseBaseline reads a baseline: one requirement per line, its id, white
// space, and the reason. Blank lines and lines starting with # are ignored.
func ParseBaseline(name string, r io.Reader) (*Baseline, error) {
	b := &Baseline{File: name, Reasons: map[string]string{}}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason := line, ""
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			id, reason = line[:i], strings.TrimSpace(line[i:])
		}
		switch {
		case reason == "":
			return nil, fmt.Errorf("%s:%d: %s: every expected failure needs a reason", name, n, id)
		case b.Reasons[id] != "":
			return nil, fmt.Errorf("%s:%d: %s is listed twice", name, n, id)
		}
		b.Reasons[id] = reason
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return b, nil
}

// ReadBaseline reads a baseline file.
func ReadBaseline(path string) (*Baseline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseBaseline(path, f)
}

// check reports ids that name no requirement.
func (b *Baseline) check() error {
	var unknown []string
	for id := range b.Reasons {
		if _, ok := Lookup(id); !ok {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("baseline %s: unknown requirements %s", b.File, strings.Join(unknown, ", "))
	}
	return nil
}

// Verdict is the outcome of one requirement in a run.
type Verdict string

// The verdicts.
const (
	Passed          Verdict = "passed"
	Failed          Verdict = "failed"
	ExpectedFailure Verdict = "expected-failure" // failed, as the baseline says
	StaleBaseline   Verdict = "stale-baseline"   // passed, but the baseline says it fails
	NotApplicable   Verdict = "not-applicable"   // outside the driver's profiles or capabilities
	NotSelected     Verdict = "not-selected"     // filtered out of this run
)

// Outcome is the verdict on one requirement.
type Outcome struct {
	Requirement Requirement
	Verdict     Verdict
	// Message is the failure, the reason it does not apply, or the
	// baseline's reason.
	Message  string
	Evidence []string
	Duration time.Duration
}

// Result is the verdict of a run.
type Result struct {
	Implementation driver.Implementation
	Target         string
	Clock          string
	Outcomes       []Outcome
	// SuiteFailures are failures outside any requirement (the hello of the
	// run, a suite node).
	SuiteFailures []string

	Passed, Failed, Skipped, Expected, Stale, NotApplicable int
	// OK is the run's verdict: no unexpected failure, no stale baseline
	// entry, no suite failure.
	OK bool
}

// Failing returns the ids of the requirements that failed, expected or not.
func (r *Result) Failing() []string {
	var out []string
	for _, o := range r.Outcomes {
		if o.Verdict == Failed || o.Verdict == ExpectedFailure {
			out = append(out, o.Requirement.ID)
		}
	}
	return out
}

// Outcome returns the outcome of requirement id.
func (r *Result) Outcome(id string) (Outcome, bool) {
	for _, o := range r.Outcomes {
		if o.Requirement.ID == id {
			return o, true
		}
	}
	return Outcome{}, false
}

// summarize turns ginkgo's report into verdicts, applying the baseline.
func summarize(s *state, rep types.Report) *Result {
	res := &Result{Target: s.cfg.Target.Name, Clock: s.modeString()}
	if s.hello != nil {
		res.Implementation = s.hello.Implementation
	}
	if s.setupErr != nil {
		res.SuiteFailures = append(res.SuiteFailures, s.setupErr.Error())
	}
	bySpec := map[string]types.SpecReport{}
	for _, sr := range rep.SpecReports {
		r, ok := reqOf(sr)
		if !ok {
			if sr.State.Is(types.SpecStateFailureStates) && sr.Failure.Message != nothingApplied {
				res.SuiteFailures = append(res.SuiteFailures, fmt.Sprintf("%s: %s", sr.LeafNodeType, sr.Failure.Message))
			}
			continue
		}
		bySpec[r.ID] = sr
	}
	var baseline map[string]string
	if s.cfg.Baseline != nil {
		baseline = s.cfg.Baseline.Reasons
	}
	for _, r := range Requirements() {
		o := Outcome{Requirement: r, Verdict: NotSelected}
		sr, ran := bySpec[r.ID]
		if ran {
			o.Duration = sr.RunTime
			for _, e := range sr.ReportEntries {
				if e.Name == "evidence" && e.StringRepresentation() != "" {
					o.Evidence = strings.Split(e.StringRepresentation(), "\n")
				}
			}
			switch {
			case sr.State == types.SpecStatePassed:
				o.Verdict = Passed
			case sr.State.Is(types.SpecStateFailureStates):
				o.Verdict = Failed
				o.Message = sr.Failure.Message
			case sr.State == types.SpecStateSkipped && strings.HasPrefix(sr.Failure.Message, "not applicable"):
				o.Verdict = NotApplicable
				o.Message = sr.Failure.Message
			}
		}
		if reason, ok := baseline[r.ID]; ok {
			switch o.Verdict {
			case Failed:
				o.Verdict = ExpectedFailure
				o.Message = "baseline: " + reason + "\n" + o.Message
			case Passed:
				o.Verdict = StaleBaseline
				o.Message = "passes, but the baseline expects it to fail (" + reason + "): remove it from " + s.cfg.Baseline.File
			}
		}
		switch o.Verdict {
		case Passed:
			res.Passed++
		case Failed:
			res.Failed++
		case ExpectedFailure:
			res.Expected++
		case StaleBaseline:
			res.Stale++
			res.Failed++
		case NotApplicable:
			res.NotApplicable++
			res.Skipped++
		case NotSelected:
			res.Skipped++
		}
		res.Outcomes = append(res.Outcomes, o)
	}
	res.OK = res.Failed == 0 && len(res.SuiteFailures) == 0 && res.Passed+res.Expected > 0
	return res
}

// WriteSummary writes the human summary: every requirement grouped by
// profile, then the totals, ending with "N passed, N failed, N skipped".
func (r *Result) WriteSummary(w io.Writer) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\nmcplife conformance: %s %s via %s\n", r.Implementation.Name, r.Implementation.Version, r.Target)
	fmt.Fprintf(&b, "clock: %s\n", r.Clock)
	marks := map[Verdict]string{
		Passed: "PASS", Failed: "FAIL", ExpectedFailure: "XFAIL", StaleBaseline: "STALE",
		NotApplicable: "N/A", NotSelected: "-",
	}
	for _, p := range driver.Profiles() {
		var lines []string
		counts := map[Verdict]int{}
		for _, o := range r.Outcomes {
			if o.Requirement.Profile != p.Name {
				continue
			}
			counts[o.Verdict]++
			if o.Verdict == NotSelected {
				continue
			}
			line := fmt.Sprintf("  %-5s %-18s %-6s %s", marks[o.Verdict], o.Requirement.ID, o.Requirement.Level, o.Requirement.Statement)
			if o.Verdict != Passed && o.Verdict != NotSelected && o.Message != "" {
				for _, m := range strings.Split(strings.TrimSpace(o.Message), "\n") {
					line += "\n        " + m
				}
			}
			lines = append(lines, line)
		}
		if len(lines) == 0 && counts[NotSelected] == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nprofile %s: %d passed, %d failed, %d expected failures, %d not applicable, %d not selected\n",
			p.Name, counts[Passed], counts[Failed]+counts[StaleBaseline], counts[ExpectedFailure], counts[NotApplicable], counts[NotSelected])
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	for _, f := range r.SuiteFailures {
		fmt.Fprintf(&b, "\nsuite failure: %s\n", f)
	}
	fmt.Fprintf(&b, "\nbaseline: %d expected failures, %d stale entries; %d not applicable, %d not selected\n",
		r.Expected, r.Stale, r.NotApplicable, r.Skipped-r.NotApplicable)
	verdict := "PASS"
	switch {
	case r.OK:
	case r.Failed == 0 && len(r.SuiteFailures) == 0 && r.Passed+r.Expected == 0:
		verdict = fmt.Sprintf("FAIL: %s (%d not applicable, %d not selected): %s", nothingRan, r.NotApplicable, r.Skipped-r.NotApplicable, nothingRanWhy)
	default:
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "conformance %s\n", verdict)
	fmt.Fprintf(&b, "%d passed, %d failed, %d skipped\n", r.Passed, r.Failed, r.Skipped)
	_, _ = w.Write(b.Bytes())
}

// SpecVerdict is the verdict on one requirement read back from a JSON
// report written with Config.JSONReport.
type SpecVerdict struct {
	ID      string
	State   types.SpecState
	Message string
}

// ReadJSONReport reads the per-requirement verdicts of a JSON report
// (ginkgo's format, as `harness conformance -json` writes it).
func ReadJSONReport(path string) ([]SpecVerdict, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the JSON report: %w", err)
	}
	var reports []types.Report
	if err := json.Unmarshal(b, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(reports) != 1 {
		return nil, fmt.Errorf("%s: %d suite reports, want 1", path, len(reports))
	}
	var out []SpecVerdict
	for _, sr := range reports[0].SpecReports {
		r, ok := reqOf(sr)
		if !ok {
			if sr.State.Is(types.SpecStateFailureStates) {
				out = append(out, SpecVerdict{ID: "suite:" + sr.LeafNodeType.String(), State: sr.State, Message: sr.Failure.Message})
			}
			continue
		}
		out = append(out, SpecVerdict{ID: r.ID, State: sr.State, Message: sr.Failure.Message})
	}
	return out, nil
}
