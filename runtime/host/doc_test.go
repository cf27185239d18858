package host

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/docsection"
)

// renderOptions renders the fields of Options with their doc comments,
// parsed from options.go, so docs/LIFECYCLE.md cannot drift from the code.
func renderOptions(t *testing.T) string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "options.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("| option | meaning and default |\n| --- | --- |\n")
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Options" {
			return true
		}
		for _, field := range ts.Type.(*ast.StructType).Fields.List {
			doc := strings.Join(strings.Fields(field.Doc.Text()), " ")
			for _, name := range field.Names {
				fmt.Fprintf(&b, "| `%s` | %s |\n", name.Name, doc)
			}
		}
		return false
	})
	return b.String()
}

func TestOptionsDocumented(t *testing.T) {
	if err := docsection.Check("../../docs/LIFECYCLE.md", "host-options", renderOptions(t)); err != nil {
		t.Fatal(err)
	}
}

// renderLimits renders Limits as the "limits" section of docs/LIFECYCLE.md.
func renderLimits() string {
	var b strings.Builder
	b.WriteString("| limit | default | config field | runtime option | when exceeded |\n| --- | --- | --- | --- | --- |\n")
	for _, l := range Limits() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", l.What, l.Default, l.Config, l.Option, l.Exceeded)
	}
	return b.String()
}

func TestLimitsDocumented(t *testing.T) {
	if err := docsection.Check("../../docs/LIFECYCLE.md", "limits", renderLimits()); err != nil {
		t.Fatal(err)
	}
}
