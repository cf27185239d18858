package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
)

// This file is the HTTP layer of remote servers: an http.RoundTripper under
// go-sdk's transports that handles what go-sdk v1.8.0 leaves to the host.
//
//   - go-sdk turns a 404 for a known session into ErrSessionMissing and
//     breaks the connection; it never re-initializes. The round tripper
//     notes the expiry (and whether the request that met it was a call the
//     server never saw); the server re-initializes (remote_server.go).
//   - go-sdk resumes a dropped SSE stream with Last-Event-ID and `retry:`,
//     but waits with time.After (real time) and only with MaxRetries > 0;
//     the runtime sets MaxRetries -1 and resumes POST response streams here,
//     waiting on the runtime's clock (resume.go).
//   - go-sdk retries 401/403 only through an OAuthHandler; the runtime's
//     credentials come from a config.CredentialStore, refreshed here once.
//   - go-sdk treats 429/503 as transient errors of the one request and
//     ignores Retry-After; the round tripper waits for it (capped) and sends
//     the request again once.

// defaultRetryAfterCap bounds Retry-After for a policy without delays
// (never).
const defaultRetryAfterCap = 60 * time.Second

// defaultStreamRetry is the wait before resuming a dropped stream whose
// server sent no `retry:` (go-sdk's initial reconnect delay).
const defaultStreamRetry = time.Second

// remoteConn is what the HTTP layer of one remote connection saw that the
// runtime must act on.
type remoteConn struct {
	srv        *server
	sessions   *remoteSessions // the server's session strategy (remote_server.go)
	credential string          // credential id of an oauth auth block, "" when none
	oauth      *oauthClient    // the server's OAuth flow (auth.grant), nil when none
	conn       *connection     // set before the handshake
	// requests bounds the server's requests in flight on a streamable
	// HTTP connection (inflight_http.go); nil for SSE.
	requests *requestBound

	mu         sync.Mutex
	token      string          // refreshed bearer token, "" before any refresh
	refreshed  map[string]bool // rejected tokens already refreshed
	expired    bool            // a 404 said the session is gone
	authErr    error           // the server needs authorization
	retryAfter time.Duration   // the capped Retry-After of a request refused twice
	// discoverErr: server/discover got no answer about the era; every
	// later request fails with it (remote_era.go)
	discoverErr error
	// listen is the end of the connection's subscriptions/listen stream,
	// listenIDs numbers the listen requests the runtime sent (listen.go).
	listen    listenState
	listenIDs int
}

// sessionExpired reports whether a 404 said the session is gone.
func (rc *remoteConn) sessionExpired() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.expired
}

// authRequired returns why the server needs authorization, or nil.
func (rc *remoteConn) authRequired() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.authErr
}

// lastRetryAfter returns the Retry-After of a request the server refused
// twice, or zero.
func (rc *remoteConn) lastRetryAfter() time.Duration {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.retryAfter
}

// requestMark is attached to the context of a request the runtime may want
// to retry; the round tripper records what happened to it.
type requestMark struct {
	mu        sync.Mutex
	rc        *remoteConn
	unseen404 bool // the request itself was answered 404: the server never saw it
	throttled int  // the request was refused with this status twice
	notFound  bool // a stateless server answered the request 404 twice
}

type requestMarkKey struct{}

// withMark returns ctx carrying a new mark.
func withMark(ctx context.Context) (context.Context, *requestMark) {
	m := &requestMark{}
	return context.WithValue(ctx, requestMarkKey{}, m), m
}

func markOf(ctx context.Context) *requestMark {
	m, _ := ctx.Value(requestMarkKey{}).(*requestMark)
	return m
}

// remoteTransport is the round tripper of one remote connection. It sits
// under headerTransport, so requests carry the configured headers already.
type remoteTransport struct {
	rc   *remoteConn
	base http.RoundTripper
}

// rpcInfo is what the round tripper needs of a JSON-RPC request body.
type rpcInfo struct {
	method string
	id     string // compact JSON of the id; "" for a notification
}

