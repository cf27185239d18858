package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/mcplife/mcplife/conformance"
	"github.com/mcplife/mcplife/internal/docsection"
	"github.com/mcplife/mcplife/scenarios"
)

// TestReadmeCounts checks the counts README.md states as today's: the
// requirements of the conformance suite and the scenarios of the catalog.
// (Its dated measurements keep the counts of their day.)
// MCPLIFE_UPDATE_DOCS=1 rewrites them.
func TestReadmeCounts(t *testing.T) {
	const readme = "../../README.md"
	list, err := scenarios.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		re   *regexp.Regexp
		want int
	}{
		{regexp.MustCompile(`Today the suite has\s+(\d+)\s+requirements`), len(conformance.Requirements())},
		{regexp.MustCompile(`requirements and the catalog\s+(\d+)\s+scenarios`), len(list)},
	} {
		if err := docsection.CheckValue(readme, c.re, strconv.Itoa(c.want)); err != nil {
			t.Error(err)
		}
	}
}

// TestCIRecipeGoVersion checks the Go version docs/CI-RECIPE.md says the
// harness needs against the go directive of go.mod.
func TestCIRecipeGoVersion(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	if err := docsection.CheckValue("../../docs/CI-RECIPE.md", regexp.MustCompile(`It needs Go (\d+\.\d+) or later`), string(m[1])); err != nil {
		t.Error(err)
	}
}
