package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// cmdFlags is the flag set of one harness command. Every command parses
// its flags the same way: -h prints the command's usage text and its flags
// on stdout and exits 0; a bad flag is named in one line on stderr, exit
// status 2; a bad argument after the flags is the command's to report
// (unexpected or badUsage).
type cmdFlags struct {
	*flag.FlagSet
	usage          string // the text -h prints before the flags
	stdout, stderr io.Writer
}

// newFlags returns the flag set of `harness <cmd>`, whose -h prints usage
// and then the flags.
func newFlags(cmd, usage string, stdout, stderr io.Writer) *cmdFlags {
	fs := flag.NewFlagSet("harness "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &cmdFlags{FlagSet: fs, usage: usage, stdout: stdout, stderr: stderr}
}

// parse parses args. It returns -1 when the command goes on, 0 after
// printing help (usage, then the flags) on stdout, and 2 after naming a bad
// flag on stderr.
func (f *cmdFlags) parse(args []string) int {
	err := f.Parse(args)
	switch {
	case err == nil:
		return -1
	case errors.Is(err, flag.ErrHelp):
		f.printUsage(f.stdout)
		return 0
	}
	fmt.Fprintf(f.stderr, "%s: %v (%s -h lists the flags)\n", f.Name(), err, f.Name())
	return 2
}

// printUsage writes the usage text and the flags to w.
func (f *cmdFlags) printUsage(w io.Writer) {
	fmt.Fprint(w, f.usage)
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// badUsage prints the usage text and the flags on stderr and returns 2: the
// answer to arguments the command cannot take.
func (f *cmdFlags) badUsage() int {
	f.printUsage(f.stderr)
	return 2
}

// unexpected names the first argument after the flags, which the command
// does not take, in one line on stderr (hint, if any, in parentheses after
// it) and returns 2.
func (f *cmdFlags) unexpected(hint string) int {
	if hint != "" {
		hint = " (" + hint + ")"
	}
	fmt.Fprintf(f.stderr, "%s: unexpected argument %q%s\n", f.Name(), f.Arg(0), hint)
	return 2
}

// multiFlag is a repeatable string flag: each use appends its value.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