func parseRPC(body []byte) rpcInfo {
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil {
		return rpcInfo{}
	}
	info := rpcInfo{method: m.Method}
	if len(m.ID) > 0 && string(m.ID) != "null" && m.Method != "" {
		var b bytes.Buffer
		if json.Compact(&b, m.ID) == nil {
			info.id = b.String()
		}
	}
	return info
}

func (t *remoteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	info := rpcInfo{method: req.Method}
	if req.Method == http.MethodPost {
		info = parseRPC(body)
	}
	if m := markOf(req.Context()); m != nil {
		m.mu.Lock()
		m.rc = t.rc
		m.mu.Unlock()
	}
	if err := t.rc.discoverFailure(); err != nil {
		return nil, err
	}
	resp, err := t.exchange(req, body, info, true)
	if info.method == methodDiscover && req.Context().Err() == nil {
		t.rc.discoverDone(resp, err) // remote_era.go
	}
	return resp, err
}

// exchange sends req (whose body is body) and handles what the server
// answers: rejected credentials, Retry-After, an expired session, a lost
// answer of a stateless connection (remote_era.go). watch wraps an SSE
// answer so that its loss is resumed (handshake era) or re-issued (stateless
// revision); a re-issued request is not watched again.
func (t *remoteTransport) exchange(req *http.Request, body []byte, info rpcInfo, watch bool) (*http.Response, error) {
	modern := isModernRequest(req)
	var sentGen int64 // OAuth flows that had succeeded when the request was sent
	send := func() (*http.Response, error) {
		r := req.Clone(req.Context())
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		t.rc.mu.Lock()
		if t.rc.token != "" {
			r.Header.Set("Authorization", "Bearer "+t.rc.token)
		}
		t.rc.mu.Unlock()
		if o := t.rc.oauth; o != nil {
			sentGen = o.gen.Load()
			if tok := o.token(r.Context()); tok != "" {
				r.Header.Set("Authorization", "Bearer "+tok)
			}
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil && r.Context().Err() == nil {
			t.unreachable(info, err)
		}
		return resp, err
	}
	resp, err := send()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		if t.rc.oauth != nil {
			resp, err = t.runOAuth(req, info, resp, sentGen, send)
		} else {
			resp, err = t.reauthorize(req, info, resp, send)
		}
		if err != nil {
			return nil, err
		}
	}
	if (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && req.Method == http.MethodPost {
		if resp, err = t.throttled(req, info, resp, send); err != nil {
			return nil, err
		}
	}
	if modern {
		// No sessions in the stateless revision: an id an instance sends
		// anyway is no session of this connection.
		resp.Header.Del("Mcp-Session-Id")
		if resp.StatusCode == http.StatusNotFound && info.id != "" && info.method != methodDiscover && !jsonRPCErrorBody(resp) {
			if resp, err = t.notFound(req, info, resp, send); err != nil {
				return nil, err
			}
		}
	}
	// A 404 to a request carrying a session id is the session's loss,
	// whatever its body: go-sdk's server sends plain text, the TypeScript
	// SDK's a JSON-RPC error (-32001 "Session not found").
	if resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "" {
		t.expired(req, info)
	}
	if watch && req.Method == http.MethodPost && info.id != "" && resp.StatusCode == http.StatusOK && isEventStream(resp) {
		switch {
		case !modern:
			resp.Body = &resumingBody{t: t, req: req, info: info, body: resp.Body, sseTracker: sseTracker{info: info}, session: resp.Header.Get("Mcp-Session-Id")}
		case info.method == methodListen:
			resp.Body = newListenBody(t, req, body, info, resp.Body) // listen.go
		default:
			resp.Body = newReissuingBody(t, req, body, info, resp.Body)
		}
	}
	return resp, nil
}

func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// jsonRPCErrorBody reports whether resp carries a JSON-RPC error: on a
// stateless connection, a 404 that is the request's own answer (an unknown
// method's), not a missing endpoint. The body stays readable.
func jsonRPCErrorBody(resp *http.Response) bool {
	const limit = 64 << 10
	b, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	var m struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(b, &m) == nil && len(m.Error) > 0 && string(m.Error) != "null"
}

// discard drains and closes a response that is replaced by another.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// expired records a 404 for the session.
func (t *remoteTransport) expired(req *http.Request, info rpcInfo) {
	rc := t.rc
	rc.mu.Lock()
	first := !rc.expired
	rc.expired = true
	rc.mu.Unlock()
	if m := markOf(req.Context()); m != nil && info.id != "" {
		m.mu.Lock()
		m.unseen404 = true
		m.mu.Unlock()
	}
	if first {
		rc.srv.emit(event.RemoteSessionExpired, event.String("method", info.method))
	}
}

// unreachable reports a request that could not reach the server.
func (t *remoteTransport) unreachable(info rpcInfo, err error) {
	if reason := unreachableReason(err); reason != "" {
		t.rc.srv.emit(event.RemoteUnreachable, event.String("method", info.method), event.String("reason", reason), event.Err(err))
	}
}

// unreachableReason names why a request could not reach the server:
// "refused", "reset", or "" for any other failure.
func unreachableReason(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF):
		// A reset that comes while the request is still being written
		// surfaces as EPIPE ("broken pipe") instead of ECONNRESET.
		return "reset"
	}
	return ""
}

