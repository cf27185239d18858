package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two protocol eras (docs/LIFECYCLE.md, "Protocol eras"). A handshake-era
// (legacy) connection begins with initialize; a modern one (2026-07-28, the
// stateless revision) has no handshake: go-sdk asks server/discover and puts
// the version in each request's _meta.
const (
	// ProtocolModern is the stateless revision, the newest go-sdk v1.8.0
	// speaks.
	ProtocolModern = "2026-07-28"
	// ProtocolLegacy is the newest handshake-era revision.
	ProtocolLegacy = "2025-11-25"
)

// Reasons of server.protocol_fallback.
const (
	FallbackDiscoverUnanswered = "discover-unanswered"
	FallbackInitializeRefused  = "initialize-refused"
	// FallbackDiscoverRefused: an http server answered server/discover
	// without the stateless revision (an HTTP error such as 400, 404 or
	// 405, a JSON-RPC error, or a result whose versions leave 2026-07-28
	// out) and go-sdk went on with initialize on the same connection.
	FallbackDiscoverRefused = "discover-refused"
)

// IsModern tells whether protocol version v is of the stateless era.
func IsModern(v string) bool { return v >= ProtocolModern }

// protocolRequest is the version a connect attempt of s asks for first: the
// config's protocolVersion (pinned), else what an earlier fallback learned,
// else Options.ProtocolVersion, else by transport (defaultProtocol).
func (s *server) protocolRequest() (version string, pinned bool) {
	if s.cfg.ProtocolVersion != "" {
		return s.cfg.ProtocolVersion, true
	}
	s.mu.Lock()
	learned := s.learnedProtocol
	s.mu.Unlock()
	switch {
	case learned != "":
		return learned, false
	case s.rt.opts.ProtocolVersion != "":
		return s.rt.opts.ProtocolVersion, false
	}
	return defaultProtocol(s.cfg.EffectiveType(), s.rt.opts.Dial != nil), false
}

// defaultProtocol is the version asked first of a server of transport t
// when neither its config nor Options.ProtocolVersion names one. A stdio
// process the runtime starts itself and a streamable HTTP server are asked
// the modern revision first: go-sdk falls back to initialize on the same
// connection when server/discover is refused (on stdio a discover left
// unanswered is bounded by discoverWatch; over HTTP the reply's status
// tells the eras apart, remote_era.go). SSE (the 2024-11-05 HTTP+SSE
// transport, which the stateless revision does not have) and every server
// of a custom Options.Dial, whose transport the runtime cannot judge, keep
// DefaultProtocolVersion.
func defaultProtocol(t config.Transport, customDial bool) string {
	if (t == config.Stdio || t == config.HTTP) && !customDial {
		return ProtocolModern
	}
	return DefaultProtocolVersion
}

// probeMethods are the requests of a health probe of a connection that
// negotiated protocol, in order (probe.go): the stateless revision removed
// ping.
func probeMethods(protocol string) []string {
	if IsModern(protocol) {
		return []string{"tools/list"}
	}
	return []string{"ping", "tools/list"}
}

// fallbackFor names the version to try next after a failed handshake that
// asked for version, and why; "" when the failure is no era mismatch: a
// handshake that a modern-only server refused with
// UnsupportedProtocolVersionError naming a modern version goes on with that
// version in a new connection, unless the config pins a handshake-era
// version (pin is the config's protocolVersion, "" when unpinned).
func fallbackFor(version, pin string, err error) (next, reason string) {
	if IsModern(version) || (pin != "" && !IsModern(pin)) {
		return "", ""
	}
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeUnsupportedProtocolVersion {
		return "", ""
	}
	var data mcp.UnsupportedProtocolVersionData
	if json.Unmarshal(rpcErr.Data, &data) != nil {
		return "", ""
	}
	for _, v := range mcp.SupportedProtocolVersions() { // newest first
		if IsModern(v) && slices.Contains(data.Supported, v) {
			return v, FallbackInitializeRefused
		}
	}
	return "", ""
}

