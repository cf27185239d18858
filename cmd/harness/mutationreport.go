package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/mcplife/mcplife/cmd/harness/internal/mutation"
)

// runMutationReport implements `harness mutation-report DIR`: the mutation
// score table of the results .ci/mutation wrote to DIR.
func runMutationReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness mutation-report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	survivors := fs.Bool("survivors", false, "list every surviving mutant")
	asJSON := fs.Bool("json", false, "print the rows as JSON")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: harness mutation-report [-survivors] [-json] DIR\n\nPrints the mutation scores of the results .ci/mutation wrote to DIR.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	runs, err := mutation.ReadDir(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "harness mutation-report: %v\n", err)
		return 1
	}
	rows := mutation.Table(runs)
	// Runs over parts of a package that together cover all of it count
	// as a run over the package (the current directory is the module's,
	// as .ci/mutation runs it).
	mutation.DropCompletePartials(rows, ".")
	if *asJSON {
		b, _ := json.MarshalIndent(rows, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	mutation.Write(stdout, rows, *survivors)
	return 0
}
