package mcpproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/mcplife/mcplife/runtime/proc"
)

// HTTPOptions configures a proxy in front of a streamable HTTP or SSE
// server.
type HTTPOptions struct {
	// Upstream is the server's URL; requests keep their own path, so the
	// client uses the upstream's path on the proxy's address.
	Upstream string
	// Listen is the loopback address the proxy serves (port 0 picks one;
	// default 127.0.0.1:0). Another address is refused unless
	// AllowNonLoopback: the proxy has no authentication of its own.
	Listen string
	// AllowNonLoopback lets Listen be any address. On a loopback address
	// the proxy refuses requests whose Host is not a loopback name for its
	// port (DNS rebinding: it rewrites Host to the upstream's, which would
	// hide the attacker's name from the upstream's own check).
	AllowNonLoopback bool
	// AddrFile, when not "", receives the chosen host:port and a newline.
	AddrFile string
	// Rules, Journal, Control, ControlFile, ControlTokenFile, Logger and
	// Signals are as in StdioOptions.
	Rules            []Rule
	Journal          string
	Control          string
	ControlFile      string
	ControlTokenFile string
	Logger           *slog.Logger
	Signals          <-chan os.Signal
	// Ready, when not nil, is called once the proxy listens, with its URL
	// and the control endpoint's URL and token (zero without one).
	Ready func(url string, ctl ControlEndpoint)
}

// httpProxy is one run of RunHTTP.
type httpProxy struct {
	eng *engine
	rp  *httputil.ReverseProxy
	// port, when not "", is the loopback listener's port: requests must
	// name a loopback host with it.
	port string

	mu      sync.Mutex
	streams map[*http.Request]context.CancelFunc
	// exitOnIdle holds the exit rules with on=reply whose request a
	// connection is answering: the proxy exits once that connection has
	// written the whole reply (it goes idle or closes).
	exitOnIdle map[net.Conn]Rule
	// dying is set once the reply of an on=reply exit starts: the server
	// is gone for every request that comes after it (the client can send
	// one as soon as it has read the reply, before the exit itself).
	dying atomic.Bool
}

// connKey is the context key of the client's connection.
type connKey struct{}

// RunHTTP serves a proxy in front of an HTTP MCP server until a rule ends
// it, a signal arrives or ctx is done. Rules apply to the JSON-RPC message
// in each POST body: a held request keeps its HTTP request open; error and
// tool-error answer in the POST response (streamable HTTP; a legacy SSE
// client expects answers on its stream, so there they act as a hang); drop
// closes every open request and stream; exit closes the listener and
// returns the rule's code (with on=reply, once the connection that carried
// the request has written the whole POST response). Responses are
// forwarded unparsed (streams are flushed at once), so the journal records
// the client's side, except the answer to server/discover (the versions
// the server offers), which is read as it passes.
func RunHTTP(ctx context.Context, opts HTTPOptions) (int, error) {
	target, err := url.Parse(opts.Upstream)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return 2, fmt.Errorf("upstream %q: not an http(s) URL", opts.Upstream)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return 2, fmt.Errorf("listen address %q: %w", opts.Listen, err)
	}
	loopback := isLoopbackHost(host)
	if !loopback && !opts.AllowNonLoopback {
		return 2, fmt.Errorf("listen address %q: not a loopback address; the proxy has no authentication, so anyone who reaches it can call the upstream's tools (allow it explicitly with -allow-non-loopback)", opts.Listen)
	}
	jw, err := journal.NewWriter(opts.Journal, os.Getpid(), opts.Logger)
	if err != nil {
		return 2, err
	}
	eng := newEngine(jw, opts.Logger)
	defer eng.close()
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return 1, fmt.Errorf("listen: %w", err)
	}
	jw.Begin(0, map[string]any{"transport": "http", "mode": "proxy", "upstream": opts.Upstream})
	eng.journal("listening", map[string]any{"address": ln.Addr().String(), "url": "http://" + ln.Addr().String() + target.Path})
	var ctlEnd ControlEndpoint
	if opts.Control != "" {
		ctl, err := NewControl(opts.Control, eng)
		if err != nil {
			ln.Close()
			return 2, err
		}
		defer ctl.Close()
		ctlEnd = ctl.Endpoint()
		if err := errors.Join(ctl.WriteFile(opts.ControlFile), ctl.WriteTokenFile(opts.ControlTokenFile)); err != nil {
			ln.Close()
			return 2, err
		}
	}
	eng.setRules(opts.Rules, false)
	if opts.AddrFile != "" {
		if err := writeFileAtomic(opts.AddrFile, ln.Addr().String()+"\n"); err != nil {
			ln.Close()
			return 2, err
		}
	}
	hp := &httpProxy{eng: eng, streams: map[*http.Request]context.CancelFunc{}, exitOnIdle: map[net.Conn]Rule{}}
	if loopback {
		_, hp.port, _ = net.SplitHostPort(ln.Addr().String())
	}
	hp.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = target.Scheme, target.Host, target.Host
		},
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
	}
	srv := &http.Server{Handler: hp, ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		ConnState:   hp.connState,
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	if opts.Ready != nil {
		opts.Ready("http://"+ln.Addr().String()+target.Path, ctlEnd)
	}
	var code int
	var reason string
	select {
	case x := <-eng.exitCh:
		code, reason = x.code, x.reason
	case s := <-opts.Signals:
		sig, _ := s.(syscall.Signal)
		eng.journal("signal", map[string]any{"signal": proc.SignalName(sig), "ignored": false})
		code, reason = 128+int(sig), "signal"
	case <-ctx.Done():
		code, reason = 0, "cancelled"
	}
	hp.dropAll()
	_ = srv.Close()
	<-served
	eng.journal("exit", map[string]any{"code": code, "reason": reason})
	return code, nil
}

