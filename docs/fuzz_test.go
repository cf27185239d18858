// Package docs holds the tests that keep docs/*.md sections in step with
// code that no single package owns.
package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcplife/mcplife/internal/docsection"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fuzzTarget is one native fuzz target found in the tree.
type fuzzTarget struct {
	Pkg, Name, Doc string
}

// fuzzTargets parses every *_test.go file of the module and returns its
// fuzz targets sorted by package and name, as .ci/fuzz runs them. It fails
// the test for a target .ci/fuzz would not find (its grep wants
// "func FuzzXxx(f *testing.F)") or that has no committed seed corpus.
func fuzzTargets(t *testing.T, root string) []fuzzTarget {
	t.Helper()
	var out []fuzzTarget
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") || !isFuzzSignature(fn) {
				continue
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			pkg := "./" + filepath.ToSlash(rel)
			params := fn.Type.Params.List
			if len(params[0].Names) != 1 || params[0].Names[0].Name != "f" {
				t.Errorf("%s: %s: name its parameter f (func %s(f *testing.F)) so that .ci/fuzz finds it", path, fn.Name.Name, fn.Name.Name)
			}
			if fn.Doc == nil {
				t.Errorf("%s: %s has no doc comment saying what it checks", path, fn.Name.Name)
				continue
			}
			corpus, _ := os.ReadDir(filepath.Join(filepath.Dir(path), "testdata", "fuzz", fn.Name.Name))
			if len(corpus) == 0 {
				t.Errorf("%s: %s has no committed seed corpus in testdata/fuzz/%s", path, fn.Name.Name, fn.Name.Name)
			}
			doc := strings.Join(strings.Fields(fn.Doc.Text()), " ")
			out = append(out, fuzzTarget{Pkg: pkg, Name: fn.Name.Name, Doc: doc})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pkg != out[j].Pkg {
			return out[i].Pkg < out[j].Pkg
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// isFuzzSignature reports whether fn is func(*testing.F) with no results.
func isFuzzSignature(fn *ast.FuncDecl) bool {
	ps := fn.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) > 1 || fn.Type.Results != nil {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "testing" && sel.Sel.Name == "F"
}

// TestFuzzTargetsDocumented keeps the Fuzzing section of docs/TESTING.md
// equal to the fuzz targets in the tree and their doc comments.
func TestFuzzTargetsDocumented(t *testing.T) {
	targets := fuzzTargets(t, "..")
	if len(targets) == 0 {
		t.Fatal("no fuzz targets found")
	}
	var b strings.Builder
	b.WriteString("| Target | Package | Property checked |\n|---|---|---|\n")
	for _, ft := range targets {
		doc := strings.TrimPrefix(ft.Doc, ft.Name+" ")
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", ft.Name, ft.Pkg, strings.ReplaceAll(doc, "|", `\|`))
	}
	if err := docsection.Check("TESTING.md", "fuzz-targets", b.String()); err != nil {
		t.Fatal(err)
	}
}
