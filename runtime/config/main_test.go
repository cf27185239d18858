package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// envOf is a fake environment.
func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return mapLookup(m)
}

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeJSON(t *testing.T, path string, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, path, string(b))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// findDiag returns the diagnostics about server and field.
func findDiag(diags []Diagnostic, server, field string) []Diagnostic {
	var out []Diagnostic
	for _, d := range diags {
		if d.Server == server && d.Field == field {
			out = append(out, d)
		}
	}
	return out
}

func serverNames(list []*Server) string {
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}

func byName(list []*Server, name string) *Server {
	for _, s := range list {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func diagStrings(diags []Diagnostic) string {
	var b strings.Builder
	for i := range diags {
		b.WriteString(string(diags[i].Severity) + ": " + diags[i].Error() + "\n")
	}
	return b.String()
}

func mustIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v does not match %v", err, target)
	}
}
