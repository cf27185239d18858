//go:build !mcplife_faults

package faultenv

// On reports whether the deliberate defect name is injected: never in the
// shipped build.
func On(string) bool { return false }
