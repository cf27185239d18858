package mutation

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	for name, body := range map[string]string{"unit-runtime_backoff.json": unitJSON, "conformance-runtime_backoff.json": confJSON, "notes.txt": "x"} {
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
