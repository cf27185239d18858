package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"text/tabwriter"

	"github.com/mcplife/mcplife/scenarios"
)

// runList implements `harness list`: the number, name and one-line
// description of every scenario of the catalog embedded in the binary.
func runList(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	runPattern := fs.String("run", "", "list only the scenarios whose name (NNN-slug) matches this regular expression")
	guards := fs.Bool("v", false, "also print what each scenario guards (seed statement or field failure)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: harness list [-run REGEX] [-v]\n\nLists the scenarios: number, name and what each checks.\n\nflags:")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "harness list: %v (harness list -h lists the flags)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "harness list: unexpected argument %q\n", fs.Arg(0))
		return 2
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
