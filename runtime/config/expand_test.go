package config

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := envOf("A", "1", "B", "two", "EMPTY", "")
	tests := []struct{ in, want string }{
		{"${A}", "1"},
		{"x${A}y${B}z", "x1ytwoz"},
		{"${UNSET}", "${UNSET}"},
		{"${UNSET:-def}", "def"},
		{"${A:-def}", "1"},
		{"${EMPTY}", ""},
		{"${EMPTY:-def}", "def"},
		{"${UNSET:-}", ""},
		{"${UNSET:-a b/c}", "a b/c"},
		{"$A", "$A"},
		{"${1BAD}", "${1BAD}"},
		{"${A", "${A"},
		{"${input:token}", "${input:token}"},
		{"no refs", "no refs"},
		{"${B}${UNSET}", "two${UNSET}"},
	}
	for _, tt := range tests {
		if got := Expand(tt.in, env); got != tt.want {
			t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// The replacement is not expanded again.
	if got := Expand("${X}", envOf("X", "${A}", "A", "1")); got != "${A}" {
		t.Errorf("re-expanded: %q", got)
	}
	t.Setenv("MCPLIFE_EXPAND_TEST", "proc")
	if got := Expand("${MCPLIFE_EXPAND_TEST}", nil); got != "proc" {
		t.Errorf("nil lookup: %q", got)
	}
}

func TestReferences(t *testing.T) {
	tests := []struct{ in, want string }{
		{"--token=${TOKEN} ${HOME}/x ${TOKEN} ${D:-dflt}", "TOKEN HOME D"},
		{"$A ${1BAD} ${A ${input:x}", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(References(tt.in), " "); got != tt.want {
			t.Errorf("References(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
