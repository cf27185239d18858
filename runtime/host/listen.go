package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file keeps the subscriptions/listen stream of a stateless
// (2026-07-28) connection open (docs/LIFECYCLE.md, "Remote servers" and
// "Protocol eras"). The revision has no standalone GET stream: go-sdk opens
// one listen request for the list changes the server advertises and never
// looks at it again, so neither a stream that ends nor a server that went
// away while idle would be noticed. Over HTTP the runtime therefore wraps
// the listen request's response stream (listenBody); on stdio (and any
// other connection but streamable HTTP) it watches the listen request on
// the connection (listenConn), where the server ends the stream
// gracefully by answering the request while the process lives on, and
// where an abrupt end is the pipe's, that is the process's, noticed as
// such. Both follow one schedule (listenRun):
//
//   - The stream ends closed when the server answered the listen request
//     first (the revision's graceful closure), broken otherwise (an abrupt
//     drop). Either way the runtime re-opens it with a new listen request
//     (over HTTP splicing the new stream in, so go-sdk reads one stream);
//     the answer that closes a stream is never handed to go-sdk, which
//     would stop reading (HTTP) or take its listen for over (stdio).
//   - A broken stream is re-opened at once; a closed one after the
//     server's restart policy's first delay, at least defaultStreamRetry.
//     Further re-opens wait the policy's next delays on the runtime's
//     clock, at most maxListenReopens in a row and never past the
//     policy's delays; a stream that stayed open for the stability window
//     starts the count again, and one that ended earlier counts as a
//     re-open in a row. Then the connection goes on without a listen
//     stream (remote.listen_gave_up).
//   - A re-open that cannot reach the server (connection refused or reset)
//     means the server went away: the connection ends (listenGone), and the
//     restart policy takes over with reason transport-exit, as when a
//     handshake-era connection loses its GET stream.
//   - After a re-open the tools are listed again (one tools/list_changed),
//     and so are the resources and prompts the server's config follows
//     (one list_changed of each): what the server sent while no stream was
//     open is lost.

// maxListenReopens bounds the re-opens of a listen stream in a row.
const maxListenReopens = 5

// listenState is the end of a connection's listen stream that ends the
// connection (a re-open that could not reach the server).
type listenState struct {
	once sync.Once
	gone chan struct{}
	err  error
}

// listenGone ends rc's connection: its listen stream broke and the server
// cannot be reached.
func (rc *remoteConn) listenGone(err error) {
	rc.listen.once.Do(func() {
		rc.mu.Lock()
		rc.listen.err = err
		rc.mu.Unlock()
		close(rc.listenDone())
	})
}

// listenDone returns the channel closed by listenGone.
func (rc *remoteConn) listenDone() chan struct{} {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.listen.gone == nil {
		rc.listen.gone = make(chan struct{})
	}
	return rc.listen.gone
}

// listenEnded is closed when the connection's listen stream ended it; nil
// (never ready) when rc is nil.
func (rc *remoteConn) listenEnded() <-chan struct{} {
	if rc == nil {
		return nil
	}
	return rc.listenDone()
}

// listenFailure returns why the listen stream ended the connection.
func (rc *remoteConn) listenFailure() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.listen.err
}

// listenBody is the response stream of a subscriptions/listen request of a
// stateless connection, kept open across the ends of the server's streams.
type listenBody struct {
	t    *remoteTransport
	req  *http.Request // the listen POST go-sdk sent
	body []byte        // its body
	info rpcInfo
	src  io.ReadCloser // the stream read now

	run     listenRun
	closed  bool   // src carried the answer to its listen request
	held    []byte // the start of an unfinished event
	ready   []byte // complete events not yet read by go-sdk
	end     error  // the error every later Read returns
	scratch []byte
}

func newListenBody(t *remoteTransport, req *http.Request, body []byte, info rpcInfo, src io.ReadCloser) *listenBody {
	s := t.rc.srv
	return &listenBody{t: t, req: req, body: body, info: info, src: src, run: listenRun{s: s, opened: s.rt.clock.Now()}}
}

