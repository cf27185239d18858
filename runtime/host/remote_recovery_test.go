package host

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
)

// remoteEnv starts an http fixture with knobs and a runtime whose server fx
// points at it; extra is added to fx's config object.
func remoteEnv(t *testing.T, knobs map[string]string, extra string, opts Options) (*fixtureEnv, *remoteFixture, *Session) {
	t.Helper()
	dir := t.TempDir()
	remote := startRemote(t, dir, "http", knobs)
	if extra != "" {
		extra = "," + extra
	}
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q%s}`, remote.url(), extra))}
	}, opts)
	e.dir = dir
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e, remote, sess
}

func (e *fixtureEnv) status(name string) ServerStatus {
	for _, st := range e.rt.Status() {
		if st.Name == name {
			return st
		}
	}
	e.t.Fatalf("no status for %s", name)
	return ServerStatus{}
}

// TestRemoteSessionExpiryRetriesCall: a tools/call answered 404 for an
// expired session was never seen by the server; the runtime re-initializes
// at once and sends the call again on the new session.
func TestRemoteSessionExpiryRetriesCall(t *testing.T) {
	// initialized (1), tools/list (2); the call is the third session POST.
	e, _, sess := remoteEnv(t, map[string]string{"MCP_FIXTURE_SESSION_EXPIRE_AFTER": "2"}, "", Options{})
	res, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "again"})
	if err != nil || !strings.Contains(res.Text, "again") {
		for _, ev := range e.rt.Events().Events() {
			t.Logf("DBG %v", ev)
		}
		t.Fatalf("call = %+v, %v", res, err)
	}
	e.await(m(event.RemoteSessionExpired, "fx", "method", "tools/call"))
	e.await(m(event.RemoteSessionReinitialized, "fx"))
	e.await(m(event.RemoteRequestRetried, "fx", "method", "tools/call", "reason", "session-expired"))
	if n := e.count("fx", "call-start"); n != 1 {
		t.Fatalf("the server saw %d calls, want 1", n)
	}
	if n := e.count("fx", "initialize"); n != 2 {
		t.Fatalf("initialize %d times, want 2", n)
	}
	if st := e.status("fx"); st.SessionReinits != 1 || st.State != StateConnected {
		t.Fatalf("status %+v", st)
	}
	for _, ev := range e.rt.Events().Events() {
		if ev.Kind == event.RestartScheduled {
			t.Fatalf("a session expiry went through the restart policy: %v", ev)
		}
	}
}

// TestRemoteLossReportedTwice: the end of a connection that races with
// its install is reported twice, by the connection's watch and by
// attempt, which checks for an end it may have missed; only the first
// report is handled. The second used to tell a call awaiting the new
// session that the loss had been handled before that session existed, so
// the call ended mcp_connection_lost instead of being sent again (about
// once in 300 runs of TestRemoteSessionExpiryRetriesCall under load).
func TestRemoteLossReportedTwice(t *testing.T) {
	e, _, _ := remoteEnv(t, nil, "", Options{})
	e.rt.mu.Lock()
	s := e.rt.servers["fx"]
	e.rt.mu.Unlock()
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	// Nothing ends c's session: close it before the runtime closes.
	t.Cleanup(func() { c.close(context.Background(), "test over") })
	c.remote.mu.Lock()
	c.remote.expired = true // as a 404 for the session records it
	c.remote.mu.Unlock()
	cause := errors.New("session not found")
	s.connectionLost(c, cause) // the watch's report
	s.connectionLost(c, cause) // attempt's, of the same end
	nc := s.sessions.(*remoteSessions).awaitNewSession(t.Context(), c)
	if nc == nil || nc == c {
		t.Fatalf("awaitNewSession = %p, want the new session's connection (old %p)", nc, c)
	}
	e.await(m(event.RemoteSessionReinitialized, "fx"))
	if st := e.status("fx"); st.SessionReinits != 1 || st.State != StateConnected {
		t.Fatalf("status %+v", st)
	}
	for _, ev := range e.rt.Events().Events() {
		if ev.Kind == event.RestartScheduled || ev.Kind == event.RemoteSessionReinitFailed {
			t.Fatalf("one loss handled twice: %v", ev)
		}
	}
}

// TestRemoteSessionExpiryJSONRPCBody: the TypeScript SDK's server answers
// a forgotten session with 404 and a JSON-RPC error (-32001 "Session not
// found"); a 404 to a request carrying a session id is the session's loss
// whatever its body, so the call goes to a new session as with go-sdk's
// plain-text 404.
func TestRemoteSessionExpiryJSONRPCBody(t *testing.T) {
	e, _, sess := remoteEnv(t, map[string]string{"MCP_FIXTURE_SESSION_EXPIRE_AFTER": "2", "MCP_FIXTURE_SESSION_EXPIRED_BODY": "jsonrpc"}, "", Options{})
	res, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "again"})
	if err != nil || !strings.Contains(res.Text, "again") {
		t.Fatalf("call = %+v, %v", res, err)
	}
	e.await(m(event.RemoteSessionExpired, "fx", "method", "tools/call"))
	e.await(m(event.RemoteRequestRetried, "fx", "method", "tools/call", "reason", "session-expired"))
	if n := e.count("fx", "call-start"); n != 1 {
		t.Fatalf("the server saw %d calls, want 1", n)
	}
	if n := e.count("fx", "initialize"); n != 2 {
		t.Fatalf("initialize %d times, want 2", n)
	}
}

// TestRemoteCloseBoundedByGrace: a server that never answers the DELETE
// ending its session holds the close for the stdin grace of the stop
// sequence, on the clock, and no longer: then the connection's sockets are
// closed (process.signaled pid 0: session-close, then sockets-closed) and
// the close returns.
func TestRemoteCloseBoundedByGrace(t *testing.T) {
	e, _, _ := remoteEnv(t, map[string]string{"MCP_FIXTURE_DELETE_HANG": "1"}, "", Options{})
	closed := make(chan struct{})
	go func() {
		e.rt.Close(context.Background())
		close(closed)
	}()
	e.await(m(event.ProcessSignaled, "fx", "step", "session-close"))
	e.awaitJournal("fx", "delete-held", 1)
	select {
	case <-closed:
		t.Fatal("the close returned while the DELETE was held and the clock stood still")
	default:
	}
	e.clock.Advance(proc.DefaultGraceStep)
	e.await(m(event.ProcessSignaled, "fx", "step", "sockets-closed"))
	<-closed
	e.awaitJournal("fx", "delete-abandoned", 1)
}

// TestRemoteProbeReinitializesExpiredSession: the health probe after a
// tool timeout meets a 404 for the session (the server forgot it while the
// call hung): the runtime initializes a new session and the probe's ping
// goes there; the server is healthy, the call keeps its timeout error and
// nothing is restarted.
func TestRemoteProbeReinitializesExpiredSession(t *testing.T) {
	e, remote, sess := remoteEnv(t, map[string]string{"MCP_FIXTURE_HANG_MS": "600000"}, "",
		Options{ToolTimeout: time.Second, ProbeTimeout: 3 * time.Second})
	out := e.callAsync(sess, "mcp_fx_test", map[string]any{"text": "slow"})
	e.awaitJournal("fx", "hang-start", 1)
	if err := syscall.Kill(remote.cmd.Process.Pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	e.awaitJournal("fx", "expire-command", 1)
	e.clock.Advance(time.Second)
	o := <-out
	if !errors.Is(o.err, ErrToolTimeout) {
		t.Fatalf("call = %+v, %v; want the tool timeout", o.res, o.err)
	}
	e.await(m(event.RemoteRequestRetried, "fx", "method", "ping", "reason", "session-expired"))
	e.await(m(event.ProbeFinished, "fx", "healthy", "true", "method", "ping"))
	if n := e.count("fx", "initialize"); n != 2 {
		t.Fatalf("initialize %d times, want 2", n)
	}
	for _, ev := range e.rt.Events().Events() {
		if ev.Kind == event.RestartScheduled {
			t.Fatalf("the expired session went through the restart policy: %v", ev)
		}
	}
}

// TestRemoteStreamResumed: a response stream closed after an event id is
// resumed with Last-Event-ID after the server's retry:, on the clock.
func TestRemoteStreamResumed(t *testing.T) {
	e, _, sess := remoteEnv(t, map[string]string{"MCP_FIXTURE_STREAM_DROP": "1", "MCP_FIXTURE_STREAM_RETRY_MS": "2000"}, "", Options{})
	out := e.callAsync(sess, "mcp_fx_echo", map[string]any{"text": "resumed"})
	e.await(m(event.RemoteStreamDropped, "fx", "method", "tools/call", "retry_ms", "2000"))
	e.clock.Advance(2 * time.Second)
	e.await(m(event.RemoteStreamResumed, "fx"))
	o := <-out
	if o.err != nil || !strings.Contains(o.res.Text, "resumed") {
		t.Fatalf("call = %+v, %v", o.res, o.err)
	}
	e.awaitJournal("fx", "stream-resumed", 1)
	if n := e.count("fx", "call-start"); n != 1 {
		t.Fatalf("the server saw %d calls, want 1", n)
	}
	if st := e.status("fx"); st.StreamResumes != 1 {
		t.Fatalf("status %+v", st)
	}
}

// TestRemoteStreamResumedAtOnce: `retry: 0` is a reconnection time of
// zero, not "no retry:": the stream is resumed without the clock moving.
func TestRemoteStreamResumedAtOnce(t *testing.T) {
	e, _, sess := remoteEnv(t, map[string]string{"MCP_FIXTURE_STREAM_DROP": "1", "MCP_FIXTURE_STREAM_RETRY_MS": "0"}, "", Options{})
	out := e.callAsync(sess, "mcp_fx_echo", map[string]any{"text": "resumed"})
	e.await(m(event.RemoteStreamDropped, "fx", "method", "tools/call", "retry_ms", "0"))
	e.await(m(event.RemoteStreamResumed, "fx"))
	o := <-out
	if o.err != nil || !strings.Contains(o.res.Text, "resumed") {
		t.Fatalf("call = %+v, %v", o.res, o.err)
	}
	if n := e.count("fx", "call-start"); n != 1 {
		t.Fatalf("the server saw %d calls, want 1", n)
	}
}

// TestRemoteInitializeStreamResumed: the SSE stream answering initialize
// ends after its priming event; the runtime resumes it with GET and
// Last-Event-ID carrying the session id the initialize's response
// assigned (its POST had none), and connects on that session. A proxy in
// front of the fixture forwards the priming event only, keeps the rest of
// the stream and answers the resuming GET with it itself: a go-sdk server
// that saw the cut may have dropped the session or still hold the stream
// (404, 409), which would test the server, not the runtime.
func TestRemoteInitializeStreamResumed(t *testing.T) {
	dir := t.TempDir()
	// STREAM_DROP enables the fixture's event store, so that streams start
	// with a priming event; the call it would drop is never made.
	remote := startRemote(t, dir, "http", map[string]string{"MCP_FIXTURE_STREAM_DROP": "100"})
	backend := "http://" + remote.addr
	var mu sync.Mutex
	var assigned, resumedWith string
	var held []byte // the cut stream's rest
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			mu.Lock()
			resumedWith = r.Header.Get("Mcp-Session-Id")
			rest := held
			held = nil
			mu.Unlock()
			if rest == nil {
				http.Error(w, "nothing to resume", http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(rest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if r.Method != http.MethodPost || !strings.Contains(string(body), `"method":"initialize"`) {
			forward(w, r, backend)
			return
		}
		resp := pass(w, r, backend)
		if resp == nil {
			return
		}
		defer resp.Body.Close()
		if isEventStream(resp) {
			all, _ := io.ReadAll(resp.Body)
			prime, rest, _ := bytes.Cut(all, []byte("\n\n"))
			mu.Lock()
			assigned, held = resp.Header.Get("Mcp-Session-Id"), rest
			mu.Unlock()
			w.Write(append(prime, "\n\n"...))
			return // the cut
		}
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(front.Close)
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q}`, front.URL+"/mcp"))}
	}, Options{})
	e.dir = dir
	opened := make(chan error, 1)
	go func() {
		_, err := e.rt.OpenSession(t.Context(), SessionOptions{})
		opened <- err
	}()
	e.await(m(event.RemoteStreamDropped, "fx", "method", "initialize"))
	e.clock.Advance(defaultStreamRetry)
	e.await(m(event.RemoteStreamResumed, "fx"))
	e.await(m(event.ServerConnected, "fx", "attempt", "0"))
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if assigned == "" || resumedWith != assigned {
		t.Fatalf("the resuming GET carried session %q, the initialize's response assigned %q", resumedWith, assigned)
	}
	if n := e.count("fx", "initialize"); n != 1 {
		t.Fatalf("initialize %d times, want 1", n)
	}
}

