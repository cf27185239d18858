package host

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDiscoverWatchAnswersUnansweredDiscover: a server that lets
// server/discover go unanswered past the timeout (on the fake clock) gets
// initialize on the same connection, and its late discover reply is
// dropped instead of reaching go-sdk.
func TestDiscoverWatchAnswersUnansweredDiscover(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	clk := clocktest.New()
	ct, st := mcp.NewInMemoryTransports()
	var expired atomic.Int32
	dw := &discoverWatch{inner: ct, clock: clk, timeout: 3 * time.Second, expired: func() { expired.Add(1) }}

	srv, err := st.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	served := make(chan error, 1)
	go func() {
		var discoverID jsonrpc.ID
		for {
			msg, err := srv.Read(ctx)
			if err != nil {
				served <- err
				return
			}
			req, ok := msg.(*jsonrpc.Request)
			if !ok || !req.IsCall() {
				continue
			}
			switch req.Method {
			case "server/discover":
				discoverID = req.ID
				clk.Advance(3 * time.Second) // never answered in time
			case "initialize":
				// The late discover reply first, then initialize's.
				late := &jsonrpc.Response{ID: discoverID, Result: json.RawMessage(`{"supportedVersions":["2026-07-28"],"capabilities":{}}`)}
				res := &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`)}
				if err := srv.Write(ctx, late); err != nil {
					served <- err
					return
				}
				if err := srv.Write(ctx, res); err != nil {
					served <- err
					return
				}
			case "tools/list":
				if err := srv.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"tools":[]}`)}); err != nil {
					served <- err
					return
				}
			}
		}
	}()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, dw, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolModern})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != ProtocolLegacy {
		t.Errorf("negotiated %q, want %s", got, ProtocolLegacy)
	}
	if !dw.stop() || expired.Load() != 1 {
		t.Errorf("the discover did not expire once (expired calls %d)", expired.Load())
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list after the fallback: %v", err)
	}
	select {
	case err := <-served:
		t.Fatalf("server ended: %v", err)
	default:
	}
}

// watchServer is the server end of an in-memory connection for the
// discover watch's tests: it hands each request it reads to the test.
func watchServer(t *testing.T, ctx context.Context, st mcp.Transport) (mcp.Connection, <-chan *jsonrpc.Request) {
	t.Helper()
	srv, err := st.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	reqs := make(chan *jsonrpc.Request, 8)
	go func() {
		defer close(reqs)
		for {
			msg, err := srv.Read(ctx)
			if err != nil {
				return
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				reqs <- req
			}
		}
	}()
	return srv, reqs
}

func watchNext(t *testing.T, reqs <-chan *jsonrpc.Request, method string) *jsonrpc.Request {
	t.Helper()
	req, ok := <-reqs
	if !ok || req.Method != method {
		t.Fatalf("server read %+v, want %s", req, method)
	}
	return req
}

func watchAnswer(t *testing.T, ctx context.Context, srv mcp.Connection, id jsonrpc.ID, result string) {
	t.Helper()
	if err := srv.Write(ctx, &jsonrpc.Response{ID: id, Result: json.RawMessage(result)}); err != nil {
		t.Fatal(err)
	}
}

const (
	legacyInit   = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`
	modernResult = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`
)

// TestDiscoverWatchPingAnswered: a server that has read server/discover and
// not answered it gets a request of an unknown method and a ping at the
// watch's next look; its answer to the ping, while discover and the unknown
// method still wait, decides at once (long before the probe timeout):
// go-sdk goes on with initialize, and the ping's answer never reaches it.
func TestDiscoverWatchPingAnswered(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	clk := clocktest.New()
	ct, st := mcp.NewInMemoryTransports()
	var expired atomic.Int32
	step := discoverStep(3 * time.Second)
	dw := &discoverWatch{inner: ct, clock: clk, timeout: 3 * time.Second, step: step,
		unread:  func() (int, bool) { return 0, true }, // everything written was read
		expired: func() { expired.Add(1) }}
	srv, reqs := watchServer(t, ctx, st)
	connected := make(chan error, 1)
	var cs *mcp.ClientSession
	go func() {
		var err error
		cs, err = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, dw, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolModern})
		connected <- err
	}()
	watchNext(t, reqs, "server/discover") // never answered
	if err := clk.WaitFor(ctx, func(p []time.Duration) bool { return slices.Contains(p, step) }); err != nil {
		t.Fatal(err)
	}
	clk.Advance(step)
	watchNext(t, reqs, discoverProbeMethod) // ignored, as discover
	ping := watchNext(t, reqs, "ping")
	watchAnswer(t, ctx, srv, ping.ID, `{}`)
	initReq := watchNext(t, reqs, "initialize")
	if got := clk.Elapsed(); got != step {
		t.Errorf("decided after %v on the clock, want %v (the look that sent the ping)", got, step)
	}
	watchAnswer(t, ctx, srv, initReq.ID, legacyInit)
	if err := <-connected; err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != ProtocolLegacy {
		t.Errorf("negotiated %q, want %s", got, ProtocolLegacy)
	}
	if !dw.stop() || expired.Load() != 1 {
		t.Errorf("the discover was not decided once (expired calls %d)", expired.Load())
	}
}

