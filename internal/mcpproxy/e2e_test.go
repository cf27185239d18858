package mcpproxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/internal/mcpproxy"
	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// env is a reference runtime on a fake clock whose server fx is the proxy in
// front of an upstream server.
type env struct {
	t     *testing.T
	rt    *host.Runtime
	clock *clocktest.Fake
	dir   string
	sess  *host.Session
}

// proxied returns the config of a server that runs the proxy (with rules
// given at start) in front of upstream; the proxy journals to px.journal and
// writes its control URL to px.control.
func proxied(t *testing.T, dir string, rules []string, upstream []string, env map[string]string, extra map[string]any) json.RawMessage {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(proxyArgs{Rules: rules, Journal: filepath.Join(dir, "px.journal"), ControlFile: filepath.Join(dir, "px.control")})
	args := append([]string{asProxy, string(a), "--"}, upstream...)
	e := map[string]string{"GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	cfg := map[string]any{"command": exe, "args": args, "env": e}
	for k, v := range extra {
		cfg[k] = v
	}
	b, _ := json.Marshal(cfg)
	return b
}

// fixtureUpstream is the command line of the fixture as the upstream.
func fixtureUpstream(t *testing.T) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, asFixture}
}

func newEnv(t *testing.T, server json.RawMessage, opts host.Options) *env {
	t.Helper()
	e := &env{t: t, clock: clocktest.New()}
	opts.Clock = e.clock
	opts.Discovery.Inline = map[string]json.RawMessage{"fx": server}
	opts.Discovery.HomeDir = t.TempDir()
	opts.Discovery.Env = func(string) (string, bool) { return "", false }
	rt, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.rt = rt
	t.Cleanup(func() {
		e.close()
		if e.dir != "" {
			checkJournalKinds(t, e.entries("px.journal"))
		}
		if t.Failed() {
			t.Logf("events:\n%s", eventsString(rt.Events().Events()))
		}
	})
	return e
}

// fixtureEnv starts a runtime whose server fx is the proxy (rules at start)
// in front of the fixture with knobs, and opens a session.
func fixtureEnv(t *testing.T, rules []string, knobs map[string]string, extra map[string]any, opts host.Options) *env {
	t.Helper()
	dir := t.TempDir()
	// The proxy's rules name handshake-era methods (initialize, ping), so
	// its upstream speaks the handshake era unless knobs say otherwise.
	k := map[string]string{"MCP_FIXTURE_ERA": "legacy", "MCP_FIXTURE_JOURNAL": filepath.Join(dir, "fx.journal")}
	for n, v := range knobs {
		k[n] = v
	}
	e := newEnv(t, proxied(t, dir, rules, fixtureUpstream(t), k, extra), opts)
	e.dir = dir
	sess, err := e.rt.OpenSession(t.Context(), host.SessionOptions{Name: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	e.sess = sess
	return e
}

// close closes the runtime, advancing the fake clock through stop graces.
func (e *env) close() {
	done := make(chan struct{})
	go func() {
		e.rt.Close(context.Background())
		close(done)
	}()
	for {
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
			// Only speeds up teardown; no assertion depends on it.
			e.clock.AdvanceToNext()
		}
	}
}

func (e *env) await(kind event.Kind, attrs ...string) event.Event {
	e.t.Helper()
	m := event.Matcher{Kind: kind, Server: "fx", Attrs: map[string]string{}}
	for i := 0; i+1 < len(attrs); i += 2 {
		m.Attrs[attrs[i]] = attrs[i+1]
	}
	ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Second)
	defer cancel()
	ev, err := e.rt.Events().Await(ctx, 0, m)
	if err != nil {
		e.t.Fatalf("%v\nevents:\n%s", err, eventsString(e.rt.Events().Events()))
	}
	return ev
}

