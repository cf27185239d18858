// Command mcp-go is an mcplife-driver/4 driver (docs/DRIVER.md) for the Go
// MCP client library github.com/mark3labs/mcp-go. It is the small host a Go
// host author writes around that library: one client.Client per configured
// server (stdio, streamable HTTP or SSE transport), tools exposed as
// mcp_<server>_<tool>, calls bounded by a context deadline and cancelled by
// cancelling their context. Processes, the protocol era (server/discover
// first, then initialize), timeouts inside the library and closing are
// mcp-go's own; the driver adds no restart, probe or pool. See README.md for
// what it claims and why.
//
// The protocol itself — framing, error precedence, strict params, the
// bookkeeping of calls, the ordering of lines — is driver.Conn's
// (github.com/mcplife/mcplife/conformance/driver); this command is glue.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/mcplife/mcplife/conformance/driver"
)

// libraryPath is the module whose client the driver wraps; its version,
// read from the build info, is the implementation version hello announces.
const libraryPath = "github.com/mark3labs/mcp-go"

func main() {
	// stdout carries protocol lines only: the library's slog output goes to
	// stderr.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	conn := driver.NewConn(os.Stdout, &driver.ConnOptions{Logger: slog.Default()})
	err := conn.Serve(ctx, os.Stdin, newHost(conn).handlers())
	// SIGINT and SIGTERM end Serve's context; it shuts down as for
	// shutdown, and the driver exits 0.
	if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		fmt.Fprintf(os.Stderr, "mcp-go driver: %v\n", err)
		os.Exit(1)
	}
}

// libraryVersion returns the version of mcp-go linked into the binary.
func libraryVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == libraryPath {
				return m.Version
			}
		}
	}
	return "unknown"
}

// handlers are what the driver announces — the core and conventions
// profiles on the real clock (the conventions it meets are its own code,
// listed in glue.txt), and both protocol eras (mcp-go's Client.Initialize sends
// server/discover first and falls back to initialize, client/protocol.go
// negotiateModern) — and the host's method handlers.
func (h *host) handlers() driver.Handlers {
	return driver.Handlers{
		Implementation: driver.Implementation{Name: libraryPath, Version: libraryVersion()},
		Capabilities:   []driver.Capability{driver.CapStatus, driver.CapJournalPID},
		Profiles:       []driver.Profile{driver.ProfileCore, driver.ProfileConventions},
		Eras:           []driver.Era{driver.EraLegacy, driver.EraModern},
		Start:          h.start,
		SessionOpen:    h.sessionOpen,
		SessionClose:   h.sessionClose,
		ToolsList:      h.toolsList,
		ToolCall:       h.toolCall,
		Status:         h.status,
		Shutdown:       h.shutdown,
	}
}