func (b *listenBody) Read(p []byte) (int, error) {
	for len(b.ready) == 0 && b.end == nil {
		if b.scratch == nil {
			b.scratch = make([]byte, 32<<10)
		}
		n, err := b.src.Read(b.scratch)
		if n > 0 {
			b.take(b.scratch[:n])
		}
		if err != nil {
			b.held = nil // an unfinished event of a stream that ended
			b.end = b.ended(err)
		}
	}
	if len(b.ready) == 0 {
		return 0, b.end
	}
	n := copy(p, b.ready)
	b.ready = b.ready[n:]
	return n, nil
}

func (b *listenBody) Close() error { return b.src.Close() }

// take adds bytes read from the stream: complete events become ready,
// except the answer to a listen request, which marks the stream closed.
func (b *listenBody) take(p []byte) {
	b.held = append(b.held, p...)
	for {
		k := firstEventEnd(b.held)
		if k == 0 {
			break
		}
		ev := b.held[:k]
		if isResponseEvent(ev) {
			b.closed = true
		} else {
			b.ready = append(b.ready, ev...)
		}
		b.held = b.held[k:]
	}
	if len(b.held) > maxHeldEvent {
		// An event this large is no notification of the listen stream:
		// pass it on as it comes.
		b.ready = append(b.ready, b.held...)
		b.held = nil
	}
	b.held = append([]byte(nil), b.held...)
}

// ended handles the end of the stream read now (cause): it re-opens the
// stream and returns nil when reading goes on, or the end go-sdk sees.
func (b *listenBody) ended(cause error) error {
	ctx := b.req.Context()
	if ctx.Err() != nil {
		return cause // go-sdk closed the session
	}
	b.src.Close()
	graceful := b.closed
	b.closed = false
	var timer clock.Timer
	arm := func(d time.Duration) { timer = b.run.s.rt.clock.NewTimer(d) }
	if !b.run.lost(graceful, arm) {
		return cause
	}
	if err := b.wait(timer); err != nil {
		return err
	}
	for {
		err := b.reopen()
		switch {
		case err == nil:
			b.run.reopened(b.t.rc.conn)
			return nil
		case ctx.Err() != nil:
			return err
		case isUnreachable(err):
			b.t.rc.listenGone(fmt.Errorf("the %s stream ended (%s) and the server cannot be reached: %w", methodListen, listenReason(graceful), err))
			return err
		}
		if !b.run.failed(err, arm) {
			return cause
		}
		if err := b.wait(timer); err != nil {
			return err
		}
	}
}

// listenRun is the re-open schedule of one listen stream, the same over
// HTTP (listenBody) and stdio (listenConn): the waits, the bound, the
// stability window, the events and the lists listed again.
type listenRun struct {
	s        *server
	opened   time.Time // when the stream open now was opened, on the clock
	attempts int       // re-opens in a row
	graceful bool      // the run began with a stream the server closed
}

// listenReason is remote.listen_lost's reason.
func listenReason(graceful bool) string {
	if graceful {
		return "closed"
	}
	return "broken"
}

// lost begins a run of re-opens after the stream open now ended
// (graceful: the server answered the listen request first). A stream that
// stayed open for the stability window starts the count again. arm is
// called with the wait before the first re-open before remote.listen_lost
// is emitted, so a harness that awaits the event can advance the clock
// without a race. A stream that ended after maxListenReopens re-opens in
// a row (or past the policy's delays) is not re-opened:
// remote.listen_gave_up follows, and lost reports false.
func (r *listenRun) lost(graceful bool, arm func(time.Duration)) bool {
	rt := r.s.rt
	if rt.clock.Since(r.opened) >= rt.opts.StabilityWindow {
		r.attempts = 0
	}
	r.graceful = graceful
	r.attempts++
	delay, ok := r.delay(r.attempts)
	if ok {
		arm(delay)
	}
	r.s.emit(event.RemoteListenLost, event.String("reason", listenReason(graceful)), event.Millis("delay_ms", delay))
	if !ok {
		r.attempts--
		r.s.emit(event.RemoteListenGaveUp, event.Int("attempts", r.attempts))
	}
	return ok
}

