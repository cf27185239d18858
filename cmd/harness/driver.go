package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcplife/mcplife/conformance/driver"
)

// runDriver implements `harness driver`: it serves the reference driver
// (runtime/host behind the driver protocol, docs/DRIVER.md) on stdin and
// stdout until shutdown, stdin EOF, SIGINT or SIGTERM, each of which closes
// every server and exits 0. stdout carries protocol lines only; logs go to
// stderr.
func runDriver(args []string) int {
	fs := flag.NewFlagSet("harness driver", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	logLevel := fs.String("log", "", "write logs to stderr at this level: debug, info, warn or error (default: no logs)")
	shutdownTimeout := fs.Duration("shutdown-timeout", driver.DefaultShutdownTimeout,
		"real time the graceful part of shutdown may take before server processes are killed")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: harness driver [flags]\n\n"+
			"Serves the reference driver, protocol %s, on stdin/stdout.\n\n", driver.ProtocolVersion)
		fs.PrintDefaults()
	}
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
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if *logLevel != "" {
		var level slog.Level
		if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
			fmt.Fprintf(os.Stderr, "harness driver: -log: %v\n", err)
			return 2
		}
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := driver.Serve(ctx, os.Stdin, os.Stdout, driver.ServeOptions{
		Logger:          logger,
		ShutdownTimeout: *shutdownTimeout,
	})
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// SIGINT or SIGTERM: Serve closed everything, as for shutdown.
	default:
		fmt.Fprintf(os.Stderr, "harness driver: %v\n", err)
		return 1
	}
	return 0
}
