package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/mcplife/mcplife/conformance/driver"
)

// Baseline lists the requirements an implementation is known to fail, each
// with the reason. An expected failure passes the run; an unexpected failure
// fails it; a baselined requirement that passes fails it too (the baseline
// is stale and must shrink). An entry names a requirement in every era
// ("CORE-RESULT-003": baselines written before eras keep their meaning) or
// in one era ("CORE-RESULT-003@modern").
type Baseline struct {
	// File is where the baseline was read from, for messages.
	File string
	// Reasons maps entries (an id, or an id@era key) to why they are
	// expected to fail.
	Reasons map[string]string
	// Fails maps entries to the checks they pin: the failing checks the
	// run must show (FailedChecks), in order. An entry that pins none
	// accepts any failure of its requirement.
	Fails map[string][]string
	// errs are problems found while parsing.
	errs []string
}

// ParseBaseline reads a baseline: one requirement per line, its id
// (optionally @era), white space, and the reason. An indented line
// "fails: CHECK" below an entry pins a failing check of it (FailedChecks),
// one per line: a run that fails the requirement on other checks reports a
// changed failure. Blank lines and lines starting with # are ignored.
func ParseBaseline(name string, r io.Reader) (*Baseline, error) {
	b := &Baseline{File: name, Reasons: map[string]string{}, Fails: map[string][]string{}}
	sc := bufio.NewScanner(r)
	n := 0
	last := ""
	for sc.Scan() {
		n++
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if check, ok := strings.CutPrefix(line, "fails:"); ok && raw[0] != line[0] {
			if last == "" {
				return nil, fmt.Errorf("%s:%d: a pinned check (fails:) must follow its entry", name, n)
			}
			b.Fails[last] = append(b.Fails[last], strings.TrimSpace(check))
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
		last = id
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

// check reports entries that name no requirement, or an era the
// requirement does not apply to, and an id listed both for every era and
// for one.
func (b *Baseline) check() error {
	var unknown []string
	for key := range b.Reasons {
		id, era := SplitKey(key)
		r, ok := Lookup(id)
		switch {
		case !ok:
			unknown = append(unknown, key)
		case era != "" && !r.Has(era):
			unknown = append(unknown, key+" (the requirement applies to "+r.EraString()+")")
		case era != "" && b.Reasons[id] != "":
			return fmt.Errorf("baseline %s: %s is listed for every era and as %s", b.File, id, key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("baseline %s: unknown requirements %s", b.File, strings.Join(unknown, ", "))
	}
	return nil
}

// Reason returns the reason the baseline expects requirement id to fail
// in era: its entry for that era, else its entry for every era.
func (b *Baseline) Reason(id string, era driver.Era) (string, bool) {
	if b == nil {
		return "", false
	}
	if r, ok := b.Reasons[Key(id, era)]; ok {
		return r, true
	}
	r, ok := b.Reasons[id]
	return r, ok
}

// pinned returns the failing checks the entry of id in era pins (an entry
// for the era first, then one for every era).
func (b *Baseline) pinned(id string, era driver.Era) []string {
	if b == nil {
		return nil
	}
	if _, ok := b.Reasons[Key(id, era)]; ok {
		return b.Fails[Key(id, era)]
	}
	return b.Fails[id]
}

// awaitedLine returns what a failed wait awaited: the rest of its
// message's first line that starts with "awaited: ".
func awaitedLine(msg string) (string, bool) {
	for _, l := range strings.Split(msg, "\n") {
		if a, ok := strings.CutPrefix(strings.TrimSpace(l), "awaited: "); ok {
			return a, true
		}
	}
	return "", false
}

// failedCheck matches the first line of a failed check (H.Verify, Claim).
var failedCheck = regexp.MustCompile(`^\s*\[(journal|process|files|events|response)\] expected: (.+)$`)

// digits are what varies between runs of the same failure: latencies,
// counts, pids.
var digits = regexp.MustCompile(`[0-9]+`)

// paths are the other thing that varies: a spec's temporary directory.
var paths = regexp.MustCompile(`\S*/\S*`)

// outsideCheck prefixes the fingerprint of a failure outside any check.
const outsideCheck = "outside a check: "

// FailedChecks returns the checks a failure message names: "[source]
// claim" for each failed check (H.Verify, Claim, soft checks), or, for a
// failure outside a check, "outside a check: " and what failed: for a wait
// that ended without what it waited for, "await: " and what it awaited
// (its "awaited:" line), whether the wait ended because the
// implementation went idle or at the await bound, which depends on the
// machine's load; otherwise (a protocol error, say) the message's first
// line. Every path is replaced by PATH and every number by N. The result
// is the failure's fingerprint: the same defect fails the same checks from
// run to run, whatever it measured.
func FailedChecks(msg string) []string {
	var out []string
	for _, l := range strings.Split(msg, "\n") {
		if m := failedCheck.FindStringSubmatch(l); m != nil {
			out = append(out, "["+m[1]+"] "+strings.TrimSpace(m[2]))
		}
	}
	if len(out) == 0 && strings.TrimSpace(msg) != "" {
		what := firstLine(msg)
		if a, ok := awaitedLine(msg); ok {
			what = "await: " + a
		}
		first := digits.ReplaceAllString(paths.ReplaceAllString(what, "PATH"), "N")
		if len(first) > 160 {
			first = first[:160]
		}
		out = append(out, outsideCheck+first)
	}
	return out
}

// ReasonFor is Reason for a key as reports write it ("ID@era", or a bare
// id, which matches only an entry for every era).
func (b *Baseline) ReasonFor(key string) (string, bool) {
	id, era := SplitKey(key)
	if era == "" {
		if b == nil {
			return "", false
		}
		r, ok := b.Reasons[id]
		return r, ok
	}
	return b.Reason(id, era)
}

// Verdict is the outcome of one requirement in a run.
type Verdict string

// The verdicts.
const (
	Passed          Verdict = "passed"
	Failed          Verdict = "failed"
	ExpectedFailure Verdict = "expected-failure" // failed, as the baseline says
	StaleBaseline   Verdict = "stale-baseline"   // passed, but the baseline says it fails
	ChangedFailure  Verdict = "changed-failure"  // failed, but not on the checks the baseline pins
	NotApplicable   Verdict = "not-applicable"   // outside the driver's profiles or capabilities
	NotSelected     Verdict = "not-selected"     // filtered out of this run
)

// Outcome is the verdict on one requirement in one era.
type Outcome struct {
	Requirement Requirement
	// Profile is the profile the requirement was judged under: its own,
	// or the one it formerly belonged to for a driver whose protocol
	// version predates its profile (Requirement.ClaimedAs).
	Profile driver.Profile
	Era     driver.Era
	Verdict Verdict
	// Message is the failure, the reason it does not apply, or the
	// baseline's reason.
	Message  string
	Evidence []string
	// Measured is what the spec measured (H.Measure), or "".
	Measured string
	// Glue is why the driver's own code decides this verdict (Config.Glue),
	// or "": the verdict is the library's.
	Glue string
	// Checks are the failing checks of a failed spec (FailedChecks).
	Checks   []string
	Duration time.Duration
}

// judgedUnder returns o.Profile, or the requirement's own profile for an
// outcome built without one.
func (o Outcome) judgedUnder() driver.Profile {
	if o.Profile == "" {
		return o.Requirement.Profile
	}
	return o.Profile
}

// Result is the verdict of a run.
type Result struct {
	Implementation driver.Implementation
	// Protocol is the driver protocol version the driver answered hello
	// with.
	Protocol string
	// Eras are the MCP protocol eras the driver speaks.
	Eras     []driver.Era
	Target   string
	Clock    string
	Outcomes []Outcome
	// SuiteFailures are failures outside any requirement (the hello of the
	// run, a suite node).
	SuiteFailures []string

	Passed, Failed, Skipped, Expected, Stale, NotApplicable int
	// OK is the run's verdict: no unexpected failure, no stale baseline
	// entry, no suite failure.
	OK bool
}

// Key names the outcome's requirement and era: "CORE-CONNECT-001@legacy".
func (o Outcome) Key() string { return Key(o.Requirement.ID, o.Era) }

// Failing returns the keys (id@era) of the requirements that failed,
// expected or not.
func (r *Result) Failing() []string {
	var out []string
	for _, o := range r.Outcomes {
		if o.Verdict == Failed || o.Verdict == ExpectedFailure {
			out = append(out, o.Key())
		}
	}
	return out
}

// Outcome returns the outcome of requirement id in era.
func (r *Result) Outcome(id string, era driver.Era) (Outcome, bool) {
	for _, o := range r.Outcomes {
		if o.Requirement.ID == id && o.Era == era {
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
		res.Protocol = s.hello.Protocol
		res.Eras = s.hello.SpokenEras()
	}
	if s.setupErr != nil {
		res.SuiteFailures = append(res.SuiteFailures, s.setupErr.Error())
	}
	bySpec := map[string]types.SpecReport{}
	for _, sr := range rep.SpecReports {
		r, era, ok := reqOf(sr)
		if !ok {
			if sr.State.Is(types.SpecStateFailureStates) && sr.Failure.Message != nothingApplied {
				res.SuiteFailures = append(res.SuiteFailures, fmt.Sprintf("%s: %s", sr.LeafNodeType, sr.Failure.Message))
			}
			continue
		}
		bySpec[Key(r.ID, era)] = sr
	}
	for _, r := range Requirements() {
		for _, era := range r.Eras {
			o := Outcome{Requirement: r, Profile: r.Profile, Era: era, Verdict: NotSelected}
			if s.hello != nil {
				o.Profile = r.ClaimedAs(s.hello)
			}
			sr, ran := bySpec[o.Key()]
			if ran {
				o.Duration = sr.RunTime
				for _, e := range sr.ReportEntries {
					if e.Name == "evidence" && e.StringRepresentation() != "" {
						o.Evidence = strings.Split(e.StringRepresentation(), "\n")
					}
					if e.Name == "measured" {
						o.Measured = e.StringRepresentation()
					}
				}
				switch {
				case sr.State == types.SpecStateInterrupted:
					// Stopped from outside (a signal, a timeout around the
					// run): what the spec saw says nothing of the
					// implementation, so it gets no verdict, and the run
					// fails as a whole.
					res.SuiteFailures = append(res.SuiteFailures, fmt.Sprintf("the run was interrupted while %s ran: it has no verdict, and the requirements after it did not run", o.Key()))
				case sr.State == types.SpecStatePassed:
					o.Verdict = Passed
				case sr.State.Is(types.SpecStateFailureStates):
					o.Verdict = Failed
					o.Message = sr.Failure.Message
					o.Checks = FailedChecks(sr.Failure.Message)
				case sr.State == types.SpecStateSkipped && strings.HasPrefix(sr.Failure.Message, "not applicable"):
					o.Verdict = NotApplicable
					o.Message = sr.Failure.Message
				}
			}
			if reason, ok := s.cfg.Glue.Reason(r.ID, era); ok && ran {
				o.Glue = reason
			}
			if reason, ok := s.cfg.Baseline.Reason(r.ID, era); ok {
				switch o.Verdict {
				case Failed:
					o.Verdict = ExpectedFailure
					if pinned := s.cfg.Baseline.pinned(r.ID, era); len(pinned) > 0 && !slices.Equal(pinned, o.Checks) {
						o.Verdict = ChangedFailure
						o.Message = fmt.Sprintf("the baseline pins the failing checks %q, the run failed %q (%s): a different failure of an expected failure; update the baseline's fails: lines if it is the same defect\n%s",
							pinned, o.Checks, s.cfg.Baseline.File, o.Message)
						break
					}
					o.Message = "baseline: " + reason + "\n" + o.Message
				case Passed:
					o.Verdict = StaleBaseline
					o.Message = fmt.Sprintf("passes in the %s era, but the baseline expects it to fail (%s): remove it from %s, or name the era that fails (%s@era)",
						era, reason, s.cfg.Baseline.File, r.ID)
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
			case ChangedFailure:
				res.Failed++
			case NotApplicable:
				res.NotApplicable++
				res.Skipped++
			case NotSelected:
				res.Skipped++
			}
			res.Outcomes = append(res.Outcomes, o)
		}
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
	eras := make([]string, len(r.Eras))
	for i, e := range r.Eras {
		eras[i] = string(e)
	}
	fmt.Fprintf(&b, "eras: %s (each requirement of both eras runs once per era the driver speaks)\n", strings.Join(eras, ", "))
	marks := map[Verdict]string{
		Passed: "PASS", Failed: "FAIL", ExpectedFailure: "XFAIL", StaleBaseline: "STALE", ChangedFailure: "CHANGED",
		NotApplicable: "N/A", NotSelected: "-",
	}
	for _, p := range Profiles() {
		var lines []string
		counts := map[Verdict]int{}
		eraCounts := map[driver.Era]map[Verdict]int{}
		for _, e := range driver.Eras() {
			eraCounts[e.Name] = map[Verdict]int{}
		}
		for _, o := range r.Outcomes {
			if o.judgedUnder() != p.Name {
				continue
			}
			counts[o.Verdict]++
			eraCounts[o.Era][o.Verdict]++
			if o.Verdict == NotSelected {
				continue
			}
			line := fmt.Sprintf("  %-5s %-25s %-6s %s", marks[o.Verdict], o.Key(), o.Requirement.Level, o.Requirement.Statement)
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
			p.Name, counts[Passed], counts[Failed]+counts[StaleBaseline]+counts[ChangedFailure], counts[ExpectedFailure], counts[NotApplicable], counts[NotSelected])
		for _, e := range driver.Eras() {
			ec := eraCounts[e.Name]
			fmt.Fprintf(&b, "  era %s: %d passed, %d failed, %d expected failures, %d not applicable, %d not selected\n",
				e.Name, ec[Passed], ec[Failed]+ec[StaleBaseline]+ec[ChangedFailure], ec[ExpectedFailure], ec[NotApplicable], ec[NotSelected])
		}
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

// SpecVerdict is the verdict on one requirement in one era read back from
// a JSON report written with Config.JSONReport.
type SpecVerdict struct {
	// ID is the key of the requirement and era, "CORE-CONNECT-001@legacy"
	// ("suite:<node>" for a failed suite node).
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
		r, era, ok := reqOf(sr)
		if !ok {
			if sr.State.Is(types.SpecStateFailureStates) {
				out = append(out, SpecVerdict{ID: "suite:" + sr.LeafNodeType.String(), State: sr.State, Message: sr.Failure.Message})
			}
			continue
		}
		out = append(out, SpecVerdict{ID: Key(r.ID, era), State: sr.State, Message: sr.Failure.Message})
	}
	return out, nil
}
