package event

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/runtime/docsection"
)

// RenderVocabulary renders the event vocabulary as a Markdown table.
func renderVocabulary() string {
	var b strings.Builder
	b.WriteString("| kind | meaning | attributes |\n| --- | --- | --- |\n")
	for _, k := range Kinds() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", k.Kind, k.Meaning, k.Attrs)
	}
	return b.String()
}

func TestVocabularyDocumented(t *testing.T) {
	if err := docsection.Check("../../docs/TESTING.md", "events", renderVocabulary()); err != nil {
		t.Fatal(err)
	}
}

// TestEveryKindListed parses kind.go and checks that every Kind constant is
// in Kinds() and the other way round, so the documented vocabulary and the
// code cannot drift apart.
func TestEveryKindListed(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "kind.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
				continue
			}
			for _, v := range vs.Values {
				lit := v.(*ast.BasicLit)
				declared[strings.Trim(lit.Value, `"`)] = true
			}
		}
	}
	listed := map[string]bool{}
	for _, k := range Kinds() {
		listed[string(k.Kind)] = true
		if !declared[string(k.Kind)] {
			t.Errorf("Kinds() lists %s, which kind.go does not declare", k.Kind)
		}
	}
	for k := range declared {
		if !listed[k] {
			t.Errorf("kind.go declares %s, which Kinds() does not list", k)
		}
	}
}
