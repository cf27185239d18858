package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcplife/mcplife/conformance/driver"
)

const driverUsage = `usage: harness driver [flags]

Serves the reference driver, protocol ` + driver.ProtocolVersion + `, on stdin/stdout.

`

// runDriver implements `harness driver`: it serves the reference driver
// (runtime/host behind the driver protocol, docs/DRIVER.md) on stdin and
// stdout until shutdown, stdin EOF, SIGINT or SIGTERM, each of which closes
// every server and exits 0. stdout carries protocol lines only; logs go to
// stderr.
func runDriver(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("driver", driverUsage, stdout, stderr)
	logLevel := fs.String("log", "", "write logs to stderr at this level: debug, info, warn or error (default: no logs)")
	shutdownTimeout := fs.Duration("shutdown-timeout", driver.DefaultShutdownTimeout,
		"real time the graceful part of shutdown may take before server processes are killed")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return fs.badUsage()
	}
	logger := slog.New(slog.DiscardHandler)
	if *logLevel != "" {
		var level slog.Level
		if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
			fmt.Fprintf(stderr, "harness driver: -log: %v\n", err)
			return 2
		}
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := driver.Serve(ctx, stdin, stdout, driver.ServeOptions{
		Logger:          logger,
		ShutdownTimeout: *shutdownTimeout,
	})
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// SIGINT or SIGTERM: Serve closed everything, as for shutdown.
	default:
		fmt.Fprintf(stderr, "harness driver: %v\n", err)
		return 1
	}
	return 0
}
