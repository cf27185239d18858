package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcplife/mcplife/runtime/wire"
)

// This file bounds the server's requests in flight (inflight.go) on a
// streamable HTTP connection. go-sdk's client connection there implements an
// unexported interface, so it cannot be wrapped like a stdio or SSE one
// (stray.go); the bound sits in the connection's http.Client instead: it
// reads the JSON-RPC messages of the response bodies go-sdk reads (SSE
// streams, the GET one and those of POSTs, and JSON bodies), counts the
// server's requests, and counts one as answered once the POST carrying the
// client's answer is over, whatever its outcome.
//
// Past the limit the body's Read fails with the *ServerRequestsError, and so
// does every later read of any body and every later request of the
// connection; the connection's sockets are closed, which releases the
// answers blocked on a server that does not read them, and the runtime ends
// the connection (connection.watch) with that error as its cause. go-sdk
// alone would not end it: a POST response stream that fails without an
// event id only fails its call, and every request that fails to be sent is
// "rejected" without breaking the connection.

// maxAnswerBody bounds how much of a POST the client sends is read to find
// the answers in it; a larger body (never an answer go-sdk writes in
// practice) is sent unread.
const maxAnswerBody = wire.DefaultMaxMessageBytes

// requestBound is the http.RoundTripper of one streamable HTTP connection
// that bounds the server's requests in flight.
type requestBound struct {
	base  http.RoundTripper
	limit int // MaxServerRequests
	// maxEvent bounds one SSE event or JSON body parsed (the server's
	// maxMessageBytes); <= 0: none.
	maxEvent int
	// onFail ends the connection's HTTP exchanges (closes its sockets); it
	// runs once, at the first failure.
	onFail func()

	mu       sync.Mutex
	incoming map[jsonrpc.ID]struct{} // the server's requests read, not yet answered
	err      error                   // the first failure; sticky
	failed   chan struct{}           // closed at the first failure
}

func newRequestBound(base http.RoundTripper, limit, maxEvent int, onFail func()) *requestBound {
	return &requestBound{base: base, limit: limit, maxEvent: maxEvent, onFail: onFail,
		incoming: make(map[jsonrpc.ID]struct{}), failed: make(chan struct{})}
}

// failure returns the bound's failure, or nil.
func (b *requestBound) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// fail records err as the failure unless there was one, and returns the
// failure in force.
func (b *requestBound) fail(err error) error {
	b.mu.Lock()
	if b.err != nil {
		err = b.err
		b.mu.Unlock()
		return err
	}
	b.err = err
	clear(b.incoming)
	close(b.failed)
	b.mu.Unlock()
	if b.onFail != nil {
		b.onFail()
	}
	return err
}

// admit counts the server's requests among msgs; past the limit it fails
// the bound.
func (b *requestBound) admit(msgs []wireMsg) error {
	for _, m := range msgs {
		if m.Method == "" || !m.ID.IsValid() || b.limit <= 0 {
			continue
		}
		b.mu.Lock()
		if b.err != nil {
			err := b.err
			b.mu.Unlock()
			return err
		}
		b.incoming[m.ID] = struct{}{}
		over := len(b.incoming) > b.limit
		b.mu.Unlock()
		if over {
			return b.fail(&ServerRequestsError{Limit: b.limit, Method: m.Method})
		}
	}
	return nil
}

// answered counts the requests of ids as answered.
func (b *requestBound) answered(ids []jsonrpc.ID) {
	if len(ids) == 0 {
		return
	}
	b.mu.Lock()
	for _, id := range ids {
		delete(b.incoming, id)
	}
	b.mu.Unlock()
}

