// Command harness runs the mcplife scenario catalog and conformance suite
// against the reference MCP runtime or any implementation that speaks the
// driver protocol (docs/DRIVER.md).
//
// Usage:
//
//	harness run [-run REGEX] [-shard I/N] [-dir DIR] [-impl 'CMD'] [-json FILE] [-junit FILE] [-timeline DIR] [-stress N] [-v]
//	harness list
//	harness conformance [-impl 'CMD'] [-shard I/N] [-stress N] [flags]
//	harness merge-reports -o OUT.json REPORT.json...
//	harness bench [-runs N] [-workload LIST] [-json FILE]
//	harness bench -compare OLD.json NEW.json
//	harness doctor [-config FILE ...] [-trust] [-json] [-watch]
//	harness timeline [-o FILE] TRACE...
//	harness driver
//	harness driver-check -impl 'CMD' [-json] [-timeout D]
//	harness mutation-report [-survivors] [-json] DIR
//	harness matrix [-dir conformance/drivers] [-out docs/MATRIX.md]
//	harness mcp-client [-scenario NAME] [-json] URL
//	harness fixture
//	harness proxy [flags] -- CMD ARGS... | -upstream URL
//	harness record -config FILE -o TRACE [-call SERVER:TOOL[:JSON]]... [-fault SERVER:RULE]...
//	harness repro [-o FILE] TRACE
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
	case "doctor":
		return runDoctor(rest, stdout, stderr)
	case "timeline":
		return runTimeline(rest, stdout, stderr)
	case "proxy":
		return runProxy(rest, os.Stdin, stdout, stderr)
	case "record":
		return runRecord(rest, stdout, stderr)
	case "repro":
		return runRepro(rest, stdout, stderr)
	case "driver":
		return runDriver(rest)
	case "driver-check":
		return runDriverCheck(rest, stdout, stderr)
	case "mutation-report":
		return runMutationReport(rest, stdout, stderr)
	case "bench":
		return runBench(rest, stdout, stderr)
	case "merge-reports":
		return runMerge(rest, stdout, stderr)
	case "matrix":
		return runMatrix(rest, stdout, stderr)
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
  run              run the scenario catalog (default: against the reference runtime)
  list             list the scenarios: number, name, description
  conformance      run the conformance suite against an implementation
  driver-check     check a driver's handshake and basic requests before running the suite
  matrix           render docs/MATRIX.md from the drivers' stored verdicts
  doctor           connect every configured MCP server and report what is wrong
  proxy            forward to a real MCP server and inject faults on demand
  record           record a session against real servers (events and wire) to a trace
  repro            turn a recorded trace into a scenario replaying it against the fixture
  timeline         draw a trace of lifecycle events as an SVG or HTML timeline
  bench            measure scale: 500 servers, concurrent calls, restart storm, cache gate
  merge-reports    merge the -json reports of sharded runs (-shard I/N)
  mutation-report  print the mutation scores of a .ci/mutation results directory
  mcp-client       connect one streamable-HTTP server through the runtime (the official MCP client suite's client)
  driver           serve the reference runtime over the driver protocol on stdin/stdout
  fixture          run the fixture MCP server (same MCP_FIXTURE_* knobs)
  version          print the harness version
`)
}
