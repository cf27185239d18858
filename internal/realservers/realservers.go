// Package realservers gives tests the npm MCP servers installed under
// fixtures/real-servers (@modelcontextprotocol/server-everything, -memory,
// ...): it runs `npm ci` there when they are missing and npm is available,
// and skips the test when Node.js or the packages cannot be had, unless
// RequireNodeEnv is 1 (as .ci/run sets it), which makes that a failure.
package realservers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// RequireNodeEnv, set to 1, turns the skips of tests that need Node.js and
// the npm servers into failures.
const RequireNodeEnv = "MCPLIFE_REQUIRE_NODE"

// Modules returns the directory of the installed packages,
// fixtures/real-servers/node_modules/@modelcontextprotocol, root being the
// module's root as seen from the test's package (for example "../.."). what
// names the test in the skip or failure message.
func Modules(t testing.TB, root, what string) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv(RequireNodeEnv) == "1" {
			t.Fatalf("%s: %s (%s=1 requires it)", what, msg, RequireNodeEnv)
		}
		t.Skipf("%s needs Node.js and the npm servers: %s (.ci/run installs them; set %s=1 to make this a failure)", what, msg, RequireNodeEnv)
	}
	if _, err := exec.LookPath("node"); err != nil {
		unavailable("node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join(root, "fixtures", "real-servers"))
	if err != nil {
		t.Fatal(err)
	}
	mods := filepath.Join(dir, "node_modules", "@modelcontextprotocol")
	if _, err := os.Stat(filepath.Join(mods, "server-everything", "dist", "index.js")); err == nil {
		return mods
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable("the packages are not installed in %s and npm is missing to run npm ci", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable("npm ci in %s failed: %v\n%s", dir, err, out)
	}
	return mods
}

// Command returns the command line that runs package pkg (e.g.
// "server-everything") with node, followed by args.
func Command(t testing.TB, root, pkg string, args ...string) []string {
	t.Helper()
	mods := Modules(t, root, pkg)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{node, filepath.Join(mods, pkg, "dist", "index.js")}, args...)
}

// Server is one npm MCP server pinned in fixtures/real-servers/package.json.
type Server struct {
	// Package is the npm package, "server-everything" for
	// @modelcontextprotocol/server-everything.
	Package string
	// Name is the server's name in the configs of the tests, the CI
	// scripts and the documents.
	Name string
	// Version is the pinned version.
	Version string
	// Tools is how many tools the reference runtime exposes from it, as
	// harness doctor counts them.
	Tools int
}

// Pinned returns the servers fixtures/real-servers pins, with the tool
// count of each at that version: the one place those counts are written.
// TestPinned checks them against package.json and the documents;
// TestRealServers (internal/doctor) and .ci/real-servers-doctor against the
// servers themselves.
func Pinned() []Server {
	return []Server{
		// 12 tools plus the tasks tool it registers for go-sdk's client
		// capabilities; its roots tool needs the roots capability, which
		// the runtime advertises only to a server whose config lists roots.
		{Package: "server-everything", Name: "everything", Version: "2026.8.31", Tools: 13},
		{Package: "server-memory", Name: "memory", Version: "2026.8.31", Tools: 9},
	}
}
