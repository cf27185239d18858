package main

import (
	"fmt"
	"io"
	"regexp"
	"text/tabwriter"

	"github.com/mcplife/mcplife/scenarios"
)

const listUsage = `usage: harness list [-run REGEX] [-v]

Lists the scenarios: number, name and what each checks.

flags:
`

// runList implements `harness list`: the number, name and one-line
// description of every scenario of the catalog embedded in the binary.
func runList(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("list", listUsage, stdout, stderr)
	runPattern := fs.String("run", "", "list only the scenarios whose name (NNN-slug) matches this regular expression")
	guards := fs.Bool("v", false, "also print what each scenario guards (seed statement or field failure)")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return fs.unexpected("")
	}
	var re *regexp.Regexp
	if *runPattern != "" {
		var err error
		if re, err = regexp.Compile(*runPattern); err != nil {
			fmt.Fprintf(stderr, "harness list: -run: %v\n", err)
			return 2
		}
	}
	list, err := scenarios.List()
	if err != nil {
		fmt.Fprintf(stderr, "harness list: %v\n", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	n := 0
	for _, sc := range list {
		if re != nil && !re.MatchString(sc.Name) {
			continue
		}
		n++
		fmt.Fprintf(tw, "%s\t%s\t%s\n", sc.Number, sc.Name, sc.Description)
		if *guards {
			fmt.Fprintf(tw, "\t\tguards: %s\n", sc.Guards)
		}
	}
	tw.Flush()
	if n == 0 {
		fmt.Fprintf(stderr, "harness list: no scenario matches -run %q\n", *runPattern)
		return 2
	}
	return 0
}
