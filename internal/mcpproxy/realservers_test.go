package mcpproxy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/mcplife/mcplife/internal/realservers"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// A hang injected through the proxy into a real server
// (@modelcontextprotocol/server-everything) is recovered by the runtime:
// the call times out, the probe fails, the server is restarted and the
// retried call answers. Nothing is left running afterwards.
func TestRealServerEverythingHangRecovered(t *testing.T) {
	upstream := realservers.Command(t, "../..", "server-everything", "stdio")
	dir := t.TempDir()
	e := newEnv(t, proxied(t, dir, nil, upstream, nil, map[string]any{"toolTimeout": 5000, "timeout": 60000}), host.Options{})
	e.dir = dir
	sess, err := e.rt.OpenSession(t.Context(), host.SessionOptions{Name: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	e.sess = sess
	e.await(event.ServerConnected)
	o := e.result(e.call("mcp_fx_echo", map[string]any{"message": "before"}))
	if o.err != nil || !strings.Contains(o.res.Text, "Echo: before") {
		t.Fatalf("call through the proxy: %+v %v", o.res, o.err)
	}

	e.control("POST", "/rules", "hang=*")
	ch := e.call("mcp_fx_echo", map[string]any{"message": "during"})
	e.awaitJournal("px.journal", 1, "hang-start", "tool", "echo")
	e.clock.Advance(5 * time.Second)
	e.await(event.ProbeStarted, "method", "ping")
	e.awaitJournal("px.journal", 1, "ping", "action", "dropped")
	e.clock.Advance(3 * time.Second)
	e.await(event.ProbeStarted, "method", "tools/list")
	e.awaitJournal("px.journal", 1, "fault", "method", "tools/list")
	e.clock.Advance(3 * time.Second)
	e.await(event.RestartSucceeded, "reason", "probe-failure")
	o = e.result(ch)
	if o.err != nil || !strings.Contains(o.res.Text, "Echo: during") {
		t.Fatalf("retried call: %+v %v", o.res, o.err)
	}

	// Close without moving the clock: the proxy must end on stdin EOF,
	// once the real server has ended on its own stdin EOF.
	closed := make(chan struct{})
	go func() {
		e.rt.Close(context.Background())
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatalf("the runtime did not close without the clock moving\nevents:\n%s", eventsString(e.rt.Events().Events()))
	}
	e.awaitJournal("px.journal", 2, "exit", "reason", "stdin-eof")
	var pids []int
	for _, en := range e.entries("px.journal") {
		switch en.Kind {
		case "launch":
			pids = append(pids, en.PID)
		case "upstream-started":
			pids = append(pids, en.Int("upstreamPid"))
		}
	}
	if len(pids) != 4 {
		t.Fatalf("pids %v: want two proxies and two servers", pids)
	}
	// Every proxy journaled its exit after reaping its server; the
	// proxies themselves were reaped by the runtime's Close.
	for _, pid := range pids {
		if proctest.Alive(pid) {
			t.Errorf("process %d is still running", pid)
		}
	}
}