// reopened notes a re-open that got a stream (remote.listen_reopened) and
// lists again what c's server may have changed meanwhile.
func (r *listenRun) reopened(c *connection) {
	r.opened = r.s.rt.clock.Now()
	r.s.emit(event.RemoteListenReopened, event.Int("attempt", r.attempts))
	r.s.relistAfterListen(c)
}

// failed notes a re-open the server refused (err): when the run goes on,
// arm is called with the wait before the next re-open before
// remote.listen_reopen_failed is emitted; otherwise remote.listen_gave_up
// follows it and failed reports false.
func (r *listenRun) failed(err error, arm func(time.Duration)) bool {
	next, more := r.delay(r.attempts + 1)
	attrs := []event.Attr{event.Int("attempt", r.attempts), event.Err(err)}
	if more {
		attrs = append(attrs, event.Millis("next_delay_ms", next))
		arm(next)
	}
	r.s.emit(event.RemoteListenReopenFailed, attrs...)
	if !more {
		r.s.emit(event.RemoteListenGaveUp, event.Int("attempts", r.attempts))
		return false
	}
	r.attempts++
	return true
}

// delay is the wait before re-open n (from 1) of a run, and whether there
// is one. The first re-open of a broken stream is made at once, whatever
// the policy (one request tells whether the server is still there); the
// first after a graceful end waits the server's restart policy's first
// delay, at least defaultStreamRetry; re-open n > 1 waits the policy's
// delay n-1. Never past maxListenReopens, nor past the policy's delays.
func (r *listenRun) delay(n int) (time.Duration, bool) {
	if n > maxListenReopens {
		return 0, false
	}
	if n == 1 && !r.graceful {
		return 0, true
	}
	s := r.s
	s.mu.Lock()
	d, ok := s.policy.Delay(n - 1)
	s.mu.Unlock()
	if n == 1 {
		if !ok {
			d = 0
		}
		return max(d, defaultStreamRetry), true
	}
	return d, ok
}

// wait waits for timer, or fails when go-sdk closes the listen request.
func (b *listenBody) wait(timer clock.Timer) error {
	select {
	case <-timer.C():
		return nil
	case <-b.req.Context().Done():
		timer.Stop()
		return fmt.Errorf("re-opening %s: %w", methodListen, context.Cause(b.req.Context()))
	}
}

// reopen sends a new listen request (a new id: the revision's rule for a
// request whose stream was lost) and makes its stream the one read.
func (b *listenBody) reopen() error {
	newID := strconv.Quote(listenIDPrefix + strconv.Itoa(b.t.rc.nextListenID()))
	body, err := withID(b.body, newID)
	if err != nil {
		return err
	}
	req := b.req.Clone(b.req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := b.t.exchange(req, body, rpcInfo{method: methodListen, id: newID}, false)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !isEventStream(resp) {
		discard(resp)
		return fmt.Errorf("re-opening %s: HTTP %s", methodListen, resp.Status)
	}
	b.src = resp.Body
	return nil
}

// relistAfterListen lists the tools of c again after a re-open of its
// listen stream, as after one tools/list_changed, and the resources and
// prompts the server's config follows, as after one list_changed of each
// (resources.changed, prompts.changed, then tools.changed, each
// debounced: once tools.changed is out, every refresh's timer is armed).
// The connection may still be connecting (a stream that ended at once):
// the debounce's refresh runs only once it is the server's connection
// (debounceLocked).
func (s *server) relistAfterListen(c *connection) {
	if c == nil {
		return
	}
	if s.cfg.Resources {
		s.listChanged(c, listResources)
	}
	if s.cfg.Prompts {
		s.listChanged(c, listPrompts)
	}
	s.toolsChanged(c)
}

// nextListenID numbers the listen requests the runtime sends itself.
func (rc *remoteConn) nextListenID() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.listenIDs++
	return rc.listenIDs
}

