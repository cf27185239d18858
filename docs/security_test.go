package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/conformance"
)

// TestSecurityCoverageExists checks that every test, fuzz target and
// requirement SECURITY.md names as covering a surface exists.
func TestSecurityCoverageExists(t *testing.T) {
	b, err := os.ReadFile("SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	funcs := testFuncs(t, "..")
	names := regexp.MustCompile("`((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)`").FindAllStringSubmatch(text, -1)
	if len(names) == 0 {
		t.Fatal("SECURITY.md names no test")
	}
	for _, m := range names {
		if !funcs[m[1]] {
			t.Errorf("SECURITY.md names %s, which no _test.go file defines", m[1])
		}
	}
	reqs := map[string]bool{}
	for _, r := range conformance.Requirements() {
		reqs[r.ID] = true
	}
	ids := regexp.MustCompile(`\b[A-Z]+-[A-Z]+-[0-9]{3}\b`).FindAllString(text, -1)
	if len(ids) == 0 {
		t.Fatal("SECURITY.md names no requirement")
	}
	for _, id := range ids {
		if !reqs[id] {
			t.Errorf("SECURITY.md names requirement %s, which the suite does not have", id)
		}
	}
	// Every row of the surfaces table names at least one test or
	// requirement.
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| Surface") || strings.HasPrefix(line, "| Source") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			continue
		}
		cov := cells[3]
		if !regexp.MustCompile("`(Test|Fuzz)|[A-Z]+-[A-Z]+-[0-9]{3}").MatchString(cov) {
			t.Errorf("row %q names no test", strings.TrimSpace(cells[0]))
		}
	}
}

// testFuncs returns the names of the top-level functions of every
// *_test.go file under root.
func testFuncs(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil {
				out[fd.Name.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
