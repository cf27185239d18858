package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/docsection"
)

// The counts the documents state about the requirements and the drivers'
// committed verdicts, derived here from Requirements() and
// conformance/drivers/*/report.json: none is typed by hand.
// MCPLIFE_UPDATE_DOCS=1 rewrites them (.ci/drivers -update does, after it
// rewrote the reports).

// docSectionVerdictCounts is the generated section of each driver's
// README.md that holds its verdict counts.
const docSectionVerdictCounts = "verdict-counts"

// TestDriverReadmeCounts checks the verdict counts of every driver's
// README.md (its "verdict-counts" section) against the driver's committed
// report.json.
func TestDriverReadmeCounts(t *testing.T) {
	cols, err := ReadMatrixColumns(driversDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		readme := filepath.Join(driversDir, c.Name, "README.md")
		if err := docsection.Check(readme, docSectionVerdictCounts, renderVerdictCounts(c.Report)); err != nil {
			t.Errorf("%v (the counts of %s/%s/report.json)", err, driversDir, c.Name)
		}
	}
}

// verdictTally counts the verdicts of one era and profile of a report.
type verdictTally struct {
	passed, failed, notApplicable int
	failing                       []string
}

// tallyVerdicts counts the verdicts of report by era and profile ("" for
// all profiles).
func tallyVerdicts(report VerdictReport) map[driver.Era]map[driver.Profile]*verdictTally {
	out := map[driver.Era]map[driver.Profile]*verdictTally{}
	add := func(e driver.Era, p driver.Profile, v RequirementVerdict) {
		if out[e] == nil {
			out[e] = map[driver.Profile]*verdictTally{}
		}
		t := out[e][p]
		if t == nil {
			t = &verdictTally{}
			out[e][p] = t
		}
		switch v.Verdict {
		case Passed:
			t.passed++
		case NotApplicable, NotSelected:
			t.notApplicable++
		default:
			t.failed++
			t.failing = append(t.failing, v.ID)
		}
	}
	for _, v := range report.Verdicts {
		r, ok := Lookup(v.ID)
		if !ok {
			continue // TestMatrix names verdicts of unknown requirements
		}
		add(v.Era, report.JudgedUnder(r), v)
		add(v.Era, "", v)
	}
	return out
}

// renderVerdictCounts renders the verdict counts of a driver's committed
// run for its README.md: per era, per profile with a requirement that
// applied, the passes, the expected failures (named) and the requirements
// that did not apply.
func renderVerdictCounts(report VerdictReport) string {
	var b strings.Builder
	b.WriteString("<!-- Rendered from report.json by TestDriverReadmeCounts (conformance/doccounts_test.go); do not edit by hand. -->\n\n")
	fmt.Fprintf(&b, "The committed run (`report.json`: %s %s, %s clock) judged, in each era:\n\n",
		report.Implementation.Name, report.Implementation.Version, report.Clock)
	b.WriteString("| Era | Profile | Pass | Expected failure | Not applicable |\n|---|---|---|---|---|\n")
	tally := tallyVerdicts(report)
	for _, e := range driver.Eras() {
		byProfile := tally[e.Name]
		all := byProfile[""]
		if all == nil {
			continue
		}
		if !slices.Contains(report.Eras, e.Name) {
			fmt.Fprintf(&b, "| %s | all | 0 | 0 | %d (the driver does not speak this era) |\n", e.Name, all.notApplicable)
			continue
		}
		for _, p := range Profiles() {
			t := byProfile[p.Name]
			if t == nil || t.passed+t.failed == 0 {
				continue
			}
			failing := strconv.Itoa(t.failed)
			if t.failed > 0 {
				failing += ": `" + strings.Join(slices.Sorted(slices.Values(t.failing)), "`, `") + "`"
			}
			fmt.Fprintf(&b, "| %s | `%s` | %d | %s | %d |\n", e.Name, p.Name, t.passed, failing, t.notApplicable)
		}
		fmt.Fprintf(&b, "| %s | **all** | **%d** | **%d** | **%d** |\n", e.Name, all.passed, all.failed, all.notApplicable)
	}
	return b.String()
}

