package conformance

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/mcplife/mcplife/conformance/driver"
	faultpatch "github.com/mcplife/mcplife/conformance/faults"
	"github.com/mcplife/mcplife/internal/docsection"
)

const (
	catalogueFile = "testdata/requirements.json"
	conformanceMD = "../docs/CONFORMANCE.md"
)

// TestCatalogue keeps the golden catalogue and the generated sections of
// docs/CONFORMANCE.md in step with the requirements declared in the specs,
// and checks that every requirement has a proof of teeth (teeth.golden).
// MCPLIFE_UPDATE_DOCS=1 rewrites them.
func TestCatalogue(t *testing.T) {
	want := CatalogueJSON()
	got, err := os.ReadFile(catalogueFile)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		if os.Getenv(docsection.UpdateEnv) != "" {
			if err := os.WriteFile(catalogueFile, want, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Errorf("%s is stale: the requirements changed; run the tests with %s=1 to rewrite it, and review the diff", catalogueFile, docsection.UpdateEnv)
		}
	}
	if err := docsection.Check(conformanceMD, "requirements", CatalogueMarkdown()); err != nil {
		t.Error(err)
	}
	if err := docsection.Check(conformanceMD, "teeth", teethMarkdown()); err != nil {
		t.Error(err)
	}
	if err := docsection.Check("../docs/DRIVER.md", DocSectionPrerequisites, PrerequisitesMarkdown()); err != nil {
		t.Error(err)
	}
	checkTeethGolden(t)
}

// teethMarkdown renders the teeth table for docs/CONFORMANCE.md.
func teethMarkdown() string {
	var b strings.Builder
	b.WriteString("<!-- Rendered from the teeth table in conformance/teeth_test.go; do not edit by hand. -->\n\n")
	b.WriteString("| `MCPLIFE_FAULTS` | Defect | Fails (first: the requirement naming the defect) |\n|---|---|---|\n")
	for _, v := range teeth {
		ids := append([]string{v.names}, v.also...)
		for i, id := range ids {
			ids[i] = "`" + id + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.fault, v.defect, strings.Join(ids, ", "))
	}
	return b.String()
}

// TestRequirementsWellFormed checks what register cannot: every profile has
// requirements, and the statements are unique.
func TestRequirementsWellFormed(t *testing.T) {
	byProfile := map[driver.Profile]int{}
	seen := map[string]string{}
	for _, r := range Requirements() {
		byProfile[r.Profile]++
		if other, ok := seen[r.Statement]; ok {
			t.Errorf("%s and %s have the same statement", r.ID, other)
		}
		seen[r.Statement] = r.ID
		if !strings.HasPrefix(r.Statement, "An implementation ") {
			t.Errorf("%s: statements start with \"An implementation\"", r.ID)
		}
	}
	for _, p := range driver.Profiles() {
		if byProfile[p.Name] == 0 {
			t.Errorf("profile %s has no requirement", p.Name)
		}
	}
}

