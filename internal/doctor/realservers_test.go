package doctor_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/doctor"
)

// requireNodeEnv, set to 1 (CI sets it), turns the skips of tests that
// need Node.js and the npm servers into failures.
const requireNodeEnv = "MCPLIFE_REQUIRE_NODE"

// realServers returns the directory of the installed npm servers
// (fixtures/real-servers/node_modules/@modelcontextprotocol), running
// `npm ci` there first when they are missing and npm is available. It
// skips the test when node or the packages are missing, or fails it when
// MCPLIFE_REQUIRE_NODE=1.
func realServers(t *testing.T) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv(requireNodeEnv) == "1" {
			t.Fatalf(format+" (%s=1 requires it)", append(args, requireNodeEnv)...)
		}
		t.Skipf(format+" (set %s=1 to make this a failure)", append(args, requireNodeEnv)...)
	}
	if _, err := exec.LookPath("node"); err != nil {
		unavailable("node is not installed: the real npm MCP servers cannot run")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "real-servers"))
	if err != nil {
		t.Fatal(err)
	}
	mods := filepath.Join(dir, "node_modules", "@modelcontextprotocol")
	if _, err := os.Stat(filepath.Join(mods, "server-memory", "dist", "index.js")); err != nil {
		npm, lerr := exec.LookPath("npm")
		if lerr != nil {
			unavailable("the npm servers are not installed in %s and npm is missing to run npm ci", dir)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			unavailable("npm ci in %s failed: %v\n%s", dir, err, out)
		}
	}
	return mods
}

// TestRealServers runs doctor against @modelcontextprotocol/server-everything
// and server-memory from npm, next to one broken entry: both real servers
// connect with their tool counts (everything: 12 tools plus the tasks tool
// it registers for go-sdk's client capabilities; its roots tool needs the
// roots capability, which the runtime advertises only to a server whose
// config lists roots; memory: 9), the
// broken one is reported with its file, line and node's reason, and nothing
// is left running (TestMain checks).
func TestRealServers(t *testing.T) {
	mods := realServers(t)
	work := t.TempDir()
	cfg := writeConfig(t, work, "mcp.json", map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{filepath.Join(mods, "server-everything", "dist", "index.js"), "stdio"}},
		"memory": map[string]any{"command": "node", "args": []string{filepath.Join(mods, "server-memory", "dist", "index.js")},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(work, "memory.jsonl")}},
		"broken": map[string]any{"command": "node", "args": []string{filepath.Join(work, "missing-server.js")}},
	})
	rep := check(t, doctor.Options{Files: []string{cfg}})
	for name, tools := range map[string]int{"everything": 13, "memory": 9} {
		if s := server(t, rep, name); s.Status != doctor.StatusOK || s.Tools != tools || s.Line == 0 {
			t.Errorf("%s: want ok with %d tools: %+v", name, tools, s)
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