// isUnreachable tells whether err means a request could not reach the
// server (remote.unreachable's reasons).
func isUnreachable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)
}

// firstEventEnd returns the end of the first complete SSE event in p (just
// past its blank line), or 0.
func firstEventEnd(p []byte) int {
	end := 0
	for _, sep := range [][]byte{[]byte("\n\n"), []byte("\r\n\r\n")} {
		if i := bytes.Index(p, sep); i >= 0 && (end == 0 || i+len(sep) < end) {
			end = i + len(sep)
		}
	}
	return end
}

// isResponseEvent tells whether the SSE event ev carries a JSON-RPC
// response (on a listen stream: the answer that closes it).
func isResponseEvent(ev []byte) bool {
	var data []byte
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			data = append(data, bytes.TrimSpace(d)...)
		}
	}
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	return json.Unmarshal(data, &m) == nil && m.Method == "" && len(m.ID) > 0
}

// listenKeeper keeps the subscriptions/listen stream of a connection that
// is no streamable HTTP one (stdio above all) open: there the stream is
// go-sdk's listen request on the connection itself, and the server ends
// it gracefully by answering the request while the process lives on
// (listenConn). An abrupt end has no meaning of its own there: the pipe
// that breaks is the connection's, and its end is the transport's.
type listenKeeper struct {
	inner mcp.Transport
	s     *server
	// conn is the connection whose lists are listed again after a
	// re-open; set before the handshake.
	conn *connection
}

// listenGuard wraps t to keep its listen stream open (listenKeeper),
// unless t is a streamable HTTP transport (listenBody keeps those).
func (s *server) listenGuard(t mcp.Transport) *listenKeeper {
	if _, ok := t.(*mcp.StreamableClientTransport); ok {
		return nil
	}
	return &listenKeeper{inner: t, s: s}
}

// Connect implements mcp.Transport.
func (k *listenKeeper) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := k.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &listenConn{Connection: c, k: k, run: listenRun{s: k.s}}, nil
}

// listenConn watches go-sdk's subscriptions/listen request on a connection
// and keeps its stream open:
//
//   - The server's answer to the listen request open now (a result: the
//     revision's graceful closure) is never handed to go-sdk, whose
//     listen call stays pending as if the stream were still open; the
//     runtime re-opens the stream with a listen request of its own (go-sdk's
//     params under a new id) on the listenRun schedule, on the clock.
//   - A re-open is open once the server acknowledges it
//     (notifications/subscriptions/acknowledged naming its id, handed to
//     go-sdk as the first stream's was): remote.listen_reopened, and the
//     lists are listed again. A JSON-RPC error answering it is a refused
//     re-open (remote.listen_reopen_failed); a result before the
//     acknowledgement, a stream opened and closed at once.
//   - go-sdk's cancellation of its listen request (notifications/cancelled,
//     when the session closes) is sent for the listen request open now.
type listenConn struct {
	mcp.Connection
	k *listenKeeper

	mu     sync.Mutex
	params json.RawMessage // go-sdk's listen params
	orig   jsonrpc.ID      // go-sdk's listen request's id
	cur    jsonrpc.ID      // the listen request open now (orig, or a re-open)
	acked  bool            // cur's stream was acknowledged
	ids    int             // re-open requests sent
	run    listenRun
	timer  clock.Timer
	closed bool
}

func (c *listenConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.mu.Lock()
		switch {
		case req.Method == methodListen && req.IsCall() && !c.orig.IsValid():
			c.orig, c.cur, c.acked = req.ID, req.ID, true
			c.params = req.Params
			c.run.opened = c.run.s.rt.clock.Now()
		case req.Method == "notifications/cancelled" && c.cur.IsValid() && c.cur != c.orig:
			msg = c.cancelCurrentLocked(req)
		}
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// cancelCurrentLocked turns go-sdk's cancellation of its listen request
// into one of the re-open open now; any other cancellation is left as is.
func (c *listenConn) cancelCurrentLocked(req *jsonrpc.Request) jsonrpc.Message {
	var p map[string]any
	if json.Unmarshal(req.Params, &p) != nil || !sameID(p["requestId"], c.orig) {
		return req
	}
	p["requestId"] = c.cur.Raw()
	b, err := json.Marshal(p)
	if err != nil {
		return req
	}
	return &jsonrpc.Request{Method: req.Method, Params: b}
}

// sameID tells whether raw, a request id decoded from JSON, is id.
func sameID(raw any, id jsonrpc.ID) bool {
	got, err := jsonrpc.MakeID(raw)
	return err == nil && got == id
}

func (c *listenConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil || !c.take(msg) {
			return msg, err
		}
	}
}