// bearer returns the token of an Authorization: Bearer header.
func bearer(h http.Header) string {
	tok, _ := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	return tok
}

// reauthorize handles 401/403: the credential is refreshed once through the
// provider and the request sent again; when that is impossible or the new
// token is rejected too, the server needs authorization.
func (t *remoteTransport) reauthorize(req *http.Request, info rpcInfo, resp *http.Response, send func() (*http.Response, error)) (*http.Response, error) {
	rc := t.rc
	s := rc.srv
	status := resp.StatusCode
	s.emit(event.RemoteAuthRejected, event.Int("status", status), event.String("method", info.method))
	rejected := bearer(req.Header)
	rc.mu.Lock()
	if rc.token != "" {
		rejected = rc.token
	}
	done := rc.refreshed[rejected]
	rc.mu.Unlock()
	var err error
	var tok string
	switch {
	case rc.credential == "":
		err = errors.New("no credential is configured for the server (auth block with credentialId)")
	case done:
		err = fmt.Errorf("credential %q was already refreshed once and rejected again", rc.credential)
	default:
		tok, err = config.RefreshToken(req.Context(), s.rt.opts.Credentials, rc.credential, rejected)
	}
	if err != nil {
		t.needAuth(status, err)
		return resp, nil
	}
	rc.mu.Lock()
	if rc.refreshed == nil {
		rc.refreshed = map[string]bool{}
	}
	rc.refreshed[rejected] = true
	rc.refreshed[tok] = true // a rejection of the new token is final
	rc.token = tok
	rc.mu.Unlock()
	discard(resp)
	s.emit(event.RemoteAuthRefreshed, event.String("credential", rc.credential))
	s.emit(event.RemoteRequestRetried, event.String("method", info.method), event.String("reason", "auth-refreshed"))
	resp, err = send()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		s.emit(event.RemoteAuthRejected, event.Int("status", resp.StatusCode), event.String("method", info.method))
		t.needAuth(resp.StatusCode, fmt.Errorf("the refreshed credential %q was rejected too", rc.credential))
	}
	return resp, nil
}