func (e *env) entries(name string) []journal.Entry {
	es, err := journal.Read(filepath.Join(e.dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return es
}

func (e *env) count(name, kind string, fields ...string) int {
	n := 0
	for _, en := range e.entries(name) {
		ok := en.Kind == kind
		for i := 0; ok && i+1 < len(fields); i += 2 {
			ok = fmt.Sprint(en.Fields[fields[i]]) == fields[i+1]
		}
		if ok {
			n++
		}
	}
	return n
}

// awaitJournal waits for the n-th entry of kind (with fields) in a journal:
// the proxy's or the server's own evidence that it got that far. The proxy
// is a real process, so this polls the file on a short real ticker.
func (e *env) awaitJournal(name string, n int, kind string, fields ...string) {
	e.t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for e.count(name, kind, fields...) < n {
		select {
		case <-tick.C:
		case <-deadline.C:
			e.t.Fatalf("journal %s: waited for %d %q %v entries, have %d", name, n, kind, fields, e.count(name, kind, fields...))
		}
	}
}

// control sends a request to the control endpoint of the proxy's current
// launch, with the token of its control file; rules, when given, are the
// body ({"rules": [...]}).
func (e *env) control(method, path string, rules ...string) string {
	e.t.Helper()
	ctl, err := mcpproxy.ReadControlFile(filepath.Join(e.dir, "px.control"))
	if err != nil {
		e.t.Fatal(err)
	}
	var body any
	if rules != nil {
		body = mcpproxy.RulesRequest{Rules: rules}
	}
	req, err := ctl.NewRequest(e.t.Context(), method, path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		e.t.Fatalf("control %s %s: %s: %s", method, path, resp.Status, out)
	}
	return string(out)
}

type outcome struct {
	res bridge.Result
	err error
}

func (e *env) call(tool string, args any) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := e.sess.CallTool(context.Background(), tool, args)
		ch <- outcome{res, err}
	}()
	return ch
}

func (e *env) result(ch <-chan outcome) outcome {
	e.t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(20 * time.Second):
		e.t.Fatalf("no call result\nevents:\n%s", eventsString(e.rt.Events().Events()))
	}
	return outcome{}
}

func code(o outcome) string {
	var ce interface{ ErrorCode() string }
	if errors.As(o.err, &ce) {
		return ce.ErrorCode()
	}
	return o.res.Code
}

func eventsString(evs []event.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.String() + "\n")
	}
	return b.String()
}

// A hang injected through the control endpoint wedges the server (nothing
// is answered, ping included): the runtime's call times out, the probe
// fails, the proxy is restarted (a new launch without the rule) and the
// retried call answers.
func TestHangViaControlRecoveredByRestart(t *testing.T) {
	e := fixtureEnv(t, nil, nil, map[string]any{"toolTimeout": 1000}, host.Options{})
	e.await(event.ServerConnected)
	e.control("POST", "/rules", "hang=*")
	ch := e.call("mcp_fx_echo", map[string]any{"text": "x"})
	e.awaitJournal("px.journal", 1, "hang-start", "method", "tools/call")
	e.clock.Advance(time.Second)
	e.await(event.ToolTimeout)
	e.await(event.ProbeStarted, "method", "ping")
	e.awaitJournal("px.journal", 1, "ping", "action", "dropped")
	e.clock.Advance(3 * time.Second)
	e.await(event.ProbeStarted, "method", "tools/list")
	e.awaitJournal("px.journal", 1, "fault", "method", "tools/list")
	e.clock.Advance(3 * time.Second)
	e.await(event.ProbeFinished, "method", "tools/list", "healthy", "false")
	// The proxy still reads stdin: closing it ends the proxy and its
	// upstream without a signal.
	e.await(event.RestartSucceeded, "reason", "probe-failure")
	o := e.result(ch)
	if o.err != nil || !strings.Contains(o.res.Text, "x") || o.res.IsError {
		t.Fatalf("retried call: %+v %v", o.res, o.err)
	}
	if n := e.count("px.journal", "launch"); n != 2 {
		t.Errorf("%d proxy launches, want 2", n)
	}
	if n := e.count("px.journal", "exit", "reason", "stdin-eof"); n != 1 {
		t.Errorf("%d proxy exits on stdin EOF, want 1", n)
	}
	if n := e.count("fx.journal", "launch"); n != 2 {
		t.Errorf("%d upstream launches, want 2", n)
	}
	if n := e.count("fx.journal", "call-start", "tool", "echo"); n != 1 {
		t.Errorf("the upstream saw %d echo calls, want 1 (the retried one)", n)
	}
}