// pass sends r to backend and writes the answer's status and headers to
// w; the caller copies the body and closes it. On a failure it answers 502
// itself and returns nil.
func pass(w http.ResponseWriter, r *http.Request, backend string) *http.Response {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, backend+r.URL.Path, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return nil
	}
	out.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return nil
	}
	maps.Copy(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	return resp
}

// forward passes r to backend and its answer back, line by line, each
// flushed at once (an SSE stream goes through as it comes). The tests' own
// proxy: httputil.ReverseProxy now and then cut a stream of these tests
// under heavy load (about 1 run in 150 to 600: "ReverseProxy read error
// during body copy: use of closed network connection"), which made the
// runtime resume what the server never dropped.
func forward(w http.ResponseWriter, r *http.Request, backend string) {
	resp := pass(w, r, backend)
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadBytes('\n')
		w.Write(line)
		w.(http.Flusher).Flush()
		if err != nil {
			return
		}
	}
}

// TestSSERetryField: which `retry:` values set the reconnection time. SSE
// takes ASCII digits only and ignores anything else; a value too long for
// a time.Duration is the longest one.
func TestSSERetryField(t *testing.T) {
	for _, c := range []struct {
		line string
		want time.Duration
		set  bool
	}{
		{"retry: 0\n", 0, true},
		{"retry:250\n", 250 * time.Millisecond, true},
		{"retry: 2000\r\n", 2 * time.Second, true},
		{"retry: 99999999999999999999999\n", time.Duration(maxRetryMs) * time.Millisecond, true},
		{"retry: +5\n", 0, false},
		{"retry: -1\n", 0, false},
		{"retry: 1.5\n", 0, false},
		{"retry: \n", 0, false},
		{"retry: 1_000\n", 0, false},
	} {
		var b sseTracker
		b.observe([]byte(c.line))
		if b.retry != c.want || b.hasRetry != c.set {
			t.Errorf("%q: retry %v set %v, want %v %v", c.line, b.retry, b.hasRetry, c.want, c.set)
		}
	}
}

