package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/mcplife/mcplife/cmd/harness/internal/mutation"
)

const mutationReportUsage = `usage: harness mutation-report [-survivors] [-json] DIR

Prints the mutation scores of the results .ci/mutation wrote to DIR.

`

// runMutationReport implements `harness mutation-report DIR`: the mutation
// score table of the results .ci/mutation wrote to DIR.
func runMutationReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mutation-report", mutationReportUsage, stdout, stderr)
	survivors := fs.Bool("survivors", false, "list every surviving mutant")
	asJSON := fs.Bool("json", false, "print the rows as JSON")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		return fs.badUsage()
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
