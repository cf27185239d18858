package main

import (
	"fmt"
	"io"

	"github.com/mcplife/mcplife/conformance"
)

const matrixUsage = `usage: harness matrix [-dir DIR] [-out FILE]

Renders the conformance matrix (docs/MATRIX.md) from the verdict reports
stored beside each driver (conformance/drivers/*/report.json). Run it from
the repository root.

flags:
`

// runMatrix implements `harness matrix`: it renders the conformance matrix
// (docs/MATRIX.md) from the verdict reports committed beside each driver
// (conformance/drivers/*/report.json, written by harness conformance
// -verdicts). Run it from the repository root.
func runMatrix(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("matrix", matrixUsage, stdout, stderr)
	dir := fs.String("dir", "conformance/drivers", "directory whose */report.json are the columns")
	out := fs.String("out", "docs/MATRIX.md", "file to write")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return fs.badUsage()
	}
	if err := conformance.WriteMatrix(*dir, *out); err != nil {
		fmt.Fprintf(stderr, "harness matrix: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return 0
}
