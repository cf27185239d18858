package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/conformance/driver"
)

// VerdictReport is the compact, stable record of a run: the implementation,
// the eras its driver speaks and the verdict on every requirement in every
// era it applies to, with the baseline's reason for an expected failure and
// the reason a requirement did not apply. It holds no
// timings, pids or paths, so two runs with the same verdicts write the same
// bytes; docs/MATRIX.md is rendered from these reports.
type VerdictReport struct {
	Implementation driver.Implementation `json:"implementation"`
	// Protocol is the driver protocol version of the run's driver
	// ("mcplife-driver/4"); a report stored before it was recorded has
	// none. It decides the profile each requirement was judged under
	// (JudgedUnder).
	Protocol string `json:"protocol,omitempty"`
	// Clock is the clock mode of the run: "virtual" or "real".
	Clock string `json:"clock"`
	// Eras are the MCP protocol eras the driver speaks (legacy only for a
	// driver of protocol version 1).
	Eras     []driver.Era         `json:"eras"`
	Verdicts []RequirementVerdict `json:"verdicts"`
}

// RequirementVerdict is the verdict on one requirement in one era.
type RequirementVerdict struct {
	ID      string     `json:"id"`
	Era     driver.Era `json:"era"`
	Verdict Verdict    `json:"verdict"`
	// Reason is the baseline's reason (expected failure), why the
	// requirement does not apply, or the first line of an unexpected
	// failure.
	Reason string `json:"reason,omitempty"`
	// Measured is what the spec measured for its verdict (field profile:
	// latencies, counts, rates). It varies from run to run, so comparisons
	// of verdicts ignore it.
	Measured string `json:"measured,omitempty"`
	// Glue is why the driver's own code, not the library, decides the
	// verdict (the driver's glue.txt), or "".
	Glue string `json:"glue,omitempty"`
	// Failed are the checks a failing verdict failed (FailedChecks): the
	// failure's fingerprint, which stored reports and baselines pin.
	Failed []string `json:"failed,omitempty"`
}

// Verdicts returns the run's compact report.
func (r *Result) Verdicts() VerdictReport {
	rep := VerdictReport{Implementation: r.Implementation, Protocol: r.Protocol, Eras: r.Eras}
	if f := strings.Fields(r.Clock); len(f) > 0 {
		rep.Clock = f[0]
	}
	for _, o := range r.Outcomes {
		v := RequirementVerdict{ID: o.Requirement.ID, Era: o.Era, Verdict: o.Verdict, Measured: o.Measured, Glue: o.Glue, Failed: o.Checks}
		msg := strings.TrimSpace(o.Message)
		switch o.Verdict {
		case ExpectedFailure:
			v.Reason = strings.TrimPrefix(firstLine(msg), "baseline: ")
		case NotApplicable, Failed, StaleBaseline, ChangedFailure:
			v.Reason = firstLine(msg)
		}
		rep.Verdicts = append(rep.Verdicts, v)
	}
	return rep
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

// Marshal encodes the report as indented JSON with a final newline.
func (v VerdictReport) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteVerdicts writes the compact report of r to path.
func (r *Result) WriteVerdicts(path string) error {
	b, err := r.Verdicts().Marshal()
	if err != nil {
		return fmt.Errorf("verdict report: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("verdict report: %w", err)
	}
	return nil
}

// ReadVerdicts reads a compact report written by WriteVerdicts.
func ReadVerdicts(path string) (VerdictReport, error) {
	var v VerdictReport
	b, err := os.ReadFile(path)
	if err != nil {
		return v, fmt.Errorf("verdict report: %w", err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("verdict report %s: %w", path, err)
	}
	return v, nil
}

// SameVerdicts compares the verdicts of two reports and returns one line
// per requirement whose verdict or reason differs (empty when they agree).
func SameVerdicts(want, got VerdictReport) []string {
	var diffs []string
	if want.Implementation != got.Implementation {
		diffs = append(diffs, fmt.Sprintf("implementation: stored %s %s, run %s %s",
			want.Implementation.Name, want.Implementation.Version, got.Implementation.Name, got.Implementation.Version))
	}
	if want.Protocol != got.Protocol {
		diffs = append(diffs, fmt.Sprintf("protocol: stored %q, run %q", want.Protocol, got.Protocol))
	}
	if want.Clock != got.Clock {
		diffs = append(diffs, fmt.Sprintf("clock: stored %s, run %s", want.Clock, got.Clock))
	}
	if !slices.Equal(want.Eras, got.Eras) {
		diffs = append(diffs, fmt.Sprintf("eras: stored %v, run %v", want.Eras, got.Eras))
	}
	w, g := want.byKey(), got.byKey()
	for _, r := range Requirements() {
		for _, e := range r.Eras {
			k := Key(r.ID, e)
			a, b := w[k], g[k]
			if a.Verdict != b.Verdict || (a.Verdict != Failed && a.Reason != b.Reason) {
				diffs = append(diffs, fmt.Sprintf("%s: stored %s %q, run %s %q", k, a.Verdict, a.Reason, b.Verdict, b.Reason))
			} else if a.Verdict == ExpectedFailure && !slices.Equal(checksOnly(a.Failed), checksOnly(b.Failed)) {
				diffs = append(diffs, fmt.Sprintf("%s: stored failing checks %q, run %q", k, a.Failed, b.Failed))
			} else if a.Glue != b.Glue {
				diffs = append(diffs, fmt.Sprintf("%s: stored credit to the driver %q, run %q", k, a.Glue, b.Glue))
			}
		}
	}
	return diffs
}

// JudgedUnder returns the profile the report's driver was judged on
// requirement r under: r's own, or the one r formerly belonged to when the
// driver's protocol version (or a report without one) predates r's profile.
func (v VerdictReport) JudgedUnder(r Requirement) driver.Profile {
	return r.ClaimedAs(&driver.HelloResult{Protocol: v.Protocol})
}

// byKey indexes the verdicts by requirement and era (Key).
func (v VerdictReport) byKey() map[string]RequirementVerdict {
	out := map[string]RequirementVerdict{}
	for _, rv := range v.Verdicts {
		out[Key(rv.ID, rv.Era)] = rv
	}
	return out
}

// checksOnly keeps the fingerprints of failed checks, which are the specs'
// own words; a failure outside a check is described by the implementation's
// messages, which a stored report cannot pin from run to run.
func checksOnly(failed []string) []string {
	var out []string
	for _, f := range failed {
		if !strings.HasPrefix(f, outsideCheck) {
			out = append(out, f)
		}
	}
	return out
}
