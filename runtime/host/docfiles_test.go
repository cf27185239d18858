package host

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocFileMap: the "# Files" section of doc.go names every non-test Go
// file of the package, and only files that exist.
func TestDocFileMap(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "// # Files")
	if !ok {
		t.Fatal("doc.go has no # Files section")
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b[a-z_]+\.go\b`).FindAllString(section, -1) {
		listed[m] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "doc.go" {
			continue
		}
		if !listed[f] {
			t.Errorf("doc.go's file map does not list %s", f)
		}
	}
	for f := range listed {
		if !slices.Contains(files, f) {
			t.Errorf("doc.go's file map lists %s, which does not exist", f)
		}
	}
}