// runOAuth handles 401/403 of a server with an OAuth grant: the flow runs
// once for the request (go-sdk's rule: Authorize, then one retry) and the
// request is sent again with the new token; when the flow fails or the new
// token is rejected too, the server needs authorization.
func (t *remoteTransport) runOAuth(req *http.Request, info rpcInfo, resp *http.Response, sentGen int64, send func() (*http.Response, error)) (*http.Response, error) {
	s := t.rc.srv
	status := resp.StatusCode
	s.emit(event.RemoteAuthRejected, event.Int("status", status), event.String("method", info.method))
	// The handler consumes the response; the caller may still need it.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	seen := *resp
	seen.Body = io.NopCloser(bytes.NewReader(b))
	if err := t.rc.oauth.authorize(req, &seen, sentGen); err != nil {
		t.needAuth(status, err)
		return resp, nil
	}
	s.emit(event.RemoteRequestRetried, event.String("method", info.method), event.String("reason", "authorized"))
	resp, err := send()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		s.emit(event.RemoteAuthRejected, event.Int("status", resp.StatusCode), event.String("method", info.method))
		t.needAuth(resp.StatusCode, fmt.Errorf("the token of the %s flow was rejected too", t.rc.oauth.grant))
	}
	return resp, nil
}

// needAuth records that the server needs authorization.
func (t *remoteTransport) needAuth(status int, cause error) {
	rc := t.rc
	rc.mu.Lock()
	first := rc.authErr == nil
	if first {
		rc.authErr = fmt.Errorf("HTTP %d: %w", status, cause)
	}
	rc.mu.Unlock()
	if first {
		rc.srv.emit(event.RemoteAuthRequired, event.Int("status", status), event.Err(cause))
	}
}

// throttled handles 429/503: with a Retry-After, the request is sent again
// once after it, capped by the restart policy's longest delay.
func (t *remoteTransport) throttled(req *http.Request, info rpcInfo, resp *http.Response, send func() (*http.Response, error)) (*http.Response, error) {
	s := t.rc.srv
	ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), s.rt.clock.Now())
	if !ok {
		return resp, nil
	}
	delay := min(ra, s.retryAfterCap())
	t.rc.mu.Lock()
	t.rc.retryAfter = delay
	t.rc.mu.Unlock()
	status := resp.StatusCode
	discard(resp)
	// The timer is armed before the event, so a harness that awaits the
	// event can advance the clock without a race.
	timer := s.rt.clock.NewTimer(delay)
	s.emit(event.RemoteThrottled, event.Int("status", status), event.String("method", info.method),
		event.Millis("retry_after_ms", ra), event.Millis("delay_ms", delay))
	select {
	case <-timer.C():
	case <-req.Context().Done():
		timer.Stop()
		return nil, fmt.Errorf("waiting %s for Retry-After after HTTP %d: %w", delay, status, context.Cause(req.Context()))
	}
	s.emit(event.RemoteRequestRetried, event.String("method", info.method), event.String("reason", "retry-after"))
	resp, err := send()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if ra2, ok := parseRetryAfter(resp.Header.Get("Retry-After"), s.rt.clock.Now()); ok {
			t.rc.mu.Lock()
			t.rc.retryAfter = min(ra2, s.retryAfterCap())
			t.rc.mu.Unlock()
		}
		if m := markOf(req.Context()); m != nil && info.id != "" {
			m.mu.Lock()
			m.throttled = resp.StatusCode
			m.mu.Unlock()
		}
	} else {
		t.rc.mu.Lock()
		t.rc.retryAfter = 0
		t.rc.mu.Unlock()
	}
	return resp, nil
}

// parseRetryAfter reads a Retry-After value: delta-seconds or an HTTP date
// (relative to now).
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, 1<<31)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// retryAfterCap is the longest Retry-After the runtime honours: the restart
// policy's longest delay.
func (s *server) retryAfterCap() time.Duration {
	var longest time.Duration
	for _, d := range s.policy.Delays {
		longest = max(longest, d)
	}
	if longest == 0 {
		return defaultRetryAfterCap
	}
	return longest
}

// sleepOn waits d on the runtime's clock, armed before emit runs.
func sleepOn(ctx context.Context, c clock.Clock, d time.Duration, emit func()) error {
	t := c.NewTimer(d)
	defer t.Stop()
	emit()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
