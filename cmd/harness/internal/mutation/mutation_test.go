package mutation

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const unitJSON = `{"files":[{"file_name":"backoff.go","mutations":[
 {"type":"ARITHMETIC_BASE","status":"KILLED","line":32,"column":28},
 {"type":"CONDITIONALS_BOUNDARY","status":"LIVED","line":70,"column":17},
 {"type":"CONDITIONALS_NEGATION","status":"LIVED","line":79,"column":7},
 {"type":"INVERT_NEGATIVES","status":"NOT COVERED","line":86,"column":32}]}]}`

const confJSON = `{"files":[{"file_name":"runtime/backoff/backoff.go","mutations":[
 {"type":"ARITHMETIC_BASE","status":"LIVED","line":32,"column":28},
 {"type":"CONDITIONALS_BOUNDARY","status":"LIVED","line":70,"column":17},
 {"type":"CONDITIONALS_NEGATION","status":"TIMED OUT","line":79,"column":7},
 {"type":"INVERT_NEGATIVES","status":"NOT COVERED","line":86,"column":32}]}]}`

func TestTableUnionsModes(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"unit-runtime_backoff.json": unitJSON, "conformance-runtime_backoff.json": confJSON, "notes.txt": "x", "stress-stdio.json": "{}"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := Table(runs)
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	r := rows[0]
	if r.Package != "runtime/backoff" || r.Mutants != 4 {
		t.Errorf("row %+v", r)
	}
	if u := r.Modes["unit"]; u != (Score{Killed: 1, Lived: 2, Covered: 3}) {
		t.Errorf("unit %+v", u)
	}
	if c := r.Modes["conformance"]; c != (Score{Killed: 1, Lived: 2, Covered: 3}) {
		t.Errorf("conformance %+v", c)
	}
	// Whole: 32:28 killed by unit, 79:7 timed out under conformance, 70:17
	// lived everywhere, 86:32 covered by none.
	if r.Whole != (Score{Killed: 2, Lived: 1, Covered: 3}) {
		t.Errorf("whole %+v", r.Whole)
	}
	if len(r.Survivors) != 1 || r.Survivors[0].String() != "runtime/backoff/backoff.go:70:17 CONDITIONALS_BOUNDARY" {
		t.Errorf("survivors %v", r.Survivors)
	}
	if len(r.ConformanceSurvivors) != 2 {
		t.Errorf("conformance survivors %v", r.ConformanceSurvivors)
	}
	var b bytes.Buffer
	Write(&b, rows, true)
	for _, want := range []string{"runtime/backoff", "1/3 (33.3%)", "2/3 (66.7%)", "survivor runtime/backoff/backoff.go:70:17"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestReadDirEmpty(t *testing.T) {
	if _, err := ReadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), ".ci/mutation") {
		t.Fatalf("err %v", err)
	}
}

func TestTableMergesFileSubsets(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, at time.Time) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	write("conformance-runtime_host-only-call+probe.json", `{"files":[
 {"file_name":"call.go","mutations":[{"type":"CONDITIONALS_NEGATION","status":"LIVED","line":10,"column":2},{"type":"CONDITIONALS_BOUNDARY","status":"LIVED","line":12,"column":5}]},
 {"file_name":"probe.go","mutations":[{"type":"CONDITIONALS_NEGATION","status":"KILLED","line":20,"column":3}]}]}`, t0)
	// A later run over call.go again: its outcome for 10:2 wins, and a
	// mutant the earlier run saw at 12:5 (its line moved since) is gone.
	write("conformance-runtime_host-only-call.json", `{"files":[
 {"file_name":"call.go","mutations":[{"type":"CONDITIONALS_NEGATION","status":"KILLED","line":10,"column":2}]}]}`, t0.Add(time.Hour))
	write("conformance-runtime_host-only-server.json", `{"files":[
 {"file_name":"server.go","mutations":[{"type":"CONDITIONALS_BOUNDARY","status":"LIVED","line":30,"column":4}]}]}`, t0.Add(2*time.Hour))
	write("unit-runtime_host.json", `{"files":[
 {"file_name":"call.go","mutations":[{"type":"CONDITIONALS_NEGATION","status":"LIVED","line":10,"column":2}]},
 {"file_name":"server.go","mutations":[{"type":"CONDITIONALS_BOUNDARY","status":"LIVED","line":30,"column":4}]},
 {"file_name":"state.go","mutations":[{"type":"CONDITIONALS_BOUNDARY","status":"KILLED","line":5,"column":1}]}]}`, t0)
	runs, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := Table(runs)
	if len(rows) != 1 || rows[0].Package != "runtime/host" {
		t.Fatalf("want one runtime/host row, got %+v", rows)
	}
	r := rows[0]
	if c := r.Modes["conformance"]; c != (Score{Killed: 2, Lived: 1, Covered: 3}) {
		t.Errorf("conformance %+v, want the three subsets merged, the later call.go run winning", c)
	}
	if got := strings.Join(r.Partial["conformance"], " "); got != "call.go probe.go server.go" {
		t.Errorf("partial conformance files %q", got)
	}
	if _, ok := r.Partial["unit"]; ok {
		t.Errorf("unit ran over the whole package, but Partial has it: %v", r.Partial)
	}
	if r.Mutants != 4 || r.Whole != (Score{Killed: 3, Lived: 1, Covered: 4}) {
		t.Errorf("mutants %d whole %+v", r.Mutants, r.Whole)
	}
	var b bytes.Buffer
	Write(&b, rows, false)
	for _, want := range []string{"2/3 (66.7%)*", "* runtime/host conformance: only call.go probe.go server.go"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "-only-") {
		t.Errorf("a subset's file name leaked into the table:\n%s", b.String())
	}
}

func TestDropCompletePartials(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "runtime", "host")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"call.go", "probe.go", "call_test.go"} {
		if err := os.WriteFile(filepath.Join(pkg, f), []byte("package host\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rows := []Row{
		{Package: "runtime/host", Partial: map[string][]string{"unit": {"call.go", "probe.go"}, "conformance": {"call.go"}}},
		{Package: "runtime/gone", Partial: map[string][]string{"unit": {"a.go"}}},
	}
	DropCompletePartials(rows, root)
	if _, ok := rows[0].Partial["unit"]; ok {
		t.Errorf("unit covered every file of runtime/host but is still partial: %v", rows[0].Partial)
	}
	if got := rows[0].Partial["conformance"]; len(got) != 1 {
		t.Errorf("conformance covered call.go only but lost its mark: %v", rows[0].Partial)
	}
	if _, ok := rows[1].Partial["unit"]; !ok {
		t.Errorf("a package not found under root lost its mark: %v", rows[1].Partial)
	}
}