// TestRemoteStreamResumeCarriesHeaders: the GET that resumes a dropped
// stream carries the configured headers, not only the bearer token. A proxy
// in front of the fixture refuses every request without the configured
// X-Api-Key header.
func TestRemoteStreamResumeCarriesHeaders(t *testing.T) {
	dir := t.TempDir()
	remote := startRemote(t, dir, "http", map[string]string{"MCP_FIXTURE_STREAM_DROP": "1", "MCP_FIXTURE_STREAM_RETRY_MS": "2000"})
	var mu sync.Mutex
	var refused []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "k1" {
			mu.Lock()
			refused = append(refused, r.Method)
			mu.Unlock()
			http.Error(w, "no api key", http.StatusUnauthorized)
			return
		}
		forward(w, r, "http://"+remote.addr)
	}))
	// Registered first, so it runs after the runtime's cleanup has closed
	// the connections through it.
	t.Cleanup(front.Close)
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q,"headers":{"X-Api-Key":"k1"}}`, front.URL+"/mcp"))}
	}, Options{})
	e.dir = dir
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := e.callAsync(sess, "mcp_fx_echo", map[string]any{"text": "resumed"})
	e.await(m(event.RemoteStreamDropped, "fx", "method", "tools/call", "retry_ms", "2000"))
	e.clock.Advance(2 * time.Second)
	o := <-out
	if o.err != nil || !strings.Contains(o.res.Text, "resumed") {
		t.Fatalf("call = %+v, %v", o.res, o.err)
	}
	e.await(m(event.RemoteStreamResumed, "fx"))
	mu.Lock()
	defer mu.Unlock()
	if len(refused) > 0 {
		t.Fatalf("requests without the configured header: %v", refused)
	}
}

func writeCreds(t *testing.T, path, token string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(`{"fx":{"accessToken":"`+token+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRemoteAuthRefresh: a 401 refreshes the credential once through the
// provider and the call goes through with the new token.
func TestRemoteAuthRefresh(t *testing.T) {
	creds := filepath.Join(t.TempDir(), "creds.json")
	writeCreds(t, creds, "one")
	// initialize, initialized, tools/list use up token one.
	e, _, sess := remoteEnv(t, map[string]string{"MCP_FIXTURE_AUTH_TOKENS": "one,two", "MCP_FIXTURE_AUTH_EXPIRE_AFTER": "3"},
		`"auth":{"type":"oauth","credentialId":"fx"}`, Options{Credentials: config.FileCredentials{Path: creds}})
	writeCreds(t, creds, "two")
	res, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "authorized"})
	if err != nil || !strings.Contains(res.Text, "authorized") {
		t.Fatalf("call = %+v, %v", res, err)
	}
	e.await(m(event.RemoteAuthRejected, "fx", "status", "401", "method", "tools/call"))
	e.await(m(event.RemoteAuthRefreshed, "fx", "credential", "fx"))
	e.await(m(event.RemoteRequestRetried, "fx", "method", "tools/call", "reason", "auth-refreshed"))
	if n := e.count("fx", "call-start"); n != 1 {
		t.Fatalf("the server saw %d calls", n)
	}
}

