package mcpproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/internal/mcpproxy"
	"github.com/mcplife/mcplife/internal/proctest"
)

// The test binary plays three roles, chosen by its first argument: the
// proxy ("as-proxy" OPTIONS-JSON -- CMD...), the fixture ("as-fixture") and,
// without either, the tests.
const (
	asProxy   = "as-proxy"
	asFixture = "as-fixture"
)

// proxyArgs is what a test passes to the proxy role.
type proxyArgs struct {
	Rules       []string
	Journal     string
	ControlFile string
}

// TestMain lets the test binary play a proxy child, then checks for
// goroutine leaks (goleak) and leftover processes through proctest.Main.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case asFixture:
			os.Exit(fixture.Main())
		case asProxy:
			os.Exit(proxyMain(os.Args[2], os.Args[3:]))
		}
	}
	proctest.Main(m)
}

func proxyMain(optsJSON string, argv []string) int {
	var a proxyArgs
	if err := json.Unmarshal([]byte(optsJSON), &a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var rules []mcpproxy.Rule
	for _, s := range a.Rules {
		r, err := mcpproxy.ParseRule(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		rules = append(rules, r)
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// A client that went away must not kill the proxy (SIGPIPE on stdout)
	// before it stopped the upstream; a caught signal is also reset to
	// its default in the upstream, unlike an ignored one.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	opts := mcpproxy.StdioOptions{Command: argv, Rules: rules, Journal: a.Journal, Stderr: os.Stderr, Signals: sigs}
	if a.ControlFile != "" {
		opts.Control, opts.ControlFile = "127.0.0.1:0", a.ControlFile
	}
	code, err := mcpproxy.RunStdio(context.Background(), os.Stdin, os.Stdout, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}
