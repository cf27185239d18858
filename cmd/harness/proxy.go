package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcplife/mcplife/internal/mcpproxy"
)

const proxyUsage = `usage: harness proxy [flags] -- CMD ARGS...     (stdio server)
       harness proxy [flags] -upstream URL          (streamable HTTP or SSE server)

A man-in-the-middle MCP server: it forwards every JSON-RPC message between
the client and the real server and injects faults on demand. Put it in your
agent's config in front of a real server:

  {"command": "harness", "args": ["proxy", "-control", "127.0.0.1:7777",
    "-control-token-file", "/tmp/px.token", "--", "npx", "-y", "my-server"]}

and switch faults while the agent runs (every request needs the token,
which the proxy draws at each launch):

  curl -H "Authorization: Bearer $(cat /tmp/px.token)" -H 'Content-Type: application/json' \
    --data '{"rules":["hang=*"]}' http://127.0.0.1:7777/rules             # wedge the server
  curl -H "Authorization: Bearer $(cat /tmp/px.token)" -H 'Content-Type: application/json' \
    -X DELETE http://127.0.0.1:7777/rules                                 # heal it

With -upstream the proxy listens on -listen (a loopback address unless
-allow-non-loopback: the proxy has no authentication) and forwards each
request with its own path to the upstream's host (point the client at the
same path on the proxy). -journal writes what the proxy saw in the
fixture's journal format, with the era of every request. Exit status: the
upstream's when it exits on its own, 0 after stdin EOF, the code of an
exit rule, 128+N after signal N, 2 for bad usage.

Both protocol eras pass through unchanged. In the handshake era (2025-11-25
and older) a session opens with initialize; in the stateless revision
(2026-07-28) with server/discover, or with the first request when the
client sends no discover, and every request carries its version in
_meta: the journal's open entry marks the opening request of either era,
discover the versions the server offered, and each entry of a client
message its protocolVersion and era. fail-init and
exit-after=initialize-request act on the opening request of either era;
exit-after=discover is the modern counterpart of exit-after=initialized;
rules on initialize, notifications/initialized or ping never match a
modern session (the revision removed them). Over HTTP a stateless server
has no session: the proxy forwards its subscriptions/listen streams and
its answers to GET and DELETE (405) as they are, and adds no
Mcp-Session-Id.

rules (-fault, -faults FILE, control endpoint):
` + mcpproxy.RuleSyntax + `

control endpoint (-control):
` + mcpproxy.ControlAPI + `

flags:
`

// runProxy implements `harness proxy`.
func runProxy(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("proxy", proxyUsage, stdout, stderr)
	var faults multiFlag
	fs.Var(&faults, "fault", "install `RULE` at start (repeatable)")
	faultsFile := fs.String("faults", "", "install the rules of `FILE` (one per line, # comments) at start")
	journal := fs.String("journal", "", "append what the proxy sees to `FILE` in the fixture's journal format")
	control := fs.String("control", "", "serve the control endpoint on this loopback `ADDR` (port 0 picks one; its URL and token go to stderr)")
	controlFile := fs.String("control-file", "", "write the control endpoint's URL and token, a line each, to `FILE` (mode 0600) once it listens")
	tokenFile := fs.String("control-token-file", "", "write the control endpoint's token to `FILE` (mode 0600) once it listens")
	upstreamURL := fs.String("upstream", "", "proxy the streamable HTTP or SSE server at `URL` instead of a command")
	listen := fs.String("listen", "127.0.0.1:0", "with -upstream: the loopback `ADDR` to serve on (another only with -allow-non-loopback)")
	allowNonLoopback := fs.Bool("allow-non-loopback", false, "with -upstream: let -listen be a non-loopback address (anyone who reaches it can use the upstream)")
	addrFile := fs.String("addr-file", "", "with -upstream: write the chosen host:port to `FILE`")
	grace := fs.Duration("stop-grace", mcpproxy.DefaultStopGrace, "how long to wait for the upstream at each step of stopping it (stdin closed, SIGTERM, SIGKILL)")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	var rules []mcpproxy.Rule
	if *faultsFile != "" {
		data, err := os.ReadFile(*faultsFile)
		if err != nil {
			fmt.Fprintf(stderr, "harness proxy: -faults: %v\n", err)
			return 2
		}
		rs, err := mcpproxy.ParseRules(string(data))
		if err != nil {
			fmt.Fprintf(stderr, "harness proxy: -faults %s: %v\n", *faultsFile, err)
			return 2
		}
		rules = append(rules, rs...)
	}
	for _, f := range faults {
		r, err := mcpproxy.ParseRule(f)
		if err != nil {
			fmt.Fprintf(stderr, "harness proxy: -fault: %v\n", err)
			return 2
		}
		rules = append(rules, r)
	}
	if *upstreamURL != "" && fs.NArg() > 0 {
		fmt.Fprintf(stderr, "harness proxy: -upstream and a command (%q) exclude each other\n", fs.Arg(0))
		return 2
	}
	if *upstreamURL == "" && fs.NArg() == 0 {
		fmt.Fprintf(stderr, "harness proxy: no upstream: give -- CMD ARGS... or -upstream URL (harness proxy -h)\n")
		return 2
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// A client that went away must not kill the proxy (SIGPIPE on stdout)
	// before it stopped the upstream; a caught signal is also reset to
	// its default in the upstream, unlike an ignored one.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	ctx := context.Background()

	if *upstreamURL != "" {
		code, err := mcpproxy.RunHTTP(ctx, mcpproxy.HTTPOptions{
			Upstream: *upstreamURL, Listen: *listen, AllowNonLoopback: *allowNonLoopback, AddrFile: *addrFile,
			Rules: rules, Journal: *journal, Control: *control, ControlFile: *controlFile, ControlTokenFile: *tokenFile,
			Signals: sigs,
			Ready: func(url string, ctl mcpproxy.ControlEndpoint) {
				fmt.Fprintf(stdout, "harness proxy: listening on %s (upstream %s)\n", url, *upstreamURL)
				if ctl.URL != "" {
					printControl(stderr, ctl)
				}
			},
		})
		if err != nil {
			fmt.Fprintf(stderr, "harness proxy: %v\n", err)
		}
		return code
	}
	// stdout carries the MCP stream: the control URL and token go to
	// stderr (and to -control-file, -control-token-file).
	code, err := mcpproxy.RunStdio(ctx, stdin, stdout, mcpproxy.StdioOptions{
		Command: fs.Args(), Rules: rules, Journal: *journal,
		Control: *control, ControlFile: *controlFile, ControlTokenFile: *tokenFile,
		Stderr: stderr, Signals: sigs, StopGrace: *grace,
		Ready: func(ctl mcpproxy.ControlEndpoint) { printControl(stderr, ctl) },
	})
	if err != nil {
		fmt.Fprintf(stderr, "harness proxy: %v\n", err)
	}
	return code
}

// printControl prints the control endpoint's URL and token on stderr.
func printControl(stderr io.Writer, ctl mcpproxy.ControlEndpoint) {
	fmt.Fprintf(stderr, "harness proxy: control endpoint %s token %s\n", ctl.URL, ctl.Token)
}