// TestRemoteAuthRequired: a rejected credential the provider cannot refresh
// puts the server in state needs-auth, without a restart loop.
func TestRemoteAuthRequired(t *testing.T) {
	creds := filepath.Join(t.TempDir(), "creds.json")
	writeCreds(t, creds, "one")
	e, _, sess := remoteEnv(t, map[string]string{"MCP_FIXTURE_AUTH_TOKENS": "one", "MCP_FIXTURE_AUTH_EXPIRE_AFTER": "3", "MCP_FIXTURE_AUTH_STATUS": "403"},
		`"auth":{"type":"oauth","credentialId":"fx"}`, Options{Credentials: config.FileCredentials{Path: creds}})
	_, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "x"})
	if !errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), CodeAuthRequired) {
		t.Fatalf("call = %v, want %s", err, CodeAuthRequired)
	}
	e.await(m(event.RemoteAuthRequired, "fx", "status", "403"))
	e.await(m(event.TransportClosed, "fx"))
	if st := e.status("fx"); st.State != StateNeedsAuth {
		t.Fatalf("state %s, want %s", st.State, StateNeedsAuth)
	}
	_, err = sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "y"})
	if !errors.Is(err, ErrAuthRequired) {
		t.Fatalf("second call = %v", err)
	}
	for _, ev := range e.rt.Events().Events() {
		if ev.Kind == event.RestartScheduled {
			t.Fatalf("needs-auth started a restart loop: %v", ev)
		}
	}
}