// ServeHTTP applies the rules to a POSTed message and forwards the request.
func (hp *httpProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if hp.port != "" && !loopbackHostPort(r.Host, hp.port) {
		http.Error(w, "forbidden: the Host is not this proxy's loopback address", http.StatusForbidden)
		return
	}
	if hp.dying.Load() {
		hp.closeConn(w)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	hp.mu.Lock()
	hp.streams[r] = cancel
	hp.mu.Unlock()
	defer func() {
		hp.mu.Lock()
		delete(hp.streams, r)
		hp.mu.Unlock()
	}()
	r = r.WithContext(ctx)
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxLine))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if m, ok := parseMessage(body); ok && !m.isResponse() {
			if !hp.apply(ctx, w, r, &m) {
				return
			}
			if hp.exitsOnReply(ctx) {
				w = &dyingWriter{ResponseWriter: w, dying: &hp.dying}
			}
			if m.Method == "server/discover" && m.isRequest() && hp.eng.jw != nil {
				// The one response the proxy reads: the era the server
				// offers. Journaled even when the client goes away before
				// the reply has been copied (ReverseProxy then panics with
				// http.ErrAbortHandler): it has read the answer already.
				cw := &captureWriter{ResponseWriter: w}
				defer func() {
					answer, why := cw.answer(m.key())
					hp.eng.journalDiscover(m.protocolVersion(), answer, why)
				}()
				hp.rp.ServeHTTP(cw, r)
				return
			}
		}
	}
	hp.rp.ServeHTTP(w, r)
}

// exitsOnReply tells whether the connection of ctx answers the request
// of an exit rule with on=reply.
func (hp *httpProxy) exitsOnReply(ctx context.Context) bool {
	c, ok := ctx.Value(connKey{}).(net.Conn)
	if !ok {
		return false
	}
	hp.mu.Lock()
	defer hp.mu.Unlock()
	_, ok = hp.exitOnIdle[c]
	return ok
}

// dyingWriter forwards the reply of an on=reply exit's request, setting
// dying before its first byte goes out.
type dyingWriter struct {
	http.ResponseWriter
	dying *atomic.Bool
}

func (d *dyingWriter) WriteHeader(status int) {
	d.dying.Store(true)
	d.ResponseWriter.WriteHeader(status)
}

func (d *dyingWriter) Write(b []byte) (int, error) {
	d.dying.Store(true)
	return d.ResponseWriter.Write(b)
}

// Flush passes a flush on (streams are flushed at once).
func (d *dyingWriter) Flush() { _ = http.NewResponseController(d.ResponseWriter).Flush() }