// TestTutorialRunCounts checks what docs/DRIVER.md section 13 says a run
// of the tutorial driver prints (its "tutorial-run" section) against the
// committed verdicts of conformance/drivers/minimal-node, and that the
// tutorial passes every core requirement that applies, as the section
// promises.
func TestTutorialRunCounts(t *testing.T) {
	report, err := ReadVerdicts(filepath.Join(driversDir, "minimal-node", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	body, failing := renderTutorialRun(report)
	if len(failing) > 0 {
		t.Errorf("%s/minimal-node/report.json: the tutorial driver fails the core requirements %v; %s section 13 promises `conformance PASS` for `-profile core`", driversDir, failing, driverMD)
	}
	if err := docsection.Check(driverMD, "tutorial-run", body); err != nil {
		t.Error(err)
	}
	// Its README says its baseline lists field requirements only.
	for _, v := range report.Verdicts {
		if r, ok := Lookup(v.ID); ok && v.Verdict == ExpectedFailure && r.Profile != ProfileField {
			t.Errorf("%s/minimal-node/report.json: %s (profile %s) is an expected failure; %s/minimal-node/README.md says its baseline lists field requirements only", driversDir, Key(v.ID, v.Era), r.Profile, driversDir)
		}
	}
}

// renderTutorialRun renders the summary lines of the tutorial driver's
// `-profile core` run (no baseline) from its committed verdicts, through
// Result.WriteSummary, with the reason each requirement did not apply;
// failing lists the core requirements it does not pass.
func renderTutorialRun(report VerdictReport) (body string, failing []string) {
	res := Result{Implementation: report.Implementation, Protocol: report.Protocol, Eras: report.Eras, Clock: report.Clock}
	type naGroup struct {
		era driver.Era
		why string
		ids []string
	}
	var groups []*naGroup
	for _, v := range report.Verdicts {
		r, ok := Lookup(v.ID)
		if !ok || report.JudgedUnder(r) != driver.ProfileCore {
			continue
		}
		o := Outcome{Requirement: r, Profile: driver.ProfileCore, Era: v.Era, Verdict: v.Verdict, Message: v.Reason}
		switch v.Verdict {
		case Passed:
		case NotApplicable:
			why := strings.TrimPrefix(v.Reason, "not applicable: ")
			i := slices.IndexFunc(groups, func(g *naGroup) bool { return g.era == v.Era && g.why == why })
			if i < 0 {
				groups = append(groups, &naGroup{era: v.Era, why: why})
				i = len(groups) - 1
			}
			groups[i].ids = append(groups[i].ids, "`"+v.ID+"`")
		default:
			// Without -baseline every failure is a failure.
			o.Verdict = Failed
			failing = append(failing, Key(v.ID, v.Era))
		}
		res.Outcomes = append(res.Outcomes, o)
	}
	slices.SortStableFunc(groups, func(a, b *naGroup) int { return strings.Compare(string(a.era), string(b.era)) })
	var summary strings.Builder
	res.WriteSummary(&summary)
	var lines []string
	for _, l := range strings.Split(summary.String(), "\n") {
		if strings.HasPrefix(l, "profile "+string(driver.ProfileCore)+":") || (len(lines) > 0 && strings.HasPrefix(l, "  era ")) {
			lines = append(lines, l)
		}
	}
	var b strings.Builder
	b.WriteString("<!-- Rendered from conformance/drivers/minimal-node/report.json by TestTutorialRunCounts (conformance/doccounts_test.go); do not edit by hand. -->\n\n")
	b.WriteString("The summary's `core` lines read\n\n```text\n" + strings.Join(lines, "\n") + "\n```\n\nwhere these do not apply:\n\n")
	for _, g := range groups {
		ids := strings.Join(g.ids, ", ")
		if len(g.ids) > 4 {
			ids = fmt.Sprintf("all %d requirements", len(g.ids))
		}
		fmt.Fprintf(&b, "- %s era, %s: %s\n", g.era, ids, g.why)
	}
	return b.String(), failing
}

// TestConformanceDocCounts checks the counts docs/CONFORMANCE.md states in
// its prose about the requirements of today.
func TestConformanceDocCounts(t *testing.T) {
	n := strconv.Itoa(len(Requirements()))
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`All (\d+) requirements\s+are proven today`),
	} {
		if err := docsection.CheckValue(conformanceMD, re, n); err != nil {
			t.Error(err)
		}
	}
}