// RoundTrip implements http.RoundTripper.
func (b *requestBound) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := b.failure(); err != nil {
		return nil, err
	}
	var answers []jsonrpc.ID
	if req.Method == http.MethodPost {
		var err error
		if answers, req, err = answersIn(req); err != nil {
			return nil, err
		}
	}
	resp, err := b.base.RoundTrip(req)
	b.answered(answers)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 && resp.Body != nil {
		switch mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt {
		case "text/event-stream":
			resp.Body = &boundBody{b: b, body: resp.Body, sse: true}
		case "application/json":
			resp.Body = &boundBody{b: b, body: resp.Body}
		}
	}
	return resp, nil
}

// answersIn returns the ids of the answers (responses) in the body of req,
// a POST. The body is read through GetBody when there is one; otherwise it
// is read, bounded, and req is returned as a clone with the body restored
// (and a GetBody, so that retries can send it again).
func answersIn(req *http.Request) ([]jsonrpc.ID, *http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, req, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, nil, fmt.Errorf("reading the request body again: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(rc, maxAnswerBody+1))
		rc.Close()
		if err != nil || len(data) > maxAnswerBody {
			return nil, req, nil
		}
		return responseIDs(data), req, nil
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, maxAnswerBody+1))
	if err != nil {
		req.Body.Close()
		return nil, nil, fmt.Errorf("reading the request body: %w", err)
	}
	r := req.Clone(req.Context())
	if len(data) > maxAnswerBody {
		// Too large to be an answer worth counting: send it unread.
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(data), req.Body), req.Body}
		return nil, r, nil
	}
	req.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	r.ContentLength = int64(len(data))
	return responseIDs(data), r, nil
}

