//go:build mcplife_faults

package faultenv

import (
	"os"
	"slices"
	"strings"
)

// Env names the deliberate defects to inject, comma-separated.
const Env = "MCPLIFE_FAULTS"

// On reports whether the deliberate defect name is listed in MCPLIFE_FAULTS.
func On(name string) bool {
	return slices.Contains(strings.Split(os.Getenv(Env), ","), name)
}
