//go:build mcplife_faults

package host

import (
	"encoding/json"
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

// cacheKey is the config hash a cache lookup uses: with cache-ignores-hash,
// the hash stored in the record at path, so any record matches.
func (f faults) cacheKey(path, hash string) string {
	if !f.on(faultCacheIgnoresKey) {
		return hash
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return hash
	}
	var rec struct {
		ConfigHash string `json:"configHash"`
	}
	if json.Unmarshal(b, &rec) != nil || rec.ConfigHash == "" {
		return hash
	}
	return rec.ConfigHash
}