// TestRemoteAuthRequiredAtConnect: without a credential, a 401 at the
// handshake is final: needs-auth at once, no restart.
func TestRemoteAuthRequiredAtConnect(t *testing.T) {
	e, _, sess := remoteEnv(t, map[string]string{"MCP_FIXTURE_AUTH_TOKENS": "one"}, "", Options{})
	if rep := sess.StartReport(); len(rep.Failed) != 1 {
		t.Fatalf("report %+v", rep)
	}
	e.await(m(event.RemoteAuthRequired, "fx", "status", "401"))
	if st := e.status("fx"); st.State != StateNeedsAuth {
		t.Fatalf("state %s", st.State)
	}
	if st := e.status("fx"); !strings.Contains(st.Error, CodeAuthRequired) {
		t.Fatalf("status error %q", st.Error)
	}
	for _, ev := range e.rt.Events().Events() {
		if ev.Kind == event.RestartScheduled {
			t.Fatalf("needs-auth started a restart loop: %v", ev)
		}
	}
}

// TestRemoteRetryAfterCall: a call answered 429 with Retry-After is sent
// again once after it, on the clock; a huge Retry-After is capped by the
// policy's longest delay.
func TestRemoteRetryAfterCall(t *testing.T) {
	// initialize (1), initialized (2), tools/list (3), the call (4).
	e, _, sess := remoteEnv(t, map[string]string{"MCP_FIXTURE_THROTTLE_AT": "4", "MCP_FIXTURE_RETRY_AFTER": "600"}, `"restartDelays":[1000,7000]`, Options{})
	out := e.callAsync(sess, "mcp_fx_echo", map[string]any{"text": "later"})
	e.await(m(event.RemoteThrottled, "fx", "status", "429", "method", "tools/call", "retry_after_ms", "600000", "delay_ms", "7000"))
	e.clock.Advance(7 * time.Second)
	o := <-out
	if o.err != nil || !strings.Contains(o.res.Text, "later") {
		t.Fatalf("call = %+v, %v", o.res, o.err)
	}
	e.await(m(event.RemoteRequestRetried, "fx", "method", "tools/call", "reason", "retry-after"))
	if n := e.count("fx", "call-start"); n != 1 {
		t.Fatalf("the server saw %d calls", n)
	}
}

