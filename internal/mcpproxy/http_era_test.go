package mcpproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/mcpproxy"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// The proxy in front of a stateless (2026-07-28) streamable HTTP server:
// no session id anywhere, GET and DELETE refused by the server and passed
// on as they are, the subscriptions/listen stream forwarded, the
// era journaled, and the rules (tool-error, hang, exit) act as they do in
// the handshake era.
func TestHTTPModernUpstream(t *testing.T) {
	dir := t.TempDir()
	upstreamURL := modernHTTPFixture(t, dir)
	url, done := httpProxy(t, dir, upstreamURL, nil)

	srv, _ := json.Marshal(map[string]any{"type": "http", "url": url, "toolTimeout": 1000})
	e2 := newEnv(t, srv, host.Options{})
	e2.dir = dir
	sess, err := e2.rt.OpenSession(t.Context(), host.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e2.sess = sess
	e2.await(event.ServerConnected, "protocol", "2026-07-28")
	e2.awaitJournal("px.journal", 1, "open", "method", "server/discover", "era", "modern", "protocolVersion", "2026-07-28")
	e2.awaitJournal("px.journal", 1, "discover", "versions", "2026-07-28")
	e2.awaitJournal("px.journal", 1, "request", "method", "subscriptions/listen", "era", "modern")

	// GET and DELETE of the revision pass through as the server answers
	// them (a stateless server: 405; the fixture routes them to its
	// stateful handler, which wants a session id: 400), and the proxy
	// makes up no session id.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		var status [2]int
		for i, u := range []string{upstreamURL, url} {
			req, _ := http.NewRequestWithContext(t.Context(), method, u, nil)
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			status[i] = resp.StatusCode
			if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
				t.Errorf("%s %s: Mcp-Session-Id %q, want none", method, u, sid)
			}
		}
		if status[0] != status[1] || status[1] < 400 {
			t.Errorf("%s: the server answers %d, the proxy %d; want the same refusal", method, status[0], status[1])
		}
	}

	o := e2.result(e2.call("mcp_fx_echo", map[string]any{"text": "a"}))
	if o.err != nil || !strings.Contains(o.res.Text, "a") {
		t.Fatalf("call through the proxy: %+v %v", o.res, o.err)
	}
	e2.awaitJournal("px.journal", 1, "call-start", "tool", "echo", "era", "modern", "protocolVersion", "2026-07-28")

	e2.control("PUT", "/rules", "tool-error=tool:echo,message=injected")
	o = e2.result(e2.call("mcp_fx_echo", map[string]any{"text": "b"}))
	if !o.res.IsError || !strings.Contains(o.res.Text, "injected") {
		t.Fatalf("call with tool-error: %+v %v", o.res, o.err)
	}

	// A hung call times out; the runtime ends its request, which releases
	// it as cancelled; the probe (tools/list, no ping) finds the server
	// healthy.
	e2.control("PUT", "/rules", "hang=tool:echo")
	ch := e2.call("mcp_fx_echo", map[string]any{"text": "c"})
	e2.awaitJournal("px.journal", 1, "hang-start", "tool", "echo")
	e2.clock.Advance(time.Second)
	e2.await(event.ToolTimeout)
	if o := e2.result(ch); code(o) != "mcp_tool_timeout" {
		t.Fatalf("hung call: %+v %v, want mcp_tool_timeout", o.res, o.err)
	}
	e2.awaitJournal("px.journal", 1, "hang-end", "cancelled", "true")
	e2.await(event.ProbeFinished, "method", "tools/list", "healthy", "true")

	// exit ends the proxy with the rule's code, the call unanswered.
	e2.control("PUT", "/rules", "exit=tool:echo,code=3")
	o = e2.result(e2.call("mcp_fx_echo", map[string]any{"text": "d"}))
	if o.err == nil && !o.res.IsError {
		t.Fatalf("call with exit: %+v, want an error", o.res)
	}
	if c := <-done; c != 3 {
		t.Errorf("proxy exit code %d, want 3", c)
	}
	e2.awaitJournal("px.journal", 1, "exit", "reason", "fault", "code", "3")
	if n := e2.count("fx.journal", "call-start"); n != 1 {
		t.Errorf("the server saw %d calls, want 1", n)
	}
	if n := e2.count("px.journal", "initialize"); n != 0 {
		t.Errorf("%d initialize requests through the proxy, want 0", n)
	}
}

