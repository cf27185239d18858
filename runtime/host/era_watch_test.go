package host

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
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

// watchRig is a discover watch over an in-memory connection, on a fake
// clock, with a go-sdk client connecting through it (asking 2026-07-28)
// and the server end read by the test: the harness of the watch's tests.
type watchRig struct {
	t         *testing.T
	ctx       context.Context
	clk       *clocktest.Fake
	dw        *discoverWatch
	expired   atomic.Int32
	srv       mcp.Connection
	reqs      chan *jsonrpc.Request // the calls the server read
	connected chan error
	cs        *mcp.ClientSession // once connected says nil
}

// newWatchRig starts the rig: unread is the pipe the watch looks at.
func newWatchRig(t *testing.T, unread func() (int, bool)) *watchRig {
	t.Helper()
	return newWatchRigWith(t, unread, nil)
}

// newWatchRigWith is newWatchRig with the client's side of the connection
// wrapped by wrap, when not nil.
func newWatchRigWith(t *testing.T, unread func() (int, bool), wrap func(mcp.Transport) mcp.Transport) *watchRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	var ct mcp.Transport
	ct, st := mcp.NewInMemoryTransports()
	if wrap != nil {
		ct = wrap(ct)
	}
	r := &watchRig{t: t, ctx: ctx, clk: clocktest.New(), reqs: make(chan *jsonrpc.Request, 8), connected: make(chan error, 1)}
	r.dw = &discoverWatch{inner: ct, clock: r.clk, timeout: 3 * time.Second, step: discoverStep(3 * time.Second),
		unread: unread, expired: func() { r.expired.Add(1) }}
	srv, err := st.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	r.srv = srv
	go func() {
		defer close(r.reqs)
		for {
			msg, err := srv.Read(ctx)
			if err != nil {
				return
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				r.reqs <- req
			}
		}
	}()
	go func() {
		var err error
		r.cs, err = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, r.dw, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolModern})
		r.connected <- err
	}()
	return r
}

// next returns the next call the server read, which must be of method.
func (r *watchRig) next(method string) *jsonrpc.Request {
	r.t.Helper()
	req, ok := <-r.reqs
	if !ok || req.Method != method {
		r.t.Fatalf("server read %+v, want %s", req, method)
	}
	return req
}

// answer writes the server's result for id.
func (r *watchRig) answer(id jsonrpc.ID, result string) {
	r.t.Helper()
	if err := r.srv.Write(r.ctx, &jsonrpc.Response{ID: id, Result: json.RawMessage(result)}); err != nil {
		r.t.Fatal(err)
	}
}

// look waits until the watch's next look is armed and moves the clock to it.
func (r *watchRig) look() {
	r.t.Helper()
	step := r.dw.step
	if err := r.clk.WaitFor(r.ctx, func(p []time.Duration) bool { return slices.Contains(p, step) }); err != nil {
		r.t.Fatal(err)
	}
	r.clk.Advance(step)
}

// waitsPastTimeout moves the clock look by look to twice the probe timeout
// and checks that the watch neither decided nor stopped looking.
func (r *watchRig) waitsPastTimeout(why string) {
	r.t.Helper()
	for r.clk.Elapsed() < 2*r.dw.timeout {
		r.look()
	}
	step := r.dw.step
	if err := r.clk.WaitFor(r.ctx, func(p []time.Duration) bool { return slices.Contains(p, step) }); err != nil {
		r.t.Fatal(err)
	}
	if n := r.expired.Load(); n != 0 {
		r.t.Fatalf("decided %d times %s", n, why)
	}
}

// connectedAs waits for the client's connect and checks its version.
func (r *watchRig) connectedAs(version string) {
	r.t.Helper()
	if err := <-r.connected; err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { r.cs.Close() })
	if got := r.cs.InitializeResult().ProtocolVersion; got != version {
		r.t.Errorf("negotiated %q, want %s", got, version)
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
	r := newWatchRig(t, func() (int, bool) { return 0, true }) // everything written was read
	r.next("server/discover")                                  // never answered
	r.look()
	r.next(discoverProbeMethod) // ignored, as discover
	r.answer(r.next("ping").ID, `{}`)
	initReq := r.next("initialize")
	if got := r.clk.Elapsed(); got != r.dw.step {
		t.Errorf("decided after %v on the clock, want %v (the look that sent the ping)", got, r.dw.step)
	}
	r.answer(initReq.ID, legacyInit)
	r.connectedAs(ProtocolLegacy)
	if !r.dw.stop() || r.expired.Load() != 1 {
		t.Errorf("the discover was not decided once (expired calls %d)", r.expired.Load())
	}
}

