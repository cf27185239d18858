package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// discoverWatch bounds go-sdk's server/discover on a stdio connection: go-sdk
// waits for a discover reply as long as its context lives, and a
// handshake-era server that ignores unknown methods never sends one. When
// the watch decides the server will not answer, it hands go-sdk a
// method-not-found reply of its own, so go-sdk goes on with initialize on
// the same connection, and drops the server's own reply if it comes later;
// expired is called (it reports the fallback). The same process goes on
// (the revision suggests a new one): a new process would start the server
// again from nothing.
//
// The decision rests on evidence where the pipe tells it (unread, from
// proc.Process.StdinUnread), looked at every step on the runtime's clock:
//   - the server has not read all that was written to it: it is still
//     starting (or busy with discover, if it reads one request at a time),
//     and the watch waits on; the connect timeout bounds that wait, as it
//     bounds an initialize nobody reads;
//   - it has read discover and not answered: the watch sends it two
//     requests under ids of the runtime's own, whose answers go-sdk never
//     sees: a request of a method nobody defines (discoverProbeMethod),
//     which a server that follows JSON-RPC refuses with method-not-found,
//     then a ping, which the handshake era allows before initialize. A
//     server that answers the ping while the unknown method and discover
//     still wait reads and answers requests and ignores what it does not
//     know: the watch decides at once. One that answers the unknown
//     method answers what it does not know, so its discover answer is
//     coming (a server that handles requests side by side and is slow
//     with discover): the watch waits on, bounded by the connect timeout;
//   - it has read them and answered none for timeout (the probe timeout)
//     since the discover: the watch decides as it always did.
//
// Without unread (a transport whose pipe cannot be asked) the watch
// decides when timeout passes, as before.
type discoverWatch struct {
	inner   mcp.Transport
	clock   clock.Clock
	timeout time.Duration
	// step is how often the watch looks at the pipe (discoverStep).
	step time.Duration
	// unread reports how many bytes written to the server it has not read
	// yet; ok false when that cannot be told. nil: never known.
	unread  func() (n int, ok bool)
	expired func()

	inject  chan jsonrpc.Message // the reply made up when the watch decides
	conn    mcp.Connection       // the inner connection, for the ping
	ctx     context.Context      // Connect's context, for the ping's write
	pingID  jsonrpc.ID
	mu      sync.Mutex
	id      jsonrpc.ID // the discover request's id, once written
	sentAt  time.Time  // when it was written, on the clock
	timer   clock.Timer
	pinged  bool // the unknown method and the ping were written
	probeID jsonrpc.ID
	// probeAnswered: the server answered the unknown method (refused it).
	probeAnswered bool
	// settled: answered, expired, stopped, or another request came first.
	settled bool
	expire  bool // the watch decided before the server answered discover
	late    bool // after that, the server answered discover itself, with a result
	// pingAnswered: the server answered the ping while discover waited.
	pingAnswered bool
	// asked: unread has answered at least once.
	asked bool
	// expiring, made when the watch decides, is closed once the expired
	// callback has returned.
	expiring chan struct{}
}

// The watch's own requests: their ids are strings, where go-sdk's request
// ids are numbers.
const (
	discoverPingID  = "mcplife-discover-ping"
	discoverProbeID = "mcplife-discover-probe"
	// discoverProbeMethod is a method no revision defines.
	discoverProbeMethod = "mcplife/probe-unknown-method"
)

// discoverStep is how often a discoverWatch with a pipe to look at looks:
// a tenth of the probe timeout (300 ms by default), at least 10 ms.
func discoverStep(probeTimeout time.Duration) time.Duration {
	return max(probeTimeout/10, 10*time.Millisecond)
}

func (w *discoverWatch) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	w.pingID, err = jsonrpc.MakeID(discoverPingID)
	if err == nil {
		w.probeID, err = jsonrpc.MakeID(discoverProbeID)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("discover watch: %w", err)
	}
	w.inject = make(chan jsonrpc.Message, 1)
	w.conn, w.ctx = c, ctx
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
	w.sentAt = w.clock.Now()
	first := w.timeout
	if w.unread != nil {
		first = w.step
	}
	w.timer = w.clock.AfterFunc(first, w.fire)
}

