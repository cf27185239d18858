package docsection

import (
	"errors"
	"os"
	"path/filepath"
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
