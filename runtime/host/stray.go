package host

import (
	"context"
	"encoding/json"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/internal/latch"
	"github.com/mcplife/mcplife/runtime/wire"
)

// Reasons of transport.stray_reply.
const (
	strayUnknown   = "unknown"
	strayDuplicate = "duplicate"
)

// strayMemory is how many answered (and how many cancelled) request ids a
// connection remembers, to tell a duplicate reply from one to an id never
// sent, and a late reply to a cancelled call from either.
const strayMemory = 64

// strayTransport watches the replies of its connections: a reply whose id
// matches no request in flight (transport.stray_reply, reason unknown: never
// sent or long forgotten; duplicate: answered already) is reported to report
// with the count of such replies of that reason so far. The reply still goes
// to go-sdk, which drops it: watching never changes what the client sees.
//
// Streamable HTTP connections are not wrapped: go-sdk's client connection
// there implements an unexported interface a wrapper would hide (their
// server requests are bounded in the HTTP client, inflight_http.go).
type strayTransport struct {
	inner  mcp.Transport
	report func(id jsonrpc.ID, reason string, n int)
	// maxIncoming bounds the server's requests in flight (inflight.go).
	maxIncoming int
	conn        atomic.Pointer[strayConn]
	// readEnded is closed when a read of the connection fails, its end
	// included (connect.go's endOnExit; startWatch runs after it).
	readEnded *latch.Latch
}

// strayGuard wraps t to report stray replies of s, unless t is a
// streamable HTTP transport.
func (s *server) strayGuard(t mcp.Transport) mcp.Transport {
	if _, ok := t.(*mcp.StreamableClientTransport); ok {
		return t
	}
	return &strayTransport{inner: t, maxIncoming: MaxServerRequests, readEnded: latch.New(), report: func(id jsonrpc.ID, reason string, n int) {
		// The 1st, 2nd, 4th, 8th... of each reason, like transport.noise.
		if bits.OnesCount(uint(n)) == 1 {
			s.emit(event.TransportStrayReply, event.String("id", idSample(id)), event.String("reason", reason), event.Int("replies", n))
		}
	}}
}

// Connect implements mcp.Transport.
func (t *strayTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc := &strayConn{Connection: c, transport: t, report: t.report, pending: make(map[jsonrpc.ID]struct{}),
		maxIncoming: t.maxIncoming, incoming: make(map[jsonrpc.ID]struct{})}
	t.conn.Store(sc)
	return sc, nil
}

// strayConn tracks the ids of the requests written on it.
type strayConn struct {
	mcp.Connection
	transport *strayTransport
	report    func(id jsonrpc.ID, reason string, n int)

	mu        sync.Mutex
	pending   map[jsonrpc.ID]struct{} // requests written, not yet answered or cancelled
	answered  idRing
	cancelled idRing
	strays    [2]int // unknown, duplicate
	closed    bool   // Close was called
	readErr   error  // the first read failure before Close (readfail.go)

	maxIncoming int                     // see strayTransport
	incoming    map[jsonrpc.ID]struct{} // the server's requests read, not yet answered (inflight.go)
	flooded     bool                    // the server went past maxIncoming
}

// idRing remembers the last strayMemory ids put in it. It grows to
// strayMemory as ids come, so the ring of a connection that made few
// requests holds no more than those.
type idRing struct {
	ids  []jsonrpc.ID
	next int
}

func (r *idRing) put(id jsonrpc.ID) {
	if len(r.ids) < strayMemory {
		r.ids = append(r.ids, id)
		return
	}
	r.ids[r.next] = id
	r.next = (r.next + 1) % strayMemory
}

// take forgets id and reports whether it was there.
func (r *idRing) take(id jsonrpc.ID) bool {
	for i := range r.ids {
		if r.ids[i] == id && id.IsValid() {
			r.ids[i] = jsonrpc.ID{}
			return true
		}
	}
	return false
}

func (r *idRing) has(id jsonrpc.ID) bool {
	for i := range r.ids {
		if r.ids[i] == id && id.IsValid() {
			return true
		}
	}
	return false
}

// Write records the id of a request before it is sent, and forgets the id
// of a request the client cancels.
func (c *strayConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		if resp, ok := msg.(*jsonrpc.Response); ok {
			return c.writeAnswer(ctx, resp)
		}
		return c.Connection.Write(ctx, msg)
	}
	if req.ID.IsValid() {
		c.mu.Lock()
		c.pending[req.ID] = struct{}{}
		c.mu.Unlock()
		err := c.Connection.Write(ctx, msg)
		if err != nil {
			c.mu.Lock()
			delete(c.pending, req.ID)
			c.mu.Unlock()
		}
		return err
	}
	if req.Method == "notifications/cancelled" {
		c.forget(req.Params)
	}
	return c.Connection.Write(ctx, msg)
}

// forget moves the cancelled request of params from pending to cancelled:
// a late reply to it is no stray.
func (c *strayConn) forget(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[id]; ok {
		delete(c.pending, id)
		c.cancelled.put(id)
	}
}

// Read passes every message on, noting replies that match no request.
func (c *strayConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		if ferr := c.admit(req); ferr != nil {
			msg, err = nil, ferr
		}
	}
	if err != nil {
		c.noteReadFailure(ctx, err)
		if t := c.transport; t != nil && t.readEnded != nil {
			t.readEnded.Close()
		}
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.check(resp.ID)
	}
	return msg, err
}

// check matches a reply's id against the requests in flight; it reports
// whether the reply was stray.
func (c *strayConn) check(id jsonrpc.ID) bool {
	c.mu.Lock()
	if _, ok := c.pending[id]; ok {
		delete(c.pending, id)
		c.answered.put(id)
		c.mu.Unlock()
		return false
	}
	if c.cancelled.take(id) {
		c.mu.Unlock()
		return false
	}
	reason, i := strayUnknown, 0
	if c.answered.has(id) {
		reason, i = strayDuplicate, 1
	}
	c.strays[i]++
	n := c.strays[i]
	c.mu.Unlock()
	c.report(id, reason, n)
	return true
}

// idSample renders a reply id as JSON text, capped like every sample of
// what a server sent.
func idSample(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		if len(v) > wire.SampleBytes {
			v = v[:wire.SampleBytes]
		}
		b, _ := json.Marshal(v)
		return wire.Sample(b)
	}
	return "null"
}
