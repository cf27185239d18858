package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcplife/mcplife/scenarios"
	"github.com/mcplife/mcplife/scenarios/repro"
)

const reproUsage = `usage: harness repro [-o FILE] [-name NNN-slug] TRACE

Turns a trace written by harness record into a scenario (txtar, the format
of scenarios/) that replays the same lifecycle against the fixture in
virtual time: answered calls on the fixture's echo tool, tool errors on
fail, and the observed fault of each server (a hang recovered by probe and
restart, a timeout with a healthy probe, a dropped ping, an exit mid-call)
on its test tool under the knobs that reproduce it. What it cannot map is
listed in the header and on stderr. Run the result with
harness run -dir DIR (a directory holding only it) or commit it under scenarios/ as a regression test.
Exit status: 0 when the scenario was written, 1 when the trace cannot be
used, 2 for bad usage.

flags:
`

// runRepro implements `harness repro`.
func runRepro(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("repro", reproUsage, stdout, stderr)
	out := fs.String("o", "", "write the scenario to `FILE` (default: stdout); its name must be NNN-slug.txtar")
	name := fs.String("name", "", "the scenario's `NNN-slug` for its header (default: from -o, else 900-recorded-session)")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "harness repro: want exactly one TRACE argument (harness repro -h)\n")
		return 2
	}
	tr, err := repro.Read(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "harness repro: %v\n", err)
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
		fmt.Fprintf(stderr, "harness repro: %s: %v\n", fs.Arg(0), err)
		return 1
	}
	if _, err := scenarios.Parse(n+".txtar", res.Script); err != nil {
		fmt.Fprintf(stderr, "harness repro: -name: %v\n", err)
		return 2
	}
	for _, note := range res.Notes {
		fmt.Fprintf(stderr, "harness repro: not reproduced: %s\n", note)
	}
	if *out == "" {
		_, _ = stdout.Write(res.Script)
		return 0
	}
	if err := os.WriteFile(*out, res.Script, 0o644); err != nil {
		fmt.Fprintf(stderr, "harness repro: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "harness repro: wrote %s (%d calls)\n", *out, len(res.Classes))
	return 0
}
