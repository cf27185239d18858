package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcplife/mcplife/runtime/event"
)

// This file is the HTTP layer of a stateless (2026-07-28) connection, where
// the revision removed what remote.go and resume.go lean on in the
// handshake era (docs/LIFECYCLE.md, "Remote servers"):
//
//   - There is no Mcp-Session-Id, so nothing can expire. A 404 without a
//     JSON-RPC error means no MCP endpoint served the request (an instance
//     behind a load balancer that does not serve it yet): the request is
//     sent again once, at once, and a second 404 fails that request alone
//     (go-sdk would break the whole connection on it). A session id a
//     stateless server's instance sends anyway is dropped, so that replies
//     of different instances never look like a session change.
//   - There is no Last-Event-ID: a response stream that ends before its
//     answer is answered by re-issuing the request as a new request with a
//     new id, once (the revision's changelog: "a broken response stream
//     loses the in-flight request; clients MUST re-issue it as a new
//     request with a new request ID"). The answer to the new request is
//     handed to go-sdk under the original id, on the original stream.
//   - server/discover is the era probe: go-sdk falls back to initialize on
//     any failure of it. A discover that never got an HTTP answer, was
//     throttled past its Retry-After, got a 5xx or a rejected credential
//     says nothing about the era, so it ends the connect try
//     (discoverDone) instead of letting go-sdk fall back.

// methodDiscover is the era probe of the stateless revision.
const methodDiscover = "server/discover"

// methodListen is the long-lived stream of change notifications; its loss
// is not a lost answer.
const methodListen = "subscriptions/listen"

// maxHeldEvent bounds the part of an SSE event a reissuingBody holds back
// until the event is complete; past it the event is passed on as it comes
// and a loss of the stream is no longer re-issued.
const maxHeldEvent = 4 << 20

// isModernRequest tells whether req, sent by go-sdk, is a request of the
// stateless revision: go-sdk puts the version of each request's _meta in
// the MCP-Protocol-Version header.
func isModernRequest(req *http.Request) bool {
	return req.Method == http.MethodPost && IsModern(req.Header.Get("Mcp-Protocol-Version"))
}

// discoverDone judges the outcome of a server/discover exchange: when it
// is no answer about the era, every later request of the connection fails
// at once with why, so that go-sdk's fallback to initialize fails without
// reaching the network and the connect try ends with that cause.
func (rc *remoteConn) discoverDone(resp *http.Response, err error) {
	var cause error
	switch {
	case err != nil:
		cause = err
	case rc.authRequired() != nil:
		cause = rc.authRequired()
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		cause = fmt.Errorf("HTTP %s", resp.Status)
	default:
		return // an answer: go-sdk decides the era from it
	}
	rc.mu.Lock()
	rc.discoverErr = fmt.Errorf("%s got no answer about the protocol era: %w", methodDiscover, cause)
	rc.mu.Unlock()
}

// discoverFailure returns why the connection's server/discover ended it,
// or nil.
func (rc *remoteConn) discoverFailure() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.discoverErr
}

// notFound handles a 404 without a JSON-RPC error to a request of a
// stateless connection: it is sent again once; a second such 404 is turned
// into a JSON-RPC error for that request, so that go-sdk fails the request
// and keeps the connection.
func (t *remoteTransport) notFound(req *http.Request, info rpcInfo, resp *http.Response, send func() (*http.Response, error)) (*http.Response, error) {
	s := t.rc.srv
	discard(resp)
	s.emit(event.RemoteNotFound, event.String("method", info.method))
	s.emit(event.RemoteRequestRetried, event.String("method", info.method), event.String("reason", "not-found"))
	resp, err := send()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusNotFound || jsonRPCErrorBody(resp) {
		return resp, nil
	}
	discard(resp)
	s.emit(event.RemoteNotFound, event.String("method", info.method))
	if m := markOf(req.Context()); m != nil {
		m.mu.Lock()
		m.notFound = true
		m.mu.Unlock()
	}
	return rpcErrorResponse(req, info.id, http.StatusNotFound,
		"HTTP 404 twice from a stateless server: no MCP endpoint served the request (mcplife)"), nil
}

