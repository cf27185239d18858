// Package fixturebuild builds the fixture MCP server (fixtures/mcp-fixture)
// as a program of its own, for the tests whose suites start hundreds of
// fixture processes.
//
// A test binary can play the fixture itself, but every process it starts
// then runs the test binary's package initialization (ginkgo, the suite's
// catalogue) and, under `go test -race`, the race detector: in a
// conformance run the fixture processes took two thirds of the CPU. The
// program built here has neither.
package fixturebuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Package is the import path of the fixture's main package.
const Package = "github.com/mcplife/mcplife/fixtures/mcp-fixture"

// Build compiles the fixture into dir/mcp-fixture with the go command on
// PATH and returns the program's path. The build runs in the module that
// holds the working directory, without the race detector (GOFLAGS is
// cleared of -race), and is quick once the build cache holds the fixture's
// packages.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "mcp-fixture")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, Package)
	cmd.Env = append(os.Environ(), "GOFLAGS="+withoutRace(os.Getenv("GOFLAGS")))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", Package, err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// withoutRace drops -race from a GOFLAGS value.
func withoutRace(goflags string) string {
	var kept []string
	for _, f := range strings.Fields(goflags) {
		if f != "-race" && f != "--race" && f != "-race=true" {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, " ")
}