// discoverWatch bounds go-sdk's server/discover on a stdio connection by
// the probe timeout, on the runtime's clock: go-sdk waits for a discover
// reply as long as its context lives, and a server that ignores unknown
// methods never sends one. When the timeout passes first, the watch hands
// go-sdk a method-not-found reply of its own, so go-sdk goes on with
// initialize on the same connection, and drops the server's own reply if
// it comes later; expired is called (it reports the fallback). The same
// process goes on (the revision suggests a new one): a server still
// starting looks the same as one ignoring discover, and a new process
// would start it again from nothing.
type discoverWatch struct {
	inner   mcp.Transport
	clock   clock.Clock
	timeout time.Duration
	expired func()

	inject  chan jsonrpc.Message // the reply made up at the timeout
	mu      sync.Mutex
	id      jsonrpc.ID // the discover request's id, once written
	timer   clock.Timer
	settled bool // answered, expired, stopped, or another request came first
	expire  bool // the timeout passed first
	late    bool // after the timeout, the server answered discover itself, with a result
}

func (w *discoverWatch) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	w.inject = make(chan jsonrpc.Message, 1)
	return &discoverConn{Connection: c, w: w}, nil
}

// sent notes a request written to the server.
func (w *discoverWatch) sent(req *jsonrpc.Request) {
	if !req.IsCall() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.settled || w.timer != nil {
		return
	}
	if req.Method != "server/discover" {
		w.settled = true // no discover first: nothing to bound
		return
	}
	w.id = req.ID
	w.timer = w.clock.AfterFunc(w.timeout, w.fire)
}

// drop tells whether msg, read from the server, is the discover reply the
// watch already made up; a first reply to discover settles the watch.
func (w *discoverWatch) drop(msg jsonrpc.Message) bool {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer == nil || resp.ID != w.id {
		return false
	}
	if w.expire {
		// Late: go-sdk already has the reply made up. A result means a
		// server of the stateless revision that was only slow to start.
		w.late = w.late || resp.Error == nil
		return true
	}
	if !w.settled {
		w.settled = true
		w.timer.Stop()
	}
	return false
}

func (w *discoverWatch) fire() {
	w.mu.Lock()
	if w.settled {
		w.mu.Unlock()
		return
	}
	w.settled, w.expire = true, true
	// Under the lock (inject has room for it): a Read that finds the watch
	// settled finds the reply waiting too.
	w.inject <- &jsonrpc.Response{ID: w.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: "server/discover unanswered within the probe timeout (mcplife): going on with initialize"}}
	w.mu.Unlock()
	w.expired()
}

// answeredLate tells whether the server answered discover with a result
// after the timeout had passed: it speaks the stateless revision and was
// slow to start, not a server of the handshake era.
func (w *discoverWatch) answeredLate() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.late
}

// watching tells whether the discover phase is still open.
func (w *discoverWatch) watching() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.settled
}

// stop disarms the watch; it reports whether the discover expired.
func (w *discoverWatch) stop() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.settled && w.timer != nil {
		w.timer.Stop()
	}
	w.settled = true
	return w.expire
}

type discoverConn struct {
	mcp.Connection
	w *discoverWatch
	// pending is a read of the inner connection started while the
	// discover phase was open, not yet returned.
	pending chan readResult
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

func (c *discoverConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.w.sent(req)
	}
	return c.Connection.Write(ctx, msg)
}

// Read reads from the inner connection; while the discover phase is open
// the read runs aside, so that the reply made up at the timeout can come
// first. go-sdk reads from one goroutine only.
func (c *discoverConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if c.pending == nil && !c.w.watching() {
			// The timeout may have passed before go-sdk's first read.
			select {
			case msg := <-c.w.inject:
				return msg, nil
			default:
			}
			msg, err := c.Connection.Read(ctx)
			if err == nil && c.w.drop(msg) {
				continue
			}
			return msg, err
		}
		if c.pending == nil {
			ch := make(chan readResult, 1)
			go func() {
				msg, err := c.Connection.Read(ctx)
				ch <- readResult{msg, err}
			}()
			c.pending = ch
		}
		select {
		case r := <-c.pending:
			c.pending = nil
			if r.err == nil && c.w.drop(r.msg) {
				continue
			}
			return r.msg, r.err
		case msg := <-c.w.inject:
			return msg, nil
		}
	}
}