// responseIDs returns the ids of the JSON-RPC responses in data (one
// message or a batch).
func responseIDs(data []byte) []jsonrpc.ID {
	var ids []jsonrpc.ID
	for _, m := range parseMessages(data) {
		if m.Method == "" && m.ID.IsValid() {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// wireMsg is what the bound needs of one JSON-RPC message.
type wireMsg struct {
	ID     jsonrpc.ID
	Method string
}

// parseMessages reads one JSON-RPC message or a batch; what is not JSON-RPC
// yields nothing (go-sdk refuses it on its own).
func parseMessages(data []byte) []wireMsg {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	one := func(raw []byte) (wireMsg, bool) {
		var m struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(raw, &m) != nil {
			return wireMsg{}, false
		}
		id, err := jsonrpc.MakeID(m.ID) // as go-sdk decodes ids
		if err != nil {
			return wireMsg{}, false
		}
		return wireMsg{ID: id, Method: m.Method}, true
	}
	if data[0] != '[' {
		if m, ok := one(data); ok {
			return []wireMsg{m}
		}
		return nil
	}
	var batch []json.RawMessage
	if json.Unmarshal(data, &batch) != nil {
		return nil
	}
	msgs := make([]wireMsg, 0, len(batch))
	for _, raw := range batch {
		if m, ok := one(raw); ok {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// streamTooLargeError is the failure of a connection whose server sent an
// SSE event or a JSON body larger than the server's maxMessageBytes.
type streamTooLargeError struct {
	Limit  int
	What   string // "SSE event" or "JSON body"
	Sample string
}

func (e *streamTooLargeError) Error() string {
	return fmt.Sprintf("the server's %s exceeds the limit of %d bytes (starts %q); the connection is closed", e.What, e.Limit, e.Sample)
}

// Is makes errors.Is(err, wire.ErrTooLarge) true.
func (e *streamTooLargeError) Is(target error) bool { return target == wire.ErrTooLarge }

// boundBody is a response body whose messages the bound counts as go-sdk
// reads them. Bytes pass through unchanged; the current SSE event (or the
// whole JSON body) is kept, up to maxEvent bytes, until it is complete.
type boundBody struct {
	b    *requestBound
	body io.ReadCloser
	sse  bool

	line []byte // SSE: the current line
	data []byte // SSE: the current event's data; JSON: the body so far
	name string // SSE: the current event's name
	size int    // bytes of the current event (or body) so far
}

func (r *boundBody) Read(p []byte) (int, error) {
	if err := r.b.failure(); err != nil {
		return 0, err
	}
	n, err := r.body.Read(p)
	if n > 0 {
		if ferr := r.observe(p[:n]); ferr != nil {
			return 0, ferr
		}
	}
	if errors.Is(err, io.EOF) {
		if ferr := r.finish(); ferr != nil {
			return 0, ferr
		}
	}
	return n, err
}

func (r *boundBody) Close() error { return r.body.Close() }

// grow accounts n more bytes of the current event or body, of which next
// are the first.
func (r *boundBody) grow(n int, next []byte) error {
	r.size += n
	if r.b.maxEvent <= 0 || r.size <= r.b.maxEvent {
		return nil
	}
	what, start := "JSON body", r.data
	if r.sse {
		what = "SSE event"
		if len(start) == 0 {
			start = r.line
		}
	}
	if len(start) < wire.SampleBytes {
		start = append(start[:len(start):len(start)], next[:min(len(next), wire.SampleBytes)]...)
	}
	return r.b.fail(&streamTooLargeError{Limit: r.b.maxEvent, What: what, Sample: wire.Sample(start)})
}

// observe takes the next bytes of the body.
func (r *boundBody) observe(p []byte) error {
	if !r.sse {
		if err := r.grow(len(p), p); err != nil {
			return err
		}
		r.data = append(r.data, p...)
		return nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i+1]
		}
		if err := r.grow(len(chunk), chunk); err != nil {
			return err
		}
		r.line = append(r.line, chunk...)
		p = p[len(chunk):]
		if i < 0 {
			return nil
		}
		if err := r.endLine(); err != nil {
			return err
		}
	}
	return nil
}

// endLine handles one complete SSE line, as go-sdk's scanner does: a blank
// line ends the event, `data:` lines are joined with newlines, `event:`
// names the event (only unnamed and "message" events carry messages).
func (r *boundBody) endLine() error {
	line := bytes.TrimRight(r.line, "\r\n")
	defer func() {
		r.line = r.line[:0]
		if cap(r.line) > 64<<10 {
			r.line = nil // let a long line's buffer go
		}
	}()
	if len(line) == 0 {
		return r.dispatch()
	}
	field, value, ok := bytes.Cut(line, []byte{':'})
	if !ok {
		return nil
	}
	switch string(field) {
	case "event":
		r.name = string(bytes.TrimSpace(value))
	case "data":
		if len(r.data) > 0 {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, bytes.TrimSpace(value)...)
	}
	return nil
}

// dispatch counts the requests of the current SSE event and starts the next.
func (r *boundBody) dispatch() error {
	data, name := r.data, r.name
	r.data, r.name, r.size = r.data[:0], "", 0
	if cap(r.data) > 64<<10 {
		r.data = nil // let a large event's buffer go
	}
	if len(data) == 0 || (name != "" && name != "message") {
		return nil
	}
	return r.b.admit(parseMessages(data)) // before the buffer is reused
}

// finish handles the end of the body: the last SSE event, or the JSON body.
func (r *boundBody) finish() error {
	if r.sse {
		if len(r.line) > 0 {
			if err := r.endLine(); err != nil {
				return err
			}
		}
		return r.dispatch()
	}
	data := r.data
	r.data = nil
	return r.b.admit(parseMessages(data))
}

// boundFailure returns the failure of the request bound of rc's connection
// (a *ServerRequestsError or an oversized event), or nil; rc may be nil.
func (rc *remoteConn) boundFailure() error {
	if rc == nil || rc.requests == nil {
		return nil
	}
	return rc.requests.failure()
}

// boundFailed is closed at the bound's failure; nil (never ready) when rc
// has no bound.
func (rc *remoteConn) boundFailed() <-chan struct{} {
	if rc == nil || rc.requests == nil {
		return nil
	}
	return rc.requests.failed
}
