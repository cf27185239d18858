//go:build !mcplife_faults

package host

// faults is empty in the shipped runtime: every check is a constant false
// and compiles away. Builds with the mcplife_faults tag (used only by the
// conformance suite's own tests, to prove it catches broken runtimes) get
// faults_on.go instead.
type faults struct{}

func loadFaults() faults { return faults{} }

func (faults) on(string) bool { return false }

func (faults) cacheKey(_, hash string) string { return hash }