// take handles a message read from the server; it reports whether the
// message is kept from go-sdk.
func (c *listenConn) take(msg jsonrpc.Message) bool {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method == "notifications/subscriptions/acknowledged" {
			c.acknowledged(m.Params)
		}
		return false
	case *jsonrpc.Response:
		return c.answered(m)
	}
	return false
}

// acknowledged handles a listen stream's acknowledgement: that of the
// re-open sent last opens its stream.
func (c *listenConn) acknowledged(params json.RawMessage) {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	c.mu.Lock()
	if c.acked || c.cur == c.orig || !sameID(p.Meta["io.modelcontextprotocol/subscriptionId"], c.cur) {
		c.mu.Unlock()
		return
	}
	c.acked = true
	c.mu.Unlock()
	c.run.reopened(c.k.conn)
}

// answered handles a response: one to a listen request is kept from
// go-sdk (see listenConn); it reports whether resp is.
func (c *listenConn) answered(resp *jsonrpc.Response) bool {
	c.mu.Lock()
	if !c.orig.IsValid() || c.closed {
		c.mu.Unlock()
		return false
	}
	if resp.ID != c.cur {
		// An answer to an earlier listen request of the runtime's (its
		// ids are strings, go-sdk's numbers): nothing of go-sdk's.
		mine := resp.ID.Raw() != nil && resp.ID != c.orig && isListenID(resp.ID)
		c.mu.Unlock()
		return mine
	}
	if resp.ID == c.orig && resp.Error != nil {
		// The server refused go-sdk's own listen request: go-sdk's.
		c.mu.Unlock()
		return false
	}
	acked := c.acked
	c.acked = false
	c.mu.Unlock()
	if resp.Error != nil {
		if !c.run.failed(resp.Error, c.arm) {
			c.stop()
		}
		return true
	}
	if !acked {
		c.run.reopened(c.k.conn) // opened and closed at once
	}
	if !c.run.lost(true, c.arm) {
		c.stop()
	}
	return true
}

// isListenID tells whether id is one of the runtime's listen requests.
func isListenID(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && strings.HasPrefix(s, listenIDPrefix)
}

// listenIDPrefix begins the ids of the runtime's own listen requests.
const listenIDPrefix = "mcplife-listen-"

// arm schedules the next re-open after d on the clock.
func (c *listenConn) arm(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.timer = c.run.s.rt.clock.AfterFunc(d, c.reopen)
}

// stop ends the run without a stream: the connection goes on without one.
func (c *listenConn) stop() {
	c.mu.Lock()
	c.cur = jsonrpc.ID{}
	c.mu.Unlock()
}

// reopen sends a new listen request (a new id: the revision's rule for a
// request whose stream was lost).
func (c *listenConn) reopen() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.ids++
	id, err := jsonrpc.MakeID(listenIDPrefix + strconv.Itoa(c.ids))
	if err != nil {
		c.mu.Unlock()
		return
	}
	c.cur, c.acked = id, false
	req := &jsonrpc.Request{ID: id, Method: methodListen, Params: c.params}
	c.mu.Unlock()
	// A write that fails is the connection's end, which the transport
	// reports: nothing more to do here.
	_ = c.Connection.Write(context.Background(), req)
}

func (c *listenConn) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		if c.timer != nil {
			c.timer.Stop()
		}
	}
	c.mu.Unlock()
	return c.Connection.Close()
}
