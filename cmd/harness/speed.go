package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mcplife/mcplife/bench/speed"
	"github.com/mcplife/mcplife/conformance"
)

// runSpeed implements `harness bench -impl ...`: the clients named by
// impls (NAME=COMMAND each) measured side by side through their drivers.
func runSpeed(cfg speed.Config, impls []string, fixtureCmd, jsonFile string, quiet bool, stdout, stderr io.Writer) int {
	for _, v := range impls {
		name, command, ok := strings.Cut(v, "=")
		argv, err := conformance.SplitCommand(command)
		if !ok || strings.TrimSpace(name) == "" || err != nil || len(argv) == 0 {
			fmt.Fprintf(stderr, "harness bench: -impl %q: want NAME=COMMAND (a name, then the driver's command line)\n", v)
			return 2
		}
		cfg.Impls = append(cfg.Impls, speed.Impl{Name: strings.TrimSpace(name), Command: argv})
	}
	if fixtureCmd != "" {
		argv, err := conformance.SplitCommand(fixtureCmd)
		if err != nil || len(argv) == 0 {
			fmt.Fprintf(stderr, "harness bench: -fixture: bad command line %q: %v\n", fixtureCmd, err)
			return 2
		}
		cfg.Fixture = argv
	} else if bin, remove, ok := matchingFixture(); ok {
		defer remove()
		cfg.Fixture = []string{bin}
	} else {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "harness bench: %v\n", err)
			return 1
		}
		cfg.Fixture = []string{exe, "fixture"}
	}
	if !quiet {
		cfg.Progress = stderr
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "harness bench: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := speed.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "harness bench: %v\n", err)
		return 1
	}
	speed.WriteTable(stdout, rep)
	if jsonFile != "" {
		if err := speed.WriteJSON(jsonFile, rep); err != nil {
			fmt.Fprintf(stderr, "harness bench: -json: %v\n", err)
			return 1
		}
	}
	for _, r := range rep.Results {
		if r.Runs == 0 {
			return 1
		}
	}
	return 0
}
