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
//	harness doctor [-config FILE ...] [-trust] [-json] [-watch [-probe-interval D]] [-events FILE]
//	harness timeline [-o FILE] TRACE...
//	harness driver
//	harness driver-check -impl 'CMD' [-json] [-timeout D]
//	harness mutation-report [-survivors] [-json] DIR
//	harness matrix [-dir conformance/drivers] [-out docs/MATRIX.md]
//	harness mcp-client [-scenario NAME] [-protocol VERSION] [-json] URL
//	harness fixture
//	harness proxy [flags] -- CMD ARGS... | -upstream URL
//	harness record -config FILE -o TRACE [-call SERVER:TOOL[:JSON]]... [-fault SERVER:RULE]... [-until 'KIND [ATTR=VALUE...]']
//	harness repro [-o FILE] [-partial] TRACE
//	harness version
//
// Run as "mcp-fixture" (for example through a symlink), the binary is the
// fixture MCP server.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/internal/fixturelink"
)

// Version is the harness version; the driver protocol version is separate.
const Version = "0.1.0"

func main() {
	if fixturelink.Invoked(os.Args[0]) {
		os.Exit(fixture.Main())
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one harness command: its name, its line in the command list
// and what runs it (with the arguments after the name).
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

// commands is the command list: run dispatches on it and usage prints it,
// in this order.
var commands = []command{
	{"run", "run the scenario catalog (default: against the reference runtime)", runScenarios},
	{"list", "list the scenarios: number, name, description", runList},
	{"conformance", "run the conformance suite against an implementation", runConformance},
	{"driver-check", "check a driver's handshake and basic requests before running the suite", runDriverCheck},
	{"matrix", "render docs/MATRIX.md from the drivers' stored verdicts", runMatrix},
	{"doctor", "connect every configured MCP server and report what is wrong", runDoctor},
	{"proxy", "forward to a real MCP server and inject faults on demand",
		func(args []string, stdout, stderr io.Writer) int { return runProxy(args, os.Stdin, stdout, stderr) }},
	{"record", "record a session against real servers (events and wire) to a trace", runRecord},
	{"repro", "turn a recorded trace into a scenario replaying it against the fixture", runRepro},
	{"timeline", "draw a trace of lifecycle events as an SVG or HTML timeline", runTimeline},
	{"bench", "measure scale: 500 servers, concurrent calls, restart storm, cache gate", runBench},
	{"merge-reports", "merge the -json reports of sharded runs (-shard I/N)", runMerge},
	{"mutation-report", "print the mutation scores of a .ci/mutation results directory", runMutationReport},
	{"mcp-client", "connect one streamable-HTTP server through the runtime (the official MCP client suite's client)", runMCPClient},
	{"driver", "serve the reference runtime over the driver protocol on stdin/stdout",
		func(args []string, stdout, stderr io.Writer) int { return runDriver(args, os.Stdin, stdout, stderr) }},
	{"fixture", "run the fixture MCP server (same MCP_FIXTURE_* knobs)",
		func([]string, io.Writer, io.Writer) int { return fixture.Main() }},
	{"version", "print the harness version",
		func(_ []string, stdout, _ io.Writer) int { fmt.Fprintf(stdout, "harness %s\n", Version); return 0 }},
}

// run dispatches a subcommand and returns the exit code: 0 success, 1 a
// failure of what ran, 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	for _, c := range commands {
		if c.name == name {
			return c.run(rest, stdout, stderr)
		}
	}
	switch name {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "harness: unknown command %q\n", name)
	usage(stderr)
	return 2
}

// usage prints the command list.
func usage(w io.Writer) {
	fmt.Fprint(w, "usage: harness <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-17s%s\n", c.name, c.summary)
	}
}
