//go:build !mcplife_faults

package config

// faultOn is false in the shipped runtime and compiles away; builds with the
// mcplife_faults tag inject the defects MCPLIFE_FAULTS names (faults_on.go).
func faultOn(string) bool { return false }
