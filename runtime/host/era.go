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
)

// IsModern tells whether protocol version v is of the stateless era.
func IsModern(v string) bool { return v >= ProtocolModern }

// errDiscoverUnanswered ends a modern-first attempt whose server never
// answered server/discover (a handshake-era server that ignores methods it
// does not know).
var errDiscoverUnanswered = errors.New("server/discover unanswered within the probe timeout")

// protocolRequest is the version a connect attempt of s asks for first: the
// config's protocolVersion (pinned), else what an earlier fallback learned,
// else Options.ProtocolVersion, else by transport: the modern revision for
// stdio (go-sdk falls back to initialize in the same process when
// server/discover is refused), DefaultProtocolVersion for http and sse,
// whose servers are stateful handshake-era ones unless built stateless, and
// for every server of a custom Options.Dial.
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
	case s.cfg.EffectiveType() == config.Stdio && s.rt.opts.Dial == nil:
		// Only a process the runtime starts itself: a server that ignores
		// server/discover is answered by a new process (connect.go).
		return ProtocolModern, false
	}
	return DefaultProtocolVersion, false
}

// fallbackFor names the version to try next after a failed attempt that
// asked for version, and why; "" when the failure is no era mismatch.
//
//   - A modern-first attempt whose server/discover went unanswered (expired)
//     goes on with the handshake, pinned or not: go-sdk itself falls back
//     to initialize when discover is refused, and only waits out a server
//     that ignores it.
//   - A handshake attempt whose initialize a modern-only server refused
//     with UnsupportedProtocolVersionError naming a modern version goes on
//     with that version, unless the config pins the handshake version.
func fallbackFor(version string, pinned, expired bool, err error) (next, reason string) {
	if IsModern(version) {
		if expired {
			return ProtocolLegacy, FallbackDiscoverUnanswered
		}
		return "", ""
	}
	var rpcErr *jsonrpc.Error
	if pinned || !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeUnsupportedProtocolVersion {
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
// methods never sends one. When the timeout passes first, expire is
// called (it cancels the attempt's handshake with errDiscoverUnanswered).
type discoverWatch struct {
	inner   mcp.Transport
	clock   clock.Clock
	timeout time.Duration
	expire  func()

	mu      sync.Mutex
	id      any // the discover request's id, once written
	timer   clock.Timer
	settled bool // answered, expired, or stopped
	expired bool
}

func (w *discoverWatch) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
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
	w.id = req.ID.Raw()
	w.timer = w.clock.AfterFunc(w.timeout, w.fire)
}

// received notes a message read from the server.
func (w *discoverWatch) received(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.settled || w.timer == nil || resp.ID.Raw() != w.id {
		return
	}
	w.settled = true
	w.timer.Stop()
}

func (w *discoverWatch) fire() {
	w.mu.Lock()
	if w.settled {
		w.mu.Unlock()
		return
	}
	w.settled, w.expired = true, true
	w.mu.Unlock()
	w.expire()
}

// stop disarms the watch; it reports whether the discover expired.
func (w *discoverWatch) stop() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.settled && w.timer != nil {
		w.timer.Stop()
	}
	w.settled = true
	return w.expired
}

type discoverConn struct {
	mcp.Connection
	w *discoverWatch
}

func (c *discoverConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.w.sent(req)
	}
	return c.Connection.Write(ctx, msg)
}

func (c *discoverConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.w.received(msg)
	}
	return msg, err
}