// rpcErrorResponse is an HTTP response of status carrying a JSON-RPC error
// for the request of id (compact JSON).
func rpcErrorResponse(req *http.Request, id string, status int, message string) *http.Response {
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", json.RawMessage(id), jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: message}})
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// reissuingBody is the body of a POST of a stateless connection whose
// answer comes as an SSE stream. It passes the stream on to go-sdk one
// complete event at a time, and watches for the answer. When the stream
// ends before the answer, it re-issues the request once with a new id and
// goes on with the new request's stream (or JSON body), giving its answer
// the original id; what the lost stream held of an unfinished event is
// dropped, so go-sdk never reads half an event.
type reissuingBody struct {
	t    *remoteTransport
	req  *http.Request // the POST
	body []byte        // the POST's body
	info rpcInfo
	src  io.ReadCloser // the stream read now

	track    sseTracker // what go-sdk was given
	held     []byte     // the start of an unfinished event
	ready    []byte     // complete events not yet read by go-sdk
	pass     bool       // an event outgrew maxHeldEvent: pass bytes as they come
	newID    string     // the re-issued request's id (compact JSON), once re-issued
	end      error      // the error every later Read returns
	scratch  []byte
	reissued bool
}

func newReissuingBody(t *remoteTransport, req *http.Request, body []byte, info rpcInfo, src io.ReadCloser) *reissuingBody {
	return &reissuingBody{t: t, req: req, body: body, info: info, src: src, track: sseTracker{info: info}}
}

func (b *reissuingBody) Read(p []byte) (int, error) {
	for len(b.ready) == 0 && b.end == nil {
		if b.scratch == nil {
			b.scratch = make([]byte, 32<<10)
		}
		n, err := b.src.Read(b.scratch)
		if n > 0 {
			b.take(b.scratch[:n])
		}
		if err != nil {
			b.finishHeld()
			b.end = b.lost(err) // nil once re-issued: reading goes on
		}
	}
	if len(b.ready) == 0 {
		return 0, b.end
	}
	n := copy(p, b.ready)
	b.ready = b.ready[n:]
	return n, nil
}

// finishHeld handles what the ended stream left of an unfinished event:
// the answer without its blank line is passed on, anything else dropped.
func (b *reissuingBody) finishHeld() {
	if len(b.held) == 0 {
		return
	}
	held := append(b.held, '\n', '\n')
	b.held = nil
	probe := sseTracker{info: b.info}
	if b.newID != "" {
		held = rewriteAnswerID(held, b.newID, b.info.id)
	}
	if probe.observe(held); probe.answered {
		b.track.observe(held)
		b.ready = append(b.ready, held...)
	}
}

// take adds bytes read from the stream: complete events become ready.
func (b *reissuingBody) take(p []byte) {
	if b.pass {
		b.release(p)
		return
	}
	b.held = append(b.held, p...)
	if k := lastEventEnd(b.held); k > 0 {
		b.release(b.held[:k])
		b.held = append(b.held[:0], b.held[k:]...)
	}
	if len(b.held) > maxHeldEvent {
		b.pass = true
		b.release(b.held)
		b.held = nil
	}
}

// release makes complete events ready for go-sdk, with the re-issued
// request's answer under the original id.
func (b *reissuingBody) release(events []byte) {
	if b.newID != "" {
		events = rewriteAnswerID(events, b.newID, b.info.id)
	}
	b.track.observe(events)
	b.ready = append(b.ready, events...)
}

// lost handles the end of the stream read now (cause): the end go-sdk
// sees, or nil when the request was re-issued and reading goes on.
func (b *reissuingBody) lost(cause error) error {
	if b.track.answered || b.pass || b.req.Context().Err() != nil {
		return cause
	}
	s := b.t.rc.srv
	s.emit(event.RemoteStreamLost, event.String("method", b.info.method))
	if b.reissued {
		return cause
	}
	b.reissued = true
	b.src.Close()
	b.held = nil
	if err := b.reissue(); err != nil {
		s.emit(event.RemoteReissueFailed, event.String("method", b.info.method), event.Err(err))
		return cause
	}
	return nil
}

// reissue sends the request again with a new id and installs the answer.
func (b *reissuingBody) reissue() error {
	newID := strconv.Quote("mcplife-reissued-" + strings.Trim(b.info.id, `"`))
	body, err := withID(b.body, newID)
	if err != nil {
		return err
	}
	s := b.t.rc.srv
	s.emit(event.RemoteRequestReissued, event.String("method", b.info.method))
	req := b.req.Clone(b.req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := b.t.exchange(req, body, rpcInfo{method: b.info.method, id: newID}, false)
	if err != nil {
		return err
	}
	b.newID = newID
	switch {
	case resp.StatusCode == http.StatusOK && isEventStream(resp):
		b.src = resp.Body
		return nil
	case resp.StatusCode/100 == 2 || jsonRPCErrorBody(resp):
		// One JSON body (an answer, or a JSON-RPC error of any status):
		// handed on as one SSE event of the original stream.
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(b.t.rc.srv.maxMessageBytes())+1))
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("reading the answer of the re-issued request: %w", err)
		}
		b.release(append(append([]byte("event: message\ndata: "), bytes.TrimSpace(data)...), '\n', '\n'))
		b.src = io.NopCloser(bytes.NewReader(nil))
		return nil
	}
	discard(resp)
	return fmt.Errorf("re-issued request: HTTP %s", resp.Status)
}