// TestRemoteRetryAfterConnect: a handshake refused twice with Retry-After
// fails the attempt, and the next attempt waits at least the Retry-After.
func TestRemoteRetryAfterConnect(t *testing.T) {
	e, _, _ := remoteEnv(t, map[string]string{"MCP_FIXTURE_THROTTLE_AT": "1", "MCP_FIXTURE_THROTTLE_COUNT": "2", "MCP_FIXTURE_THROTTLE_STATUS": "503", "MCP_FIXTURE_RETRY_AFTER": "5"}, "", Options{StartupGate: -1, LateRegistration: true})
	e.await(m(event.RemoteThrottled, "fx", "status", "503", "method", "initialize", "delay_ms", "5000"))
	e.clock.Advance(5 * time.Second)
	// The relentless policy's first delay is 0; Retry-After makes it 5 s.
	e.await(m(event.RestartScheduled, "fx", "reason", "init-failure", "attempt", "1", "delay_ms", "5000"))
	e.clock.Advance(5 * time.Second)
	e.await(m(event.ServerConnected, "fx", "attempt", "1"))
}

// TestRemoteRefusedFollowsPolicy: a connection reset at once is a connect
// failure like any other: the restart policy schedules the next attempt.
// The first request is the era probe server/discover, and its failure
// ends the attempt without a fallback to initialize.
func TestRemoteRefusedFollowsPolicy(t *testing.T) {
	e, _, _ := remoteEnv(t, map[string]string{"MCP_FIXTURE_REFUSE_CONNECTIONS": "1"}, `"restartDelays":[1000]`, Options{StartupGate: -1, LateRegistration: true})
	e.await(m(event.RemoteUnreachable, "fx", "method", "server/discover", "reason", "reset"))
	e.await(m(event.RestartScheduled, "fx", "reason", "init-failure", "attempt", "1", "delay_ms", "1000"))
	e.clock.Advance(time.Second)
	e.await(m(event.ServerConnected, "fx", "attempt", "1"))
	if n := e.rt.Events().Count(m(event.RemoteUnreachable, "fx")); n != 1 {
		t.Fatalf("%d remote.unreachable events, want 1 (no initialize after the failed discover)", n)
	}
}

// TestLifecycleDocNamesRemoteEvents: docs/LIFECYCLE.md's "Remote servers"
// section states a rule for every remote.* event.
func TestLifecycleDocNamesRemoteEvents(t *testing.T) {
	data, err := os.ReadFile("../../docs/LIFECYCLE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Remote servers\n")
	if !ok {
		t.Fatal(`docs/LIFECYCLE.md has no "## Remote servers" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, k := range event.Kinds() {
		if strings.HasPrefix(string(k.Kind), "remote.") && !strings.Contains(section, "`"+string(k.Kind)+"`") {
			t.Errorf("docs/LIFECYCLE.md, Remote servers: no rule names %s", k.Kind)
		}
	}
	for _, s := range []string{string(StateNeedsAuth), CodeAuthRequired} {
		if !strings.Contains(section, s) {
			t.Errorf("docs/LIFECYCLE.md, Remote servers: %s is not mentioned", s)
		}
	}
}

// TestUnreachableReason: a reset is a reset whether it came while reading
// the answer (ECONNRESET, EOF) or while still writing the request (EPIPE).
func TestUnreachableReason(t *testing.T) {
	op := func(op string, errno syscall.Errno) error {
		return fmt.Errorf("Post \"http://127.0.0.1:1/mcp\": %w", &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)})
	}
	cases := []struct {
		err  error
		want string
	}{
		{op("dial", syscall.ECONNREFUSED), "refused"},
		{op("read", syscall.ECONNRESET), "reset"},
		{op("write", syscall.EPIPE), "reset"},
		{fmt.Errorf("reading the answer: %w", io.EOF), "reset"},
		{errors.New("tls: handshake failure"), ""},
	}
	for _, c := range cases {
		if got := unreachableReason(c.err); got != c.want {
			t.Errorf("unreachableReason(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
