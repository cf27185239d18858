package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// parseFlags parses args into fs, a FlagSet named after its command
// ("harness run"). It returns -1 when the command goes on, 0 after printing
// help (usage, then the flags) on stdout, and 2 after naming a bad flag on
// stderr.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) int {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case err == nil:
		return -1
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v (%s -h lists the flags)\n", fs.Name(), err, fs.Name())
	return 2
}