// summaryExampleFailing is the requirement that fails in the example of
// docs/CONFORMANCE.md section 7, and the message of its failure.
const (
	summaryExampleFailing = "SHARED-PROBE-001"
	summaryExampleClaim   = "the server process was not restarted: the same process answers the next call"
	summaryExampleSpecs   = "specs_shared.go"
	summaryExampleMessage = "[journal] expected: " + summaryExampleClaim + "\n  observed: launches=2"
)

// TestSummaryExample checks the example summary of docs/CONFORMANCE.md
// section 7 (its "summary-example" section): Result.WriteSummary of a run
// of the reference in both eras in which SHARED-PROBE-001 fails, cut to the
// lines that section explains.
func TestSummaryExample(t *testing.T) {
	specs, err := os.ReadFile(summaryExampleSpecs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(specs), strconv.Quote(summaryExampleClaim)) {
		t.Errorf("%s no longer claims %q: the example's failure must be one the spec can report", summaryExampleSpecs, summaryExampleClaim)
	}
	if err := docsection.Check(conformanceMD, "summary-example", renderSummaryExample(t)); err != nil {
		t.Error(err)
	}
}

func renderSummaryExample(t *testing.T) string {
	t.Helper()
	failing, ok := Lookup(summaryExampleFailing)
	if !ok {
		t.Fatalf("the example's failing requirement %s is gone: choose another", summaryExampleFailing)
	}
	res := Result{
		Implementation: driver.Implementation{Name: "mcplife", Version: "devel"},
		Eras:           Both,
		Target:         "/usr/local/bin/harness driver",
		Clock:          "virtual (timing checked exactly)",
	}
	for _, r := range Requirements() {
		for _, e := range r.Eras {
			o := Outcome{Requirement: r, Era: e, Verdict: Passed}
			if r.ID == failing.ID && e == failing.Eras[0] {
				o.Verdict, o.Message = Failed, summaryExampleMessage
				res.Failed++
			} else {
				res.Passed++
			}
			res.Outcomes = append(res.Outcomes, o)
		}
	}
	var out strings.Builder
	res.WriteSummary(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	// Keep the header, the failing requirement's profile (its counts, its
	// first requirement and the failure) and the closing lines.
	var keep []string
	for _, l := range lines {
		if l == "" {
			break
		}
		keep = append(keep, l)
	}
	keep = append(keep, "")
	block := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "profile "+string(failing.Profile)+":") })
	key := Key(failing.ID, failing.Eras[0])
	shown, last := 0, block // requirement lines shown; the last line kept
	for i := block; i < len(lines) && lines[i] != ""; i++ {
		l := lines[i]
		switch {
		case i == block || strings.HasPrefix(l, "  era "):
		case strings.Contains(l, key):
			if last != i-1 {
				keep = append(keep, "  ...")
			}
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "        ") {
				keep = append(keep, lines[i])
				i++
				l = lines[i]
			}
		case shown == 0:
			shown++
		default:
			continue
		}
		keep = append(keep, l)
		last = i
	}
	keep = append(keep, "  ...")
	for _, l := range lines {
		if strings.HasPrefix(l, "baseline: ") || strings.HasPrefix(l, "conformance ") || regexp.MustCompile(`^\d+ passed, \d+ failed, \d+ skipped$`).MatchString(l) {
			keep = append(keep, l)
		}
	}
	return "```text\n" + strings.Join(keep, "\n") + "\n```\n"
}

// baselineLine matches the first line of a baseline entry.
var baselineLine = regexp.MustCompile(`^[A-Z]+-[A-Z]+-\d{3}(@[a-z]+)?\s`)

