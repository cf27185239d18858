package event

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/docsection"
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

// TestEveryKindListed parses kind*.go and checks that every Kind constant is
// in Kinds() and the other way round, so the documented vocabulary and the
// code cannot drift apart.
func TestEveryKindListed(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("kind*.go")
	if err != nil {
		t.Fatal(err)
	}
	var decls []ast.Decl
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	declared := map[string]bool{}
	for _, d := range decls {
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
			t.Errorf("Kinds() lists %s, which no kind*.go declares", k.Kind)
		}
	}
	for k := range declared {
		if !listed[k] {
			t.Errorf("kind.go declares %s, which Kinds() does not list", k)
		}
	}
}

// TestAttributesDocumented checks that every attribute of every kind has a
// documented type, and that the event table of docs/DRIVER.md is rendered
// from the vocabulary.
func TestAttributesDocumented(t *testing.T) {
	body, err := AttributeSection()
	if err != nil {
		t.Fatal(err)
	}
	if err := docsection.Check("../../docs/DRIVER.md", DocSectionAttributes, body); err != nil {
		t.Fatal(err)
	}
}

func TestCheckDocumentedTypesAndValues(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		okay bool
	}{
		{Event{Kind: ToolCallFinished, Attrs: map[string]any{"call": "c", "tool": "t", "outcome": "ok", "code": ""}}, true},
		{Event{Kind: ToolCallFinished, Attrs: map[string]any{"outcome": "success"}}, false},
		{Event{Kind: ToolCallFinished, Attrs: map[string]any{"call": int64(1)}}, false},
		{Event{Kind: ProcessExited, Attrs: map[string]any{"pid": int64(7), "status": "killed by SIGKILL", "planned": true}}, true},
		{Event{Kind: ProcessExited, Attrs: map[string]any{"pid": "7"}}, false},
		{Event{Kind: ProcessExited, Attrs: map[string]any{"planned": "yes"}}, false},
		{Event{Kind: CacheMiss, Attrs: map[string]any{"reason": "corrupt: /x: bad"}}, true},
		{Event{Kind: ProcessSignaled, Attrs: map[string]any{"pid": float64(3), "step": "SIGHUP"}}, false},
		{Event{Kind: ToolInjectionSignal, Attrs: map[string]any{"tool": "t", "signals": "mode-switch,chatml-system"}}, true},
		{Event{Kind: ToolInjectionSignal, Attrs: map[string]any{"signals": "mode-switch,evil"}}, false},
		{Event{Kind: ToolTimeout, Attrs: map[string]any{"timeout_ms": 1.5}}, false},
	} {
		err := CheckDocumented(tc.e)
		if (err == nil) != tc.okay {
			t.Errorf("%s %v: got %v, want ok=%v", tc.e.Kind, tc.e.Attrs, err, tc.okay)
		}
	}
}
