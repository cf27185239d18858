//go:build mcplife_faults

package host

import (
	"os"
	"strings"
)

// FaultsEnv names the deliberate defects a runtime built with the
// mcplife_faults tag injects, comma-separated. The conformance suite uses
// them to prove that each of its requirements catches the defect it names.
// The shipped runtime (no tag) has no fault code at all.
const FaultsEnv = "MCPLIFE_FAULTS"

type faults map[string]bool

func loadFaults() faults {
	f := faults{}
	for _, name := range strings.Split(os.Getenv(FaultsEnv), ",") {
		if name = strings.TrimSpace(name); name != "" {
			f[name] = true
		}
	}
	return f
}

func (f faults) on(name string) bool { return f[name] }