// A hang of one tool leaves ping answered: the call times out, the probe
// finds the server healthy and nothing restarts. Removing the rule then
// forwards the held request.
func TestHangToolProbeHealthy(t *testing.T) {
	e := fixtureEnv(t, nil, nil, map[string]any{"toolTimeout": 1000}, host.Options{})
	e.await(event.ServerConnected)
	e.control("PUT", "/rules", "hang=tool:echo")
	ch := e.call("mcp_fx_echo", map[string]any{"text": "x"})
	e.awaitJournal("px.journal", 1, "hang-start", "tool", "echo")
	e.clock.Advance(time.Second)
	e.await(event.ProbeFinished, "method", "ping", "healthy", "true")
	o := e.result(ch)
	if code(o) != "mcp_tool_timeout" {
		t.Fatalf("call: %+v %v, want mcp_tool_timeout", o.res, o.err)
	}
	if n := e.rt.Events().Count(event.Matcher{Kind: event.RestartScheduled}); n != 0 {
		t.Errorf("%d restarts, want 0", n)
	}
	// The runtime cancelled the call: the held request is released as
	// cancelled and never reaches the server.
	e.awaitJournal("px.journal", 1, "hang-end", "cancelled", "true")
	e.control("DELETE", "/rules")
	o = e.result(e.call("mcp_fx_echo", map[string]any{"text": "y"}))
	if o.err != nil || !strings.Contains(o.res.Text, "y") {
		t.Fatalf("call after DELETE /rules: %+v %v", o.res, o.err)
	}
}

// ping=drop with a hung tool: the ping probe times out, tools/list answers,
// and the server is kept (field failure 5 through the proxy).
func TestPingDropFallsBackToToolsList(t *testing.T) {
	e := fixtureEnv(t, nil, nil, map[string]any{"toolTimeout": 1000}, host.Options{})
	e.await(event.ServerConnected)
	e.control("POST", "/rules", "ping=drop", "hang=tool:echo")
	ch := e.call("mcp_fx_echo", map[string]any{"text": "x"})
	e.awaitJournal("px.journal", 1, "hang-start", "tool", "echo")
	e.clock.Advance(time.Second)
	e.await(event.ProbeStarted, "method", "ping")
	e.awaitJournal("px.journal", 1, "ping", "action", "dropped")
	e.clock.Advance(3 * time.Second)
	e.await(event.ProbeFinished, "method", "tools/list", "healthy", "true")
	if o := e.result(ch); code(o) != "mcp_tool_timeout" {
		t.Fatalf("call: %+v %v", o.res, o.err)
	}
}

// error and tool-error answer in place of the server; delay forwards late.
func TestErrorToolErrorDelay(t *testing.T) {
	e := fixtureEnv(t, []string{"error=tool:echo,times=1,code=-32000,message=nope", "tool-error=tool:echo,times=1,message=bad", "delay=tool:echo,ms=20"}, nil, nil, host.Options{})
	e.await(event.ServerConnected)
	o := e.result(e.call("mcp_fx_echo", map[string]any{"text": "a"}))
	if o.err == nil && !o.res.IsError {
		t.Fatalf("first call: %+v, want a JSON-RPC error", o.res)
	}
	o = e.result(e.call("mcp_fx_echo", map[string]any{"text": "b"}))
	if !o.res.IsError || !strings.Contains(o.res.Text, "bad") {
		t.Fatalf("second call: %+v %v, want isError bad", o.res, o.err)
	}
	o = e.result(e.call("mcp_fx_echo", map[string]any{"text": "c"}))
	if o.err != nil || o.res.IsError || !strings.Contains(o.res.Text, "c") {
		t.Fatalf("third call: %+v %v", o.res, o.err)
	}
	e.awaitJournal("px.journal", 1, "fault", "action", "delay")
	if n := e.count("px.journal", "call-end", "outcome", "rpc-error"); n != 1 {
		t.Errorf("%d rpc-error call-ends, want 1", n)
	}
	if n := e.count("fx.journal", "call-start"); n != 1 {
		t.Errorf("the server saw %d calls, want 1 (the delayed one)", n)
	}
}

