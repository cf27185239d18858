package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
)

// maxTrackedLine bounds how much of one SSE line resumingBody keeps to find
// the answer of its request; longer data lines are judged by their start.
const maxTrackedLine = 64 << 10

// maxRetryMs is the longest `retry:` a time.Duration holds; a longer one
// is read as this (the call's own timeout ends the wait first).
const maxRetryMs = math.MaxInt64 / uint64(time.Millisecond)

// resumingBody is the body of a POST whose answer comes as an SSE stream.
// It passes the stream through to go-sdk unchanged while it tracks the last
// event id, the server's `retry:` and whether the answer to the request has
// arrived. When the stream ends before the answer and after an event id, it
// waits `retry:` (default 1 s; `retry: 0` is at once) on the runtime's clock, resumes with a GET
// carrying Last-Event-ID and splices the new stream in, so go-sdk sees one
// stream. A resumed stream that ends again without a new event id is not
// resumed a second time.
type resumingBody struct {
	t    *remoteTransport
	req  *http.Request // the POST
	info rpcInfo
	body io.ReadCloser

	sseTracker
	resumedAt string // the last event id of the last resume
	// session is the session id the response assigned when its request
	// carried none (an initialize): the GET that resumes it needs it.
	session string
}

// sseTracker follows an SSE response stream of one request: its last event
// id, the server's `retry:` and whether the request's answer went by.
type sseTracker struct {
	info     rpcInfo
	line     []byte // the current line, up to maxTrackedLine
	lineLong bool   // the current line was longer
	lastID   string
	retry    time.Duration
	hasRetry bool // the stream set retry (0 is "at once")
	answered bool
}

func (b *resumingBody) Read(p []byte) (int, error) {
	for {
		n, err := b.body.Read(p)
		if n > 0 {
			b.observe(p[:n])
			return n, nil
		}
		if err == nil {
			continue
		}
		if b.answered || b.lastID == "" || b.req.Context().Err() != nil || b.lastID == b.resumedAt {
			return 0, err
		}
		if rerr := b.resume(err); rerr != nil {
			return 0, err
		}
	}
}

func (b *resumingBody) Close() error { return b.body.Close() }

// observe scans stream bytes for event ids, `retry:` and the answer.
func (b *sseTracker) observe(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxTrackedLine - len(b.line); room > 0 {
			b.line = append(b.line, chunk[:min(len(chunk), room)]...)
		}
		if len(chunk) > maxTrackedLine-len(b.line) {
			b.lineLong = true
		}
		if i < 0 {
			return
		}
		b.endLine()
		p = p[i+1:]
	}
}

func (b *sseTracker) endLine() {
	line := bytes.TrimSuffix(b.line, []byte{'\r'})
	long := b.lineLong
	b.line, b.lineLong = b.line[:0], false
	field, value, _ := bytes.Cut(line, []byte{':'})
	value = bytes.TrimPrefix(value, []byte{' '})
	switch string(field) {
	case "id":
		b.lastID = string(value)
	case "retry":
		// SSE: a value of ASCII digits only (ParseUint takes no sign) sets
		// the reconnection time; anything else is ignored.
		if ms, err := strconv.ParseUint(string(value), 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			b.retry = time.Duration(min(ms, maxRetryMs)) * time.Millisecond
			b.hasRetry = true
		}
	case "data":
		if b.isAnswer(value, long) {
			b.answered = true
		}
	}
}

// isAnswer reports whether data is the JSON-RPC response to the request.
func (b *sseTracker) isAnswer(data []byte, cut bool) bool {
	if !cut {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(data, &m) != nil || m.Method != "" {
			return false
		}
		var c bytes.Buffer
		return json.Compact(&c, m.ID) == nil && c.String() == b.info.id
	}
	// A response too long to keep: go-sdk writes the id first and a
	// response has no method.
	return bytes.Contains(data, []byte(`"id":`+b.info.id+`,`)) && !bytes.Contains(data[:min(len(data), 4096)], []byte(`"method":`))
}

// resume waits `retry:` on the clock and resumes the stream with GET and
// Last-Event-ID; cause is how the stream ended.
func (b *resumingBody) resume(cause error) error {
	s := b.t.rc.srv
	ctx := b.req.Context()
	b.body.Close()
	b.resumedAt = b.lastID
	// SSE: retry sets the reconnection time, 0 included (at once);
	// without it the wait is the client's own.
	delay := defaultStreamRetry
	if b.hasRetry {
		delay = b.retry
	}
	err := sleepOn(ctx, s.rt.clock, delay, func() {
		s.emit(event.RemoteStreamDropped, event.String("method", b.info.method), event.String("last_event_id", b.lastID),
			event.Millis("retry_ms", delay))
	})
	if err == nil {
		err = b.get()
	}
	if err != nil {
		s.emit(event.RemoteStreamResumeFailed, event.String("last_event_id", b.lastID), event.Err(err))
		return err
	}
	s.mu.Lock()
	b.t.rc.sessions.resumes++
	s.mu.Unlock()
	s.emit(event.RemoteStreamResumed, event.String("last_event_id", b.lastID))
	return nil
}

// get sends the resume GET and installs its body. The GET carries every
// header of the POST it resumes (the configured ones among them), and the
// session id an initialize's response assigned, and goes
// through exchange like any request of the transport: the bearer token in
// force (a refreshed one, or the OAuth flow's), one refresh when the server
// rejects it, a 404 read as an expired session.
func (b *resumingBody) get() error {
	req, err := http.NewRequestWithContext(b.req.Context(), http.MethodGet, b.req.URL.String(), nil)
	if err != nil {
		return err
	}
	req.Header = b.req.Header.Clone()
	if req.Header.Get("Mcp-Session-Id") == "" && b.session != "" {
		req.Header.Set("Mcp-Session-Id", b.session)
	}
	req.Header.Del("Content-Type")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", b.lastID)
	resp, err := b.t.exchange(req, nil, rpcInfo{method: http.MethodGet}, false)
	if err != nil {
		return fmt.Errorf("resume GET: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !isEventStream(resp) {
		discard(resp)
		return fmt.Errorf("resume GET: HTTP %s", resp.Status)
	}
	b.body = resp.Body
	return nil
}
