// Command faultbuild builds packages of this module with every deliberate
// defect of conformance/faults compiled in; MCPLIFE_FAULTS picks the ones a
// run injects. It prints nothing on success.
//
//	go run ./conformance/faults/faultbuild -o /tmp/harness-faults ./cmd/harness
//	MCPLIFE_FAULTS=no-fail-fast /tmp/harness-faults conformance -req CORE-FAILFAST-001
//
// With -list it prints each defect's name and description instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/mcplife/mcplife/conformance/faults"
)

func main() {
	out := flag.String("o", "harness-faults", "the binary to write")
	root := flag.String("root", ".", "the module's root directory")
	list := flag.Bool("list", false, "print the defects and exit")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: faultbuild [-o file] [-root dir] [packages]   (default ./cmd/harness)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*list, *root, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "faultbuild:", err)
		os.Exit(1)
	}
}

func run(list bool, root, out string, pkgs []string) error {
	if list {
		all, err := faults.All()
		if err != nil {
			return err
		}
		for _, f := range all {
			fmt.Printf("%-28s %s\n", f.Name, f.Description)
		}
		return nil
	}
	if len(pkgs) == 0 {
		pkgs = []string{"./cmd/harness"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return faults.Build(ctx, root, out, pkgs...)
}