func (b *reissuingBody) Close() error { return b.src.Close() }

// lastEventEnd returns the end of the last complete SSE event in p (just
// past its blank line), or 0.
func lastEventEnd(p []byte) int {
	end := 0
	for _, sep := range [][]byte{[]byte("\n\n"), []byte("\r\n\r\n")} {
		if i := bytes.LastIndex(p, sep); i >= 0 && i+len(sep) > end {
			end = i + len(sep)
		}
	}
	return end
}

// withID returns the JSON-RPC request body with its id replaced by id
// (JSON).
func withID(body []byte, id string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("re-issuing the request: %w", err)
	}
	m["id"] = json.RawMessage(id)
	return json.Marshal(m)
}

// rewriteAnswerID gives the response of id in the SSE events the id orig
// (ids as compact JSON); other messages pass unchanged.
func rewriteAnswerID(events []byte, id, orig string) []byte {
	if !bytes.Contains(events, []byte(id)) {
		return events
	}
	lines := bytes.SplitAfter(events, []byte("\n"))
	var out []byte
	for _, line := range lines {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			out = append(out, line...)
			continue
		}
		text := bytes.TrimSpace(data)
		var m map[string]json.RawMessage
		var got bytes.Buffer
		if json.Unmarshal(text, &m) != nil || m["method"] != nil || json.Compact(&got, m["id"]) != nil || got.String() != id {
			out = append(out, line...)
			continue
		}
		m["id"] = json.RawMessage(orig)
		b, err := json.Marshal(m)
		if err != nil {
			out = append(out, line...)
			continue
		}
		out = append(append(append(out, "data: "...), b...), '\n')
	}
	return out
}

// errNotFoundTwice is the cause of a call a stateless server answered 404
// twice.
var errNotFoundTwice = errors.New("the stateless server answered HTTP 404 twice: no MCP endpoint served the call (no session to re-initialize)")

// statelessNotFound is what a call gets after 404 twice.
func (r *remoteSessions) statelessNotFound(cause error) error {
	return &ServerError{Code: CodeUnavailable, Server: r.s.name, Kind: ErrUnavailable, Cause: fmt.Errorf("%w (%v)", errNotFoundTwice, cause)}
}
