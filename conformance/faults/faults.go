package faults

import (
	"embed"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/internal/unidiff"
)

// Env names the defects a binary made by Build injects, comma-separated.
const Env = "MCPLIFE_FAULTS"

//go:embed patches/*.patch
var patchFS embed.FS

// Fault is one deliberate defect.
type Fault struct {
	Name        string // what Env lists, the patch's file name without .patch
	Description string // the patch's first paragraph: what is broken
	Patch       *unidiff.Patch
}

// All returns every defect, sorted by name.
func All() ([]Fault, error) {
	entries, err := patchFS.ReadDir("patches")
	if err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	var out []Fault
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".patch")
		if !ok {
			continue
		}
		data, err := patchFS.ReadFile(path.Join("patches", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("faults: %w", err)
		}
		p, err := unidiff.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("faults: patches/%s: %w", e.Name(), err)
		}
		out = append(out, Fault{Name: name, Description: p.Preamble, Patch: p})
	}
	slices.SortFunc(out, func(a, b Fault) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Names returns the names of every defect, sorted.
func Names() ([]string, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(all))
	for i, f := range all {
		names[i] = f.Name
	}
	return names, nil
}
