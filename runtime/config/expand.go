package config

import (
	"os"
	"regexp"
	"slices"
)

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Expand replaces ${VAR} and ${VAR:-default} in s using lookup. ${VAR:-default}
// uses default when VAR is unset or empty, as the shell does. A reference that
// cannot be resolved stays in the text literally. The replacement is not
// expanded again. A nil lookup means os.LookupEnv.
func Expand(s string, lookup func(string) (string, bool)) string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		v, ok := lookup(m[1])
		if m[2] != "" { // has :-default
			if !ok || v == "" {
				return m[3]
			}
			return v
		}
		if !ok {
			return ref
		}
		return v
	})
}

// mapLookup turns a map into a lookup function.
func mapLookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// References returns the names of the variables s refers to with ${VAR} or
// ${VAR:-default}, in order of first reference, each once: the variables
// whose values Expand may put into s.
func References(s string) []string {
	var names []string
	for _, m := range varRef.FindAllStringSubmatch(s, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}
