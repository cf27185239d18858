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
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/event"
)

// This file keeps the subscriptions/listen stream of a stateless
// (2026-07-28) connection open (docs/LIFECYCLE.md, "Remote servers"). The
// revision has no standalone GET stream: go-sdk opens one listen request for
// the list changes the server advertises and never looks at it again, so
// neither a stream that ends nor a server that went away while idle would be
// noticed. The runtime therefore wraps the listen request's response stream
// (listenBody):
//
//   - The stream ends closed when the server answered the listen request
//     first (the revision's graceful closure), broken otherwise (an abrupt
//     drop). Either way the runtime re-opens it with a new listen request
//     and splices the new stream in, so go-sdk reads one stream; the
//     answer that closes a stream is never handed to go-sdk, which would
//     stop reading.
//   - A broken stream is re-opened at once; a closed one after the
//     server's restart policy's first delay, at least defaultStreamRetry.
//     Further re-opens wait the policy's next delays on the runtime's
//     clock, at most maxListenReopens in a row and never past the
//     policy's delays; a stream that stayed open for the stability window
//     starts the count again. Then the connection goes on without a
//     listen stream (remote.listen_gave_up).
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

	opened   time.Time // when src was opened, on the clock
	closed   bool      // src carried the answer to its listen request
	attempts int       // re-opens in a row
	held     []byte    // the start of an unfinished event
	ready    []byte    // complete events not yet read by go-sdk
	end      error     // the error every later Read returns
	scratch  []byte
}

func newListenBody(t *remoteTransport, req *http.Request, body []byte, info rpcInfo, src io.ReadCloser) *listenBody {
	return &listenBody{t: t, req: req, body: body, info: info, src: src, opened: t.rc.srv.rt.clock.Now()}
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
	s := b.t.rc.srv
	rt := s.rt
	b.src.Close()
	reason := "broken"
	if b.closed {
		reason = "closed"
	}
	if rt.clock.Since(b.opened) >= rt.opts.StabilityWindow {
		b.attempts = 0
	}
	graceful := b.closed
	b.closed = false
	first := true
	for {
		b.attempts++
		delay, ok := b.delay(b.attempts, graceful)
		if first {
			// The timer is armed before the event, so a harness that
			// awaits the event can advance the clock without a race.
			timer := rt.clock.NewTimer(delay)
			s.emit(event.RemoteListenLost, event.String("reason", reason), event.Millis("delay_ms", delay))
			first = false
			if err := b.wait(timer); err != nil {
				return err
			}
		} else if !ok {
			s.emit(event.RemoteListenGaveUp, event.Int("attempts", b.attempts-1))
			return cause
		}
		err := b.reopen()
		switch {
		case err == nil:
			s.emit(event.RemoteListenReopened, event.Int("attempt", b.attempts))
			b.refreshLists()
			return nil
		case ctx.Err() != nil:
			return err
		case isUnreachable(err):
			b.t.rc.listenGone(fmt.Errorf("the %s stream ended (%s) and the server cannot be reached: %w", methodListen, reason, err))
			return err
		}
		next, more := b.delay(b.attempts+1, graceful)
		attrs := []event.Attr{event.Int("attempt", b.attempts), event.Err(err)}
		if more {
			attrs = append(attrs, event.Millis("next_delay_ms", next))
		}
		timer := rt.clock.NewTimer(next)
		s.emit(event.RemoteListenReopenFailed, attrs...)
		if !more {
			timer.Stop()
			continue // gives up above
		}
		if err := b.wait(timer); err != nil {
			return err
		}
	}
}

// delay is the wait before re-open n (from 1) of a run, and whether there
// is one. The first re-open of a broken stream is made at once, whatever
// the policy (one request tells whether the server is still there); the
// first after a graceful end waits the server's restart policy's first
// delay, at least defaultStreamRetry; re-open n > 1 waits the policy's
// delay n-1. Never past maxListenReopens, nor past the policy's delays.
func (b *listenBody) delay(n int, graceful bool) (time.Duration, bool) {
	if n > maxListenReopens {
		return 0, false
	}
	if n == 1 && !graceful {
		return 0, true
	}
	s := b.t.rc.srv
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
	newID := strconv.Quote("mcplife-listen-" + strconv.Itoa(b.t.rc.nextListenID()))
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
	b.opened = b.t.rc.srv.rt.clock.Now()
	return nil
}

// refreshLists lists the tools again after a re-open, as after one
// tools/list_changed, and the resources and prompts the server's config
// follows, as after one list_changed of each (resources.changed,
// prompts.changed, then tools.changed, each debounced: once tools.changed
// is out, every refresh's timer is armed). The connection may still be
// connecting (a stream that broke at once): the debounce's refresh runs
// only once it is the server's connection (debounceLocked).
func (b *listenBody) refreshLists() {
	c := b.t.rc.conn
	if c == nil {
		return
	}
	s := b.t.rc.srv
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