// TestTeethTable checks the teeth table without running it: every defect
// the runtime can inject has a row, and every id is a requirement.
func TestTeethTable(t *testing.T) {
	var faults []string
	for _, v := range teeth {
		faults = append(faults, v.fault)
		for _, id := range append([]string{v.names}, v.also...) {
			if _, ok := Lookup(id); !ok {
				t.Errorf("%s: unknown requirement %s", v.fault, id)
			}
		}
		if v.defect == "" {
			t.Errorf("%s: describe the defect", v.fault)
		}
	}
	for f, ids := range racyTeeth {
		if !slices.Contains(faults, f) {
			t.Errorf("racyTeeth names %s, which has no row in the teeth table", f)
		}
		for _, id := range ids {
			if _, ok := Lookup(id); !ok {
				t.Errorf("racyTeeth %s: unknown requirement %s", f, id)
			}
		}
	}
	names, err := faultpatch.Names()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range names {
		if !slices.Contains(faults, f) {
			t.Errorf("defect %s of conformance/faults has no row in the teeth table", f)
		}
	}
	for _, f := range faults {
		if !slices.Contains(names, f) {
			t.Errorf("the teeth table's %s has no patch in conformance/faults/patches", f)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		"harness driver":                  {"harness", "driver"},
		`node  "my driver.js" --x`:        {"node", "my driver.js", "--x"},
		`sh -c 'exec ./d "$X"'`:           {"sh", "-c", `exec ./d "$X"`},
		`a\ b "c\"d" ''`:                  {"a b", `c"d`, ""},
		`python -c "print(\"hi\")"`:       {"python", "-c", `print("hi")`},
		`x "a\b" "c\\d"`:                  {"x", `a\b`, `c\d`},
		"  /abs/path/harness\tdriver\n  ": {"/abs/path/harness", "driver"},
	} {
		got, err := SplitCommand(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "   ", `"open`, `'open`, `trailing\`} {
		if _, err := SplitCommand(bad); err == nil {
			t.Errorf("SplitCommand(%q) succeeded", bad)
		}
	}
}

func TestParseBaseline(t *testing.T) {
	b, err := ParseBaseline("b.txt", strings.NewReader("# comment\n\nCORE-NAMING-002   keeps prefixes (issue #41)\nSEC-WRAP-002\tnot yet\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Reasons) != 2 || b.Reasons["CORE-NAMING-002"] != "keeps prefixes (issue #41)" || b.Reasons["SEC-WRAP-002"] != "not yet" {
		t.Errorf("reasons = %v", b.Reasons)
	}
	if err := b.check(); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"CORE-NAMING-002\n", "CORE-NAMING-002 a\nCORE-NAMING-002 b\n"} {
		if _, err := ParseBaseline("b.txt", strings.NewReader(bad)); err == nil {
			t.Errorf("ParseBaseline(%q) succeeded", bad)
		}
	}
	unknown, err := ParseBaseline("b.txt", strings.NewReader("NOPE-X-001 reason\n"))
	if err != nil || unknown.check() == nil {
		t.Errorf("an unknown id is not rejected: %v", err)
	}
}

// specReport fakes a ginkgo spec report of a requirement in an era (key
// id@era).
func specReport(key string, state types.SpecState, msg string) types.SpecReport {
	id, era := SplitKey(key)
	r, _ := Lookup(id)
	return types.SpecReport{
		LeafNodeType:   types.NodeTypeIt,
		LeafNodeLabels: r.Labels(era),
		State:          state,
		Failure:        types.Failure{Message: msg},
	}
}

// TestVerdicts checks how ginkgo's report and the baseline make verdicts,
// per requirement and era: a baseline entry without an era covers every
// era, one with an era only that era.
func TestVerdicts(t *testing.T) {
	rep := types.Report{SpecReports: types.SpecReports{
		specReport("CORE-CONNECT-001@legacy", types.SpecStatePassed, ""),
		specReport("CORE-CONFIG-001@modern", types.SpecStatePassed, ""),
		specReport("CORE-CONNECT-002@legacy", types.SpecStateFailed, "journal: boom"),
		specReport("CORE-NAMING-001@legacy", types.SpecStateFailed, "expected"),
		specReport("CORE-NAMING-001@modern", types.SpecStateFailed, "expected"),
		specReport("CORE-NAMING-002@legacy", types.SpecStatePassed, ""),
		specReport("CORE-RESULT-003@modern", types.SpecStateFailed, "expected in modern"),
		specReport("CORE-RESULT-003@legacy", types.SpecStatePassed, ""),
		specReport("SEC-WRAP-001@legacy", types.SpecStateSkipped, "not applicable: the driver does not claim profile security"),
	}}
	s := &state{cfg: Config{Target: Target{Name: "t"}, Baseline: &Baseline{File: "b.txt", Reasons: map[string]string{
		"CORE-NAMING-001": "known", "CORE-NAMING-002": "was broken", "CORE-RESULT-003@modern": "modern only",
	}}}, mode: ClockVirtual, hello: &driver.HelloResult{Protocol: driver.ProtocolVersion3, Implementation: driver.Implementation{Name: "x"}, Eras: Both}}
	res := summarize(s, rep)
	want := map[string]Verdict{
		"CORE-CONNECT-001@legacy": Passed, "CORE-CONFIG-001@modern": Passed, "CORE-CONNECT-002@legacy": Failed,
		"CORE-NAMING-001@legacy": ExpectedFailure, "CORE-NAMING-001@modern": ExpectedFailure,
		"CORE-NAMING-002@legacy": StaleBaseline, "CORE-NAMING-002@modern": NotSelected,
		"CORE-RESULT-003@modern": ExpectedFailure, "CORE-RESULT-003@legacy": Passed,
		"SEC-WRAP-001@legacy": NotApplicable, "SEC-WRAP-002@legacy": NotSelected,
	}
	for key, v := range want {
		id, era := SplitKey(key)
		if o, _ := res.Outcome(id, era); o.Verdict != v {
			t.Errorf("%s: %s, want %s", key, o.Verdict, v)
		}
	}
	if res.OK || res.Passed != 3 || res.Failed != 2 || res.Expected != 3 || res.Stale != 1 || res.NotApplicable != 1 {
		t.Errorf("totals: %+v", res)
	}
	if len(res.Outcomes) != len(Keys()) || res.Skipped != len(Keys())-8 {
		t.Errorf("%d outcomes for %d keys, skipped %d", len(res.Outcomes), len(Keys()), res.Skipped)
	}
	var out bytes.Buffer
	res.WriteSummary(&out)
	last := strings.TrimSpace(out.String())
	last = last[strings.LastIndex(last, "\n")+1:]
	if wantLast := fmt.Sprintf("3 passed, 2 failed, %d skipped", res.Skipped); last != wantLast {
		t.Errorf("closing line %q, want %q", last, wantLast)
	}
	for _, m := range []string{"XFAIL CORE-NAMING-001@legacy", "XFAIL CORE-NAMING-001@modern", "STALE CORE-NAMING-002@legacy",
		"FAIL  CORE-CONNECT-002@legacy", "N/A   SEC-WRAP-001@legacy", "journal: boom", "eras: legacy, modern",
		"  era modern: 1 passed, 0 failed, 2 expected failures, 0 not applicable"} {
		if !strings.Contains(out.String(), m) {
			t.Errorf("summary lacks %q:\n%s", m, out.String())
		}
	}
	v := res.Verdicts()
	if !slices.Equal(v.Eras, Both) || len(v.Verdicts) != len(Keys()) || v.Verdicts[0].Era != driver.EraLegacy {
		t.Errorf("verdict report: eras %v, %d verdicts, first %+v", v.Eras, len(v.Verdicts), v.Verdicts[0])
	}

	// A spec interrupted from outside has no verdict, whatever the
	// baseline says of it, and fails the run as a whole.
	interrupted := types.Report{SpecReports: types.SpecReports{
		specReport("CORE-CONNECT-001@legacy", types.SpecStatePassed, ""),
		specReport("CORE-NAMING-001@legacy", types.SpecStateInterrupted, "interrupted by user: await timed out"),
	}}
	ires := summarize(s, interrupted)
	if o, _ := ires.Outcome("CORE-NAMING-001", driver.EraLegacy); o.Verdict != NotSelected || ires.OK || ires.Failed != 0 || ires.Expected != 0 || ires.Passed != 1 {
		t.Errorf("interrupted spec: verdict %s, totals %+v", o.Verdict, ires)
	}
	if len(ires.SuiteFailures) != 1 || !strings.Contains(ires.SuiteFailures[0], "interrupted while CORE-NAMING-001@legacy ran") {
		t.Errorf("interrupted run's suite failures: %q", ires.SuiteFailures)
	}

	// Without failures the run passes; an expected failure alone too.
	s.cfg.Baseline = &Baseline{File: "b.txt", Reasons: map[string]string{"CORE-CONNECT-002": "known"}}
	rep.SpecReports = rep.SpecReports[:3]
	if res := summarize(s, rep); !res.OK {
		t.Errorf("a run with only expected failures fails: %+v", res)
	}
}

// TestBaselineEras checks baseline entries with an era: they parse, an era
// the requirement does not apply to is refused, and so is an id listed
// both for every era and for one.
func TestBaselineEras(t *testing.T) {
	var legacyOnly Requirement
	for _, r := range Requirements() {
		if !r.Has(driver.EraModern) {
			legacyOnly = r
			break
		}
	}
	for _, c := range []struct {
		text, err string
	}{
		{"CORE-RESULT-003@modern why\nCORE-NAMING-001 why\n", ""},
		{"CORE-RESULT-003@future why\n", "CORE-RESULT-003@future"},
		{"CORE-RESULT-003 why\nCORE-RESULT-003@legacy why\n", "listed for every era and as CORE-RESULT-003@legacy"},
		{legacyOnly.ID + "@modern why\n", "applies to legacy"},
	} {
		b, err := ParseBaseline("b.txt", strings.NewReader(c.text))
		if err == nil {
			err = b.check()
		}
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: error %v, want one containing %q", c.text, err, c.err)
		}
	}
	b, _ := ParseBaseline("b.txt", strings.NewReader("CORE-RESULT-003@modern m\nCORE-NAMING-001 all\n"))
	for _, c := range []struct {
		key, reason string
		ok          bool
	}{
		{"CORE-RESULT-003@modern", "m", true}, {"CORE-RESULT-003@legacy", "", false},
		{"CORE-NAMING-001@legacy", "all", true}, {"CORE-NAMING-001@modern", "all", true}, {"CORE-NAMING-001", "all", true},
		{"CORE-RESULT-003", "", false},
	} {
		if r, ok := b.ReasonFor(c.key); r != c.reason || ok != c.ok {
			t.Errorf("ReasonFor(%s) = %q, %v; want %q, %v", c.key, r, ok, c.reason, c.ok)
		}
	}
}

// TestEvidenceProblems checks the evidence rule: a spec must prove every
// claim it declared and at least one claim from the journal, the OS or the
// events.
func TestEvidenceProblems(t *testing.T) {
	h := &H{}
	if len(h.evidenceProblems()) != 1 {
		t.Errorf("a spec that observed nothing passes: %v", h.evidenceProblems())
	}
	h.observed = append(h.observed, observation{src: Response, claim: "answered"})
	if len(h.evidenceProblems()) != 1 {
		t.Errorf("responses alone are enough evidence: %v", h.evidenceProblems())
	}
	h.Claim(Journal, "one launch")
	if p := h.evidenceProblems(); len(p) != 2 || !strings.Contains(p[0], "one launch") {
		t.Errorf("an unproven claim passes: %v", p)
	}
	h.claims[0].proof = &observation{src: Journal, claim: "one launch"}
	h.observed = append(h.observed, *h.claims[0].proof)
	if p := h.evidenceProblems(); len(p) != 0 {
		t.Errorf("a proven spec fails: %v", p)
	}
}