// TestDiscoverWatchWaitsWhileUnread: while the server has not read what was
// written to it (a server still starting), the watch neither pings nor
// decides, past the probe timeout; the server's discover result, when it
// comes, makes the connection modern.
func TestDiscoverWatchWaitsWhileUnread(t *testing.T) {
	r := newWatchRig(t, func() (int, bool) { return 120, true }) // discover still in the pipe
	discover := r.next("server/discover")
	r.waitsPastTimeout("while the server had not read discover")
	select {
	case req := <-r.reqs:
		t.Fatalf("the server was sent %s while it had not read discover", req.Method)
	default:
	}
	r.answer(discover.ID, modernResult)
	r.connectedAs(ProtocolModern)
	if r.dw.stop() {
		t.Error("the watch reports an expired discover")
	}
}

// TestDiscoverWatchWaitsForServerThatRefusesUnknown: a server that refuses
// the unknown method answers what it does not know, so its discover answer
// is coming (a server slow with discover that handles requests side by
// side): the watch waits past the probe timeout, and the discover result
// makes the connection modern.
func TestDiscoverWatchWaitsForServerThatRefusesUnknown(t *testing.T) {
	tap := &readTap{after: make(chan struct{})}
	r := newWatchRigWith(t, func() (int, bool) { return 0, true }, func(tr mcp.Transport) mcp.Transport { tap.Transport = tr; return tap })
	discover := r.next("server/discover")
	r.look()
	probe := r.next(discoverProbeMethod)
	if err := r.srv.Write(r.ctx, &jsonrpc.Response{ID: probe.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}}); err != nil {
		t.Fatal(err)
	}
	r.answer(r.next("ping").ID, `{}`)
	// The watch has taken both answers in before the clock moves on: the
	// refusal came first, so the ping's answer decides nothing.
	select {
	case <-tap.after:
	case <-r.ctx.Done():
		t.Fatal(r.ctx.Err())
	}
	r.waitsPastTimeout("for a server that refuses what it does not know")
	r.answer(discover.ID, modernResult)
	r.connectedAs(ProtocolModern)
}

// TestDiscoverWatchLooksAgainOnceWritten: the watch's next look is armed
// only once the unknown method and the ping are written. Armed before, a
// clock moved on by more than a step while the writes were still under way
// (a loaded machine, a harness advancing the virtual clock) made that look
// find everything read, because nothing more was written yet, and decide
// at the probe timeout for a server that was only stuck in discover
// (scenario 170 failed so, once in 50 stressed runs).
func TestDiscoverWatchLooksAgainOnceWritten(t *testing.T) {
	var written atomic.Bool
	blocked, release := make(chan struct{}), make(chan struct{})
	r := newWatchRigWith(t, func() (int, bool) {
		if written.Load() {
			return 80, true // the unknown method and the ping, never read
		}
		return 0, true // discover read
	}, func(tr mcp.Transport) mcp.Transport {
		return &slowProbeTransport{Transport: tr, blocked: blocked, release: release}
	})
	discover := r.next("server/discover") // read, never answered
	r.look()
	<-blocked // the look writes the unknown method, slowly
	if p := r.clk.Pending(); len(p) != 0 {
		t.Fatalf("a look is armed (%v) while the watch's requests are still being written", p)
	}
	r.clk.Advance(2 * r.dw.timeout)
	written.Store(true)
	close(release)
	r.next(discoverProbeMethod)
	r.next("ping")
	step := r.dw.step
	if err := r.clk.WaitFor(r.ctx, func(p []time.Duration) bool { return slices.Contains(p, step) }); err != nil {
		t.Fatal(err)
	}
	r.look()
	r.look()
	if err := r.clk.WaitFor(r.ctx, func(p []time.Duration) bool { return slices.Contains(p, step) }); err != nil {
		t.Fatal(err)
	}
	if n := r.expired.Load(); n != 0 {
		t.Fatalf("decided %d times for a server that has not read the watch's requests", n)
	}
	r.answer(discover.ID, modernResult)
	r.connectedAs(ProtocolModern)
}

// slowProbeTransport holds the write of the discover watch's unknown-method
// request until release is closed, closing blocked when it starts.
type slowProbeTransport struct {
	mcp.Transport
	blocked, release chan struct{}
}

func (s *slowProbeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := s.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &slowProbeConn{Connection: c, s: s}, nil
}

type slowProbeConn struct {
	mcp.Connection
	s *slowProbeTransport
}

func (c *slowProbeConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == discoverProbeMethod {
		close(c.s.blocked)
		select {
		case <-c.s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.Connection.Write(ctx, msg)
}

// readTap closes after once the client's side reads again after reading
// the answer to the discover watch's ping: the watch (which reads through
// it) has taken that answer in, and every message before it.
type readTap struct {
	mcp.Transport
	after chan struct{}
}

func (t *readTap) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	id, err := jsonrpc.MakeID(discoverPingID)
	if err != nil {
		return nil, err
	}
	return &readTapConn{Connection: c, after: t.after, pingID: id}, nil
}

type readTapConn struct {
	mcp.Connection
	after  chan struct{}
	pingID jsonrpc.ID
	seen   bool // the ping's answer was read (reads are never concurrent)
	once   sync.Once
}

func (c *readTapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if c.seen {
		c.once.Do(func() { close(c.after) })
	}
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && r.ID == c.pingID {
		c.seen = true
	}
	return msg, err
}
