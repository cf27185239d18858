//go:build mcplife_faults

package config

import (
	"os"
	"slices"
	"strings"
)

// faultOn reports whether MCPLIFE_FAULTS names the deliberate defect name.
// Only builds with the mcplife_faults tag have it; runtime/host's faults.go
// lists every defect, and the conformance suite's teeth table what each one
// breaks.
func faultOn(name string) bool {
	return slices.Contains(strings.Split(os.Getenv("MCPLIFE_FAULTS"), ","), name)
}
