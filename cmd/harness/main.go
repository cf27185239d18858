// Command harness runs the mcplife scenario catalog and conformance suite
// against the reference MCP runtime or any implementation that speaks the
// driver protocol (docs/DRIVER.md).
//
// Usage:
//
//	harness run [-run REGEX] [-impl 'CMD'] [-json FILE] [-junit FILE] [-v]
//	harness list
//	harness conformance [-impl 'CMD'] [flags]
//	harness driver
//	harness mcp-client [-scenario NAME] [-json] URL
//	harness fixture
//	harness version
//
// Run as "mcp-fixture" (for example through a symlink), the binary is the
// fixture MCP server.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
)

// Version is the harness version; the driver protocol version is separate.
const Version = "0.1.0"

func main() {
	if strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe") == "mcp-fixture" {
		os.Exit(fixture.Main())
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a subcommand and returns the exit code: 0 success, 1 a
// failure of what ran, 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return runScenarios(rest, stdout, stderr)
	case "list":
		return runList(rest, stdout, stderr)
	case "conformance":
		return runConformance(rest, stdout, stderr)
	case "driver":
		return runDriver(rest)
	case "mcp-client":
		return runMCPClient(rest, stdout, stderr)
	case "fixture":
		return fixture.Main()
	case "version":
		fmt.Fprintf(stdout, "harness %s\n", Version)
		return 0
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "harness: unknown command %q\n", cmd)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: harness <command> [flags]

commands:
  run          run the scenario catalog (default: against the reference runtime)
  list         list the scenarios: number, name, description
  conformance  run the conformance suite against an implementation
  driver       serve the reference runtime over the driver protocol on stdin/stdout
  mcp-client   act as an MCP client for the official conformance suite (URL last)
  fixture      run the fixture MCP server (same MCP_FIXTURE_* knobs)
  version      print the harness version
`)
}
