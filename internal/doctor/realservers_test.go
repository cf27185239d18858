package doctor_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/doctor"
	"github.com/mcplife/mcplife/internal/realservers"
)

// TestRealServers runs doctor against @modelcontextprotocol/server-everything
// and server-memory from npm, next to one broken entry: both real servers
// connect with their tool counts (realservers.Pinned), the
// broken one is reported with its file, line and node's reason, and nothing
// is left running (TestMain checks).
func TestRealServers(t *testing.T) {
	mods := realservers.Modules(t, "../..", "TestRealServers")
	work := t.TempDir()
	cfg := writeConfig(t, work, "mcp.json", map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{filepath.Join(mods, "server-everything", "dist", "index.js"), "stdio"}},
		"memory": map[string]any{"command": "node", "args": []string{filepath.Join(mods, "server-memory", "dist", "index.js")},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(work, "memory.jsonl")}},
		"broken": map[string]any{"command": "node", "args": []string{filepath.Join(work, "missing-server.js")}},
	})
	rep := check(t, doctor.Options{Files: []string{cfg}})
	for _, p := range realservers.Pinned() {
		if s := server(t, rep, p.Name); s.Status != doctor.StatusOK || s.Tools != p.Tools || s.Line == 0 {
			t.Errorf("%s: want ok with %d tools (realservers.Pinned, %s %s): %+v", p.Name, p.Tools, p.Package, p.Version, s)
		}
	}
	s := server(t, rep, "broken")
	if s.Status != doctor.StatusFailed || s.File != cfg || s.Line == 0 || !strings.Contains(strings.Join(s.Stderr, "\n"), "Cannot find module") {
		t.Errorf("broken: %+v", s)
	}
	if rep.Failed != 1 {
		t.Errorf("Failed = %d, want 1", rep.Failed)
	}
}