// Unwrap returns the writer underneath, for http.ResponseController.
func (d *dyingWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// maxCapture bounds how much of a server/discover response the HTTP proxy
// keeps to journal it.
const maxCapture = 64 << 10

// captureWriter forwards a response and keeps its status and the start of
// its body.
type captureWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (c *captureWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if n := maxCapture - c.buf.Len(); n > 0 {
		c.buf.Write(b[:min(n, len(b))])
	}
	return c.ResponseWriter.Write(b)
}

// Flush passes a flush on (streams are flushed at once).
func (c *captureWriter) Flush() { _ = http.NewResponseController(c.ResponseWriter).Flush() }

// Unwrap returns the writer underneath, for http.ResponseController.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// answer returns the JSON-RPC response to the request with id key that
// the captured body holds (plain JSON, or an SSE event's data line), or
// the reason there is none: an HTTP error status, or no answer.
func (c *captureWriter) answer(key string) (*message, string) {
	if c.status >= 300 {
		return nil, fmt.Sprintf("HTTP %d", c.status)
	}
	body := c.buf.Bytes()
	if m, ok := parseMessage(body); ok && m.isResponse() && m.key() == key {
		return &m, ""
	}
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		if m, ok := parseMessage(bytes.TrimSpace(data)); ok && m.isResponse() && m.key() == key {
			return &m, ""
		}
	}
	return nil, "no answer"
}

// apply runs the rule for m; false when the request has been dealt with.
func (hp *httpProxy) apply(ctx context.Context, w http.ResponseWriter, r *http.Request, m *message) bool {
	if m.Method == "notifications/cancelled" && hp.eng.cancel(m.cancelledID()) {
		w.WriteHeader(http.StatusAccepted)
		return false
	}
	rule, faulted := hp.eng.inbound(m)
	if !faulted {
		return true
	}
	switch rule.Action {
	case Hang:
		if !m.isRequest() {
			w.WriteHeader(http.StatusAccepted)
			return false
		}
		released := make(chan bool, 1)
		hp.eng.hold(m, func(cancelled bool) { released <- cancelled })
		select {
		case cancelled := <-released:
			if cancelled {
				w.WriteHeader(http.StatusAccepted)
				return false
			}
			return true
		case <-ctx.Done():
			hp.eng.cancel(m.key())
			return false
		}
	case Delay:
		t := time.NewTimer(time.Duration(rule.MS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	case Error, ToolError:
		if !m.isRequest() {
			w.WriteHeader(http.StatusAccepted)
			return false
		}
		line := errorLine(m.ID, rule.Code, rule.Message)
		if rule.Action == ToolError {
			line = toolErrorLine(m.ID, rule.Message)
		}
		w.Header().Set("Content-Type", "application/json")
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			w.Header().Set("Mcp-Session-Id", sid)
		}
		_, _ = w.Write(line)
		return false
	case Exit:
		if c, ok := ctx.Value(connKey{}).(net.Conn); ok && rule.OnReply && m.isRequest() {
			// Forwarded; the exit follows the reply (connState).
			hp.mu.Lock()
			hp.exitOnIdle[c] = rule
			hp.mu.Unlock()
			return true
		}
		hp.eng.exit(rule.Code, "fault")
		hp.closeConn(w)
		return false
	case Drop:
		hp.eng.journal("drop", map[string]any{"stream": "http"})
		hp.dropAll()
		hp.closeConn(w)
		return false
	}
	return true
}

// connState fires the exit of an on=reply rule once the connection that
// answers its request has written the whole reply: it is idle again, or
// closed.
func (hp *httpProxy) connState(c net.Conn, state http.ConnState) {
	if state != http.StateIdle && state != http.StateClosed && state != http.StateHijacked {
		return
	}
	hp.mu.Lock()
	rule, ok := hp.exitOnIdle[c]
	delete(hp.exitOnIdle, c)
	hp.mu.Unlock()
	if ok {
		hp.eng.exit(rule.Code, "fault")
	}
}

// dropAll ends every open request and stream.
func (hp *httpProxy) dropAll() {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	for _, cancel := range hp.streams {
		cancel()
	}
}

// closeConn closes the client's connection without a response.
func (hp *httpProxy) closeConn(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// writeFileAtomic writes data to path through a temporary file.
func writeFileAtomic(path, data string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