// TestDiscoverWatchWaitsWhileUnread: while the server has not read what was
// written to it (a server still starting), the watch neither pings nor
// decides, past the probe timeout; the server's discover result, when it
// comes, makes the connection modern.
func TestDiscoverWatchWaitsWhileUnread(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	clk := clocktest.New()
	ct, st := mcp.NewInMemoryTransports()
	var expired atomic.Int32
	step := discoverStep(3 * time.Second)
	dw := &discoverWatch{inner: ct, clock: clk, timeout: 3 * time.Second, step: step,
		unread:  func() (int, bool) { return 120, true }, // discover still in the pipe
		expired: func() { expired.Add(1) }}
	srv, reqs := watchServer(t, ctx, st)
	connected := make(chan error, 1)
	var cs *mcp.ClientSession
	go func() {
		var err error
		cs, err = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, dw, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolModern})
		connected <- err
	}()
	discover := watchNext(t, reqs, "server/discover")
	for clk.Elapsed() < 2*dw.timeout {
		if err := clk.WaitFor(ctx, func(p []time.Duration) bool { return slices.Contains(p, step) }); err != nil {
			t.Fatal(err)
		}
		clk.Advance(step)
	}
	// The last look re-armed the watch: it still waits.
	if err := clk.WaitFor(ctx, func(p []time.Duration) bool { return slices.Contains(p, step) }); err != nil {
		t.Fatal(err)
	}
	if n := expired.Load(); n != 0 {
		t.Fatalf("decided %d times while the server had not read discover", n)
	}
	select {
	case req := <-reqs:
		t.Fatalf("the server was sent %s while it had not read discover", req.Method)
	default:
	}
	watchAnswer(t, ctx, srv, discover.ID, modernResult)
	if err := <-connected; err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != ProtocolModern {
		t.Errorf("negotiated %q, want %s", got, ProtocolModern)
	}
	if dw.stop() {
		t.Error("the watch reports an expired discover")
	}
}

// TestDiscoverWatchWaitsForServerThatRefusesUnknown: a server that refuses
// the unknown method answers what it does not know, so its discover answer
// is coming (a server slow with discover that handles requests side by
// side): the watch waits past the probe timeout, and the discover result
// makes the connection modern.
func TestDiscoverWatchWaitsForServerThatRefusesUnknown(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	clk := clocktest.New()
	ct, st := mcp.NewInMemoryTransports()
	var expired atomic.Int32
	step := discoverStep(3 * time.Second)
	dw := &discoverWatch{inner: ct, clock: clk, timeout: 3 * time.Second, step: step,
		unread:  func() (int, bool) { return 0, true },
		expired: func() { expired.Add(1) }}
	srv, reqs := watchServer(t, ctx, st)
	connected := make(chan error, 1)
	var cs *mcp.ClientSession
	go func() {
		var err error
		cs, err = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, dw, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolModern})
		connected <- err
	}()
	discover := watchNext(t, reqs, "server/discover")
	stepPending := func(p []time.Duration) bool { return slices.Contains(p, step) }
	if err := clk.WaitFor(ctx, stepPending); err != nil {
		t.Fatal(err)
	}
	clk.Advance(step)
	probe := watchNext(t, reqs, discoverProbeMethod)
	if err := srv.Write(ctx, &jsonrpc.Response{ID: probe.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}}); err != nil {
		t.Fatal(err)
	}
	ping := watchNext(t, reqs, "ping")
	watchAnswer(t, ctx, srv, ping.ID, `{}`)
	for clk.Elapsed() < 2*dw.timeout {
		if err := clk.WaitFor(ctx, stepPending); err != nil {
			t.Fatal(err)
		}
		clk.Advance(step)
	}
	if err := clk.WaitFor(ctx, stepPending); err != nil {
		t.Fatal(err)
	}
	if n := expired.Load(); n != 0 {
		t.Fatalf("decided %d times for a server that refuses what it does not know", n)
	}
	watchAnswer(t, ctx, srv, discover.ID, modernResult)
	if err := <-connected; err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != ProtocolModern {
		t.Errorf("negotiated %q, want %s", got, ProtocolModern)
	}
}