// modernHTTPFixture starts the fixture as a modern-only streamable HTTP
// server journaling to dir/fx.journal and returns its URL; it is stopped
// when the test ends.
func modernHTTPFixture(t *testing.T, dir string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	portFile := filepath.Join(dir, "fx.addr")
	fx := exec.Command(exe, asFixture)
	fx.Env = append(os.Environ(), "MCP_FIXTURE_TRANSPORT=http", "MCP_FIXTURE_PORT_FILE="+portFile, "GORACE=atexit_sleep_ms=0",
		"MCP_FIXTURE_ERA=modern", "MCP_FIXTURE_JOURNAL="+filepath.Join(dir, "fx.journal"))
	stdin, err := fx.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := fx.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = fx.Process.Kill()
		_ = fx.Wait()
	})
	e := &env{t: t, dir: dir}
	e.awaitJournal("fx.journal", 1, "listening")
	addr, _ := os.ReadFile(portFile)
	return "http://" + strings.TrimSpace(string(addr)) + "/mcp"
}

// httpProxy runs RunHTTP in front of upstream with rules, journaling to
// dir/px.journal with its control file dir/px.control, and returns its
// URL and the channel of its exit code. When the test ends the proxy is
// cancelled and waited for.
func httpProxy(t *testing.T, dir, upstream string, rules []string) (string, chan int) {
	t.Helper()
	var rs []mcpproxy.Rule
	for _, r := range rules {
		rule, err := mcpproxy.ParseRule(r)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, rule)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	ready := make(chan string, 1)
	finished := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	go func() {
		defer close(finished)
		code, err := mcpproxy.RunHTTP(ctx, mcpproxy.HTTPOptions{
			Upstream: upstream, Rules: rs,
			Journal: filepath.Join(dir, "px.journal"), Control: "127.0.0.1:0", ControlFile: filepath.Join(dir, "px.control"),
			Ready: func(u string, _ mcpproxy.ControlEndpoint) { ready <- u },
		})
		if err != nil {
			t.Error(err)
		}
		done <- code
	}()
	select {
	case u := <-ready:
		return u, done
	case code := <-done:
		t.Fatalf("the proxy exited with %d before it listened", code)
	}
	return "", nil
}

// exit-after=discover and fail-init on a modern HTTP upstream: the first
// answers server/discover and then ends the proxy with the rule's code,
// once the reply has been written; the second ends it at server/discover,
// which never reaches the server. Either way the runtime's connect fails.
func TestHTTPModernStartFaults(t *testing.T) {
	for _, tc := range []struct {
		rule              string
		code, fxDiscovers int
		pxDiscover        string // versions of the proxy's discover entry, "" for none
	}{
		{"exit-after=discover,code=4", 4, 1, "2026-07-28"},
		{"fail-init", 5, 0, ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			dir := t.TempDir()
			url, done := httpProxy(t, dir, modernHTTPFixture(t, dir), []string{tc.rule})
			srv, _ := json.Marshal(map[string]any{"type": "http", "url": url, "restart": "never"})
			e := newEnv(t, srv, host.Options{})
			e.dir = dir
			if _, err := e.rt.OpenSession(t.Context(), host.SessionOptions{}); err != nil {
				t.Fatal(err)
			}
			if code := <-done; code != tc.code {
				t.Errorf("proxy exit %d, want %d", code, tc.code)
			}
			e.await(event.ServerFailed)
			e.awaitJournal("px.journal", 1, "exit", "reason", "fault", "code", fmt.Sprint(tc.code))
			e.awaitJournal("px.journal", 1, "open", "method", "server/discover", "era", "modern")
			if n := e.count("fx.journal", "discover"); n != tc.fxDiscovers {
				t.Errorf("the server answered %d discovers, want %d", n, tc.fxDiscovers)
			}
			if n := e.count("px.journal", "discover", "versions", tc.pxDiscover); (tc.pxDiscover != "") != (n == 1) {
				t.Errorf("%d discover entries with versions %q in the proxy's journal: %+v", n, tc.pxDiscover, e.entries("px.journal"))
			}
		})
	}
}