// TestDocBaselineExamples checks the example baselines of
// docs/CONFORMANCE.md (its text blocks whose lines are baseline entries):
// each parses, names requirements that exist in the eras it gives, and
// pins only checks (fails: lines) a committed run has failed for that
// requirement, so an example copied into a baseline means what it says.
func TestDocBaselineExamples(t *testing.T) {
	doc, err := os.ReadFile(conformanceMD)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]bool{} // id -> failed checks of the committed reports
	cols, err := ReadMatrixColumns(driversDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		for _, v := range c.Report.Verdicts {
			if seen[v.ID] == nil {
				seen[v.ID] = map[string]bool{}
			}
			for _, f := range v.Failed {
				seen[v.ID][f] = true
			}
		}
	}
	blocks := regexp.MustCompile("(?s)```text\n(.*?)```\n").FindAllSubmatchIndex(doc, -1)
	n := 0
	for _, m := range blocks {
		body := string(doc[m[2]:m[3]])
		first := ""
		for _, l := range strings.Split(body, "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				first = l
				break
			}
		}
		if !baselineLine.MatchString(first) {
			continue
		}
		n++
		name := fmt.Sprintf("%s:%d", conformanceMD, 1+strings.Count(string(doc[:m[2]]), "\n"))
		base, err := ParseBaseline(name, strings.NewReader(body))
		if err == nil {
			err = base.check()
		}
		if err != nil {
			t.Errorf("the example baseline at %v", err)
			continue
		}
		for key, checks := range base.Fails {
			id, _ := SplitKey(key)
			for _, c := range checks {
				if !seen[id][c] {
					t.Errorf("%s: %s pins the check %q, which no committed report (%s/*/report.json) records for %s", name, key, c, driversDir, id)
				}
			}
		}
	}
	if n == 0 {
		t.Errorf("%s: no example baseline found; update TestDocBaselineExamples", conformanceMD)
	}
}

// TestDriverDocCounts checks the counts docs/DRIVER.md states in its prose.
func TestDriverDocCounts(t *testing.T) {
	js, err := os.ReadFile(filepath.Join(driversDir, "minimal-node", "driver.js"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(js), "\n")
	about := strconv.Itoa((lines + 5) / 10 * 10) // "about": to the nearest ten
	if err := docsection.CheckValue(driverMD, regexp.MustCompile(`in one file of about (\d+) lines`), about); err != nil {
		t.Errorf("%v (minimal-node/driver.js has %d lines)", err, lines)
	}
}

// TestExchangeExample checks the conformance exchange of docs/CONFORMANCE.md
// section 6: every complete line the harness and the driver exchange
// (those not cut short with "...") is valid against the driver protocol's
// schemas, its hello speaks the current protocol version, and the
// requirement it shows exists.
func TestExchangeExample(t *testing.T) {
	doc, err := os.ReadFile(conformanceMD)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\nA conformance exchange, here `")
	if !ok {
		t.Fatalf("%s: the conformance exchange of section 6 is gone; update TestExchangeExample", conformanceMD)
	}
	if id, _, _ := strings.Cut(sec, "`"); !slices.Contains(Keys(), Key(id, driver.EraLegacy)) {
		t.Errorf("%s: the conformance exchange shows %s, which is not a requirement of the legacy era", conformanceMD, id)
	}
	sec, _, _ = strings.Cut(sec, "\n## 7.")
	var lines []driver.TranscriptLine
	for _, l := range strings.Split(sec, "\n") {
		dir := driver.Received
		switch {
		case strings.HasPrefix(l, "> "):
			dir = driver.Sent
		case strings.HasPrefix(l, "< "):
		default:
			continue
		}
		for _, m := range regexp.MustCompile(`"protocol":"([^"]*)"`).FindAllStringSubmatch(l, -1) {
			if m[1] != driver.ProtocolVersion {
				t.Errorf("%s: the conformance exchange speaks %s, the harness %s: %s", conformanceMD, m[1], driver.ProtocolVersion, l)
			}
		}
		if strings.Contains(l, "...") {
			continue
		}
		lines = append(lines, driver.TranscriptLine{Dir: dir, Line: []byte(l[2:])})
	}
	if len(lines) < 5 {
		t.Fatalf("%s: only %d complete lines in the conformance exchange", conformanceMD, len(lines))
	}
	v, err := driver.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range v.ValidateTranscript(lines) {
		t.Errorf("%s, the conformance exchange: %v", conformanceMD, err)
	}
}
