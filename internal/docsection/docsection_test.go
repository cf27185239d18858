package docsection

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestReplace(t *testing.T) {
	doc := []byte("head\n<!-- BEGIN GENERATED: x -->\nold\n<!-- END GENERATED: x -->\ntail\n")
	got, err := Replace(doc, "x", "new\nlines\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "head\n<!-- BEGIN GENERATED: x -->\nnew\nlines\n<!-- END GENERATED: x -->\ntail\n"
	if string(got) != want {
		t.Fatalf("Replace:\n%s\nwant:\n%s", got, want)
	}
	if _, err := Replace(doc, "y", "z"); !errors.Is(err, ErrNoSection) {
		t.Fatalf("missing section: got %v, want ErrNoSection", err)
	}
}

func TestCheckStaleAndUpdate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "doc.md")
	os.WriteFile(file, []byte("<!-- BEGIN GENERATED: s -->\nold\n<!-- END GENERATED: s -->\n"), 0o644)
	t.Setenv(UpdateEnv, "")
	var stale *StaleError
	if err := Check(file, "s", "new"); !errors.As(err, &stale) || stale.Name != "s" {
		t.Fatalf("Check on stale doc: got %v, want *StaleError naming s", err)
	}
	t.Setenv(UpdateEnv, "1")
	if err := Check(file, "s", "new"); err != nil {
		t.Fatal(err)
	}
	t.Setenv(UpdateEnv, "")
	if err := Check(file, "s", "new"); err != nil {
		t.Fatalf("after update: %v", err)
	}
}

func TestCheckValue(t *testing.T) {
	file := filepath.Join(t.TempDir(), "doc.md")
	os.WriteFile(file, []byte("intro\nAll 106\nrequirements pass; all 106 requirements.\n"), 0o644)
	re := regexp.MustCompile(`(?i)all (\d+)\s+requirements`)
	t.Setenv(UpdateEnv, "")
	var wrong *WrongValueError
	if err := CheckValue(file, re, "118"); !errors.As(err, &wrong) || wrong.Line != 2 || wrong.Got != "106" || wrong.Want != "118" {
		t.Fatalf("CheckValue on a stale count: got %v, want *WrongValueError at line 2, 106 for 118", err)
	}
	if err := CheckValue(file, regexp.MustCompile(`none (\d+)`), "1"); !errors.Is(err, ErrNoSection) {
		t.Fatalf("CheckValue without a match: got %v, want ErrNoSection", err)
	}
	t.Setenv(UpdateEnv, "1")
	if err := CheckValue(file, re, "118"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(file)
	if want := "intro\nAll 118\nrequirements pass; all 118 requirements.\n"; string(got) != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	t.Setenv(UpdateEnv, "")
	if err := CheckValue(file, re, "118"); err != nil {
		t.Fatalf("after update: %v", err)
	}
}
