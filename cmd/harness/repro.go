package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/scenarios"
	"github.com/mcplife/mcplife/scenarios/repro"
)

const reproUsage = `usage: harness repro [-o FILE] [-name NNN-slug] [-partial] TRACE

Turns a trace written by harness record into a scenario (txtar, the format
of scenarios/) that replays the same lifecycle against the fixture in
virtual time: answered calls on the fixture's echo tool, tool errors on
fail, the observed fault of each server (a hang recovered by probe and
restart, a timeout with a healthy probe, a dropped ping, an exit mid-call)
on its test tool under the knobs that reproduce it, a server that went
away while idle killed at the same point, and every restart attempt by
attempt. Each fixture server speaks the protocol era its server was
recorded in (MCP_FIXTURE_ERA; the probe has no ping in the stateless
era), and a scenario whose servers share one era says so in its header
(# Era:), so harness run -era both runs it in that era only; one with
servers of both eras runs in both. Every failure of the trace (a call
that did not answer, a restart, a server that never connected) is mapped
to a step of the scenario or named with the reason it is not, on stderr
and in the scenario's header. Run the result with harness run -dir DIR (a directory
holding only it) or commit it under scenarios/ as a regression test.

Exit status: 0 when the scenario was written and reproduces every failure
of the trace; 1 when it would not (nothing is written unless -partial
accepts that) or the trace cannot be used; 2 for bad usage.

flags:
`

// runRepro implements `harness repro`.
func runRepro(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("repro", reproUsage, stdout, stderr)
	out := fs.String("o", "", "write the scenario to `FILE` (default: stdout), creating its directory; its name must be NNN-slug.txtar")
	name := fs.String("name", "", "the scenario's `NNN-slug` for its header (default: from -o, else 900-recorded-session)")
	partial := fs.Bool("partial", false, "write the scenario even when it does not reproduce every failure of the trace (its header lists what it leaves out), and exit 0")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "harness repro: want exactly one TRACE argument (harness repro -h)\n")
		return 2
	}
	tr, err := repro.Read(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "harness repro: %s\n", textsafe.Line(err.Error()))
		return 1
	}
	n := *name
	if n == "" && *out != "" {
		n = strings.TrimSuffix(filepath.Base(*out), ".txtar")
	}
	if n == "" {
		n = "900-recorded-session"
	}
	res, err := repro.Generate(tr, n, filepath.Base(fs.Arg(0)))
	if err != nil {
		fmt.Fprintf(stderr, "harness repro: %s: %s\n", textsafe.Line(fs.Arg(0)), textsafe.Line(err.Error()))
		return 1
	}
	if _, err := scenarios.Parse(n+".txtar", res.Script); err != nil {
		fmt.Fprintf(stderr, "harness repro: -name: %v\n", err)
		return 2
	}
	for _, f := range res.Failures {
		if f.Reproduced() {
			fmt.Fprintf(stderr, "harness repro: reproduced by %s: %s\n", f.Step, textsafe.Line(f.What))
		}
	}
	for _, note := range res.Notes {
		fmt.Fprintf(stderr, "harness repro: not reproduced: %s\n", textsafe.Line(note))
	}
	what := fmt.Sprintf("%d calls replayed, %d of %d failures reproduced", res.Calls, res.Reproduced(), len(res.Failures))
	if res.Partial() && !*partial {
		fmt.Fprintf(stderr, "harness repro: %s; nothing written: the scenario would not reproduce the trace (-partial writes it anyway)\n", what)
		return 1
	}
	if res.Partial() {
		what += "; partial, as -partial accepts: its header lists what it leaves out"
	}
	if *out == "" {
		_, _ = stdout.Write(res.Script)
		fmt.Fprintf(stderr, "harness repro: %s\n", what)
		return 0
	}
	if err := writeFileDirs(*out, res.Script); err != nil {
		fmt.Fprintf(stderr, "harness repro: %s\n", textsafe.Line(err.Error()))
		return 1
	}
	fmt.Fprintf(stderr, "harness repro: wrote %s: %s\n", textsafe.Line(*out), what)
	return 0
}

// writeFileDirs writes data to path, creating the directories it needs;
// an error names the path and the real cause.
func writeFileDirs(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
