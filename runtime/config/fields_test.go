package config

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/mcplife/mcplife/internal/docsection"
)

// parsedKeys returns every server-entry key parse.go reads: the first
// argument of the entryCheck readers, the index of c.fields, and (prefixed
// with "auth.") the keys read from the auth object.
func parsedKeys(t *testing.T) []string {
	t.Helper()
	var keys []string
	add := func(k string) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	lit := func(e ast.Expr) (string, bool) {
		b, ok := e.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(b.Value)
		return s, err == nil
	}
	for _, file := range []string{"parse.go", "oauth.go"} {
		f, err := goparser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		inspectKeys(f, add, lit)
	}
	return keys
}

// inspectKeys adds the server-entry keys f reads.
func inspectKeys(f *ast.File, add func(string), lit func(ast.Expr) (string, bool)) {
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || len(n.Args) == 0 {
				return true
			}
			recv, _ := sel.X.(*ast.Ident)
			k, ok := lit(n.Args[0])
			if !ok || recv == nil {
				return true
			}
			switch {
			case recv.Name == "c" && slices.Contains([]string{"str", "strList", "strMap", "boolean", "millis"}, sel.Sel.Name):
				add(k)
			case recv.Name == "a" && sel.Sel.Name == "get":
				add("auth." + k)
			}
		case *ast.IndexExpr:
			sel, ok := n.X.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "fields" {
				return true
			}
			if k, ok := lit(n.Index); ok {
				add(k)
			}
		}
		return true
	})
}

func TestFieldsMatchParser(t *testing.T) {
	keys := parsedKeys(t)
	if len(keys) < 10 {
		t.Fatalf("found only %d keys in parse.go (%v); has the parser's shape changed?", len(keys), keys)
	}
	var documented []string
	for _, f := range Fields() {
		documented = append(documented, f.Name)
		if !slices.Contains(keys, f.Name) {
			t.Errorf("Fields documents %q, which parse.go does not read", f.Name)
		}
	}
	for _, k := range keys {
		if !slices.Contains(documented, k) {
			t.Errorf("parse.go reads %q, which Fields (runtime/config/fields.go) does not document", k)
		}
	}
}

func TestFieldsDocumented(t *testing.T) {
	if err := docsection.Check("../../docs/DRIVER.md", DocSectionFields, FieldSection()); err != nil {
		t.Fatal(err)
	}
}