// exit-after=calls:1 answers the first call and then ends the server: the
// runtime sees the exit and restarts at once.
func TestExitAfterCalls(t *testing.T) {
	e := fixtureEnv(t, nil, nil, nil, host.Options{})
	e.await(event.ServerConnected)
	e.control("POST", "/rules", "exit-after=calls:1,code=3")
	o := e.result(e.call("mcp_fx_echo", map[string]any{"text": "a"}))
	if o.err != nil || !strings.Contains(o.res.Text, "a") {
		t.Fatalf("call: %+v %v", o.res, o.err)
	}
	e.await(event.RestartSucceeded, "reason", "transport-exit")
	e.awaitJournal("px.journal", 1, "exit", "reason", "fault", "code", "3")
}

// exit on a call ends the server mid-call (the fixture's crash tool): the
// call fails fast with mcp_connection_lost and the server restarts.
func TestExitMidCall(t *testing.T) {
	e := fixtureEnv(t, nil, nil, nil, host.Options{})
	e.await(event.ServerConnected)
	e.control("POST", "/rules", "exit=tool:echo")
	o := e.result(e.call("mcp_fx_echo", map[string]any{"text": "a"}))
	if code(o) != "mcp_connection_lost" {
		t.Fatalf("call: %+v %v, want mcp_connection_lost", o.res, o.err)
	}
	e.await(event.RestartSucceeded, "reason", "transport-exit")
	o = e.result(e.call("mcp_fx_echo", map[string]any{"text": "b"}))
	if o.err != nil || !strings.Contains(o.res.Text, "b") {
		t.Fatalf("call after the restart: %+v %v", o.res, o.err)
	}
}

// drop closes the stream without exiting: the runtime sees its transport
// end, fails the call fast and restarts (stopping the old proxy through
// stdin EOF).
func TestDropStream(t *testing.T) {
	e := fixtureEnv(t, nil, nil, nil, host.Options{})
	e.await(event.ServerConnected)
	e.control("POST", "/rules", "drop=tool:echo")
	o := e.result(e.call("mcp_fx_echo", map[string]any{"text": "a"}))
	if code(o) != "mcp_connection_lost" {
		t.Fatalf("call: %+v %v, want mcp_connection_lost", o.res, o.err)
	}
	e.await(event.TransportClosed)
	e.await(event.RestartSucceeded)
	e.awaitJournal("px.journal", 1, "drop")
}

// exit-delay ends the server on its own after a real delay: the runtime
// notices the idle exit and restarts (seed 001 scenario 74).
func TestExitDelay(t *testing.T) {
	e := fixtureEnv(t, nil, nil, nil, host.Options{})
	e.await(event.ServerConnected)
	e.control("POST", "/rules", "exit-delay=1")
	e.await(event.TransportClosed)
	e.await(event.RestartSucceeded, "reason", "transport-exit")
	e.awaitJournal("px.journal", 1, "exit", "reason", "exit-delay")
}

// fail-init at start makes every launch exit at initialize: the server
// fails to connect and the others are not affected.
func TestFailInit(t *testing.T) {
	e := fixtureEnv(t, []string{"fail-init"}, nil, map[string]any{"restart": "never"}, host.Options{})
	e.await(event.ServerFailed)
	e.awaitJournal("px.journal", 1, "exit", "reason", "fault", "code", "5")
	if n := e.count("fx.journal", "initialize"); n != 0 {
		t.Errorf("the server saw %d initialize requests, want 0", n)
	}
}

// exit-after=tools-list is the crash-loop server of field failure 4: the
// handshake completes, then the server exits.
func TestExitAfterToolsList(t *testing.T) {
	e := fixtureEnv(t, []string{"exit-after=tools-list"}, nil, map[string]any{"restart": "never"}, host.Options{})
	e.await(event.TransportClosed)
	e.awaitJournal("px.journal", 1, "tools-list")
	e.awaitJournal("px.journal", 1, "exit", "reason", "fault")
}
