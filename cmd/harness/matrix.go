package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/mcplife/mcplife/conformance"
)

// runMatrix implements `harness matrix`: it renders the conformance matrix
// (docs/MATRIX.md) from the verdict reports committed beside each driver
// (conformance/drivers/*/report.json, written by harness conformance
// -verdicts). Run it from the repository root.
func runMatrix(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "conformance/drivers", "directory whose */report.json are the columns")
	out := fs.String("out", "docs/MATRIX.md", "file to write")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	if err := conformance.WriteMatrix(*dir, *out); err != nil {
		fmt.Fprintf(stderr, "harness matrix: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return 0
}