// drop tells whether msg, read from the server, is to be kept from go-sdk:
// the reply to the watch's ping, or the discover reply the watch already
// made up. A first reply to discover settles the watch; a reply to the
// ping while discover waits decides it.
func (w *discoverWatch) drop(msg jsonrpc.Message) bool {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return false
	}
	w.mu.Lock()
	if w.timer == nil {
		w.mu.Unlock()
		return false
	}
	if w.pinged && resp.ID == w.probeID {
		w.probeAnswered = true
		w.mu.Unlock()
		return true
	}
	if w.pinged && resp.ID == w.pingID {
		decided := !w.settled && !w.probeAnswered
		if decided {
			w.pingAnswered = true
			w.expireLocked()
		}
		done := w.expiring
		w.mu.Unlock()
		if decided {
			w.expired()
			close(done)
		}
		return true
	}
	defer w.mu.Unlock()
	if resp.ID != w.id {
		return false
	}
	if w.expire {
		// Late: go-sdk already has the reply made up. A result means a
		// server of the stateless revision that was only slow to answer.
		w.late = w.late || resp.Error == nil
		return true
	}
	if !w.settled {
		w.settled = true
		w.timer.Stop()
	}
	return false
}

// fire is the watch's look at the server (see discoverWatch).
func (w *discoverWatch) fire() {
	w.mu.Lock()
	if w.settled || w.ctx.Err() != nil {
		// Settled, or the connect is over (it timed out, or was
		// abandoned): a look that comes late decides nothing.
		w.mu.Unlock()
		return
	}
	ping := false
	if w.unread != nil {
		n, ok := w.unread()
		askedBefore := w.asked
		w.asked = w.asked || ok
		switch {
		case !ok && askedBefore:
			// The pipe answered before and is closed now: the try is
			// ending (its connect timed out or the server went away),
			// which is no evidence of the server's era.
			w.mu.Unlock()
			return
		case !ok:
			// The pipe cannot be asked: decide as without one, when the
			// timeout has passed.
			if left := w.timeout - w.clock.Since(w.sentAt); left > 0 {
				w.timer = w.clock.AfterFunc(left, w.fire)
				w.mu.Unlock()
				return
			}
		case n > 0:
			// Not read yet: still starting, or busy with discover.
			w.timer = w.clock.AfterFunc(w.step, w.fire)
			w.mu.Unlock()
			return
		case !w.pinged:
			w.pinged, ping = true, true
		case w.probeAnswered || w.clock.Since(w.sentAt) < w.timeout:
			w.timer = w.clock.AfterFunc(w.step, w.fire)
			w.mu.Unlock()
			return
		}
	}
	if ping {
		w.mu.Unlock()
		// A failed write is no evidence either way: the server's exit
		// ends the try, or the probe timeout decides.
		if w.conn.Write(w.ctx, &jsonrpc.Request{ID: w.probeID, Method: discoverProbeMethod, Params: json.RawMessage(`{}`)}) == nil {
			_ = w.conn.Write(w.ctx, &jsonrpc.Request{ID: w.pingID, Method: "ping", Params: json.RawMessage(`{}`)})
		}
		// The next look is armed once both are written: armed before, it
		// could come first (a clock moved on by more than a step at once)
		// and find everything read because nothing more was written yet.
		w.mu.Lock()
		if !w.settled {
			w.timer = w.clock.AfterFunc(w.step, w.fire)
		}
		w.mu.Unlock()
		return
	}
	w.expireLocked()
	done := w.expiring
	w.mu.Unlock()
	w.expired()
	close(done)
}

// expireLocked decides that the server will not answer discover: go-sdk
// gets the made-up reply.
func (w *discoverWatch) expireLocked() {
	w.settled, w.expire = true, true
	w.expiring = make(chan struct{})
	if w.timer != nil {
		w.timer.Stop()
	}
	// Under the lock (inject has room for it): a Read that finds the watch
	// settled finds the reply waiting too.
	msg := "server/discover unanswered within the probe timeout (mcplife): going on with initialize"
	if w.pingAnswered {
		msg = "server/discover unanswered while the server answered a ping sent after it and ignored a method it does not know (mcplife): going on with initialize"
	}
	w.inject <- &jsonrpc.Response{ID: w.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: msg}}
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

// stop disarms the watch; it reports whether the discover expired, once
// the expired callback has returned (what it reports comes before whatever
// follows the connect).
func (w *discoverWatch) stop() bool {
	w.mu.Lock()
	if !w.settled && w.timer != nil {
		w.timer.Stop()
	}
	w.settled = true
	expire, done := w.expire, w.expiring
	w.mu.Unlock()
	if done != nil {
		<-done
	}
	return expire
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
