package mcpproxy_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/mcpproxy"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// The proxy in front of a streamable HTTP server: calls pass through, and a
// rule switched on through the control endpoint answers in the server's
// place until it is removed.
func TestHTTPUpstream(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	portFile := filepath.Join(dir, "fx.addr")
	fx := exec.Command(exe, asFixture)
	fx.Env = append(os.Environ(), "MCP_FIXTURE_TRANSPORT=http", "MCP_FIXTURE_PORT_FILE="+portFile, "GORACE=atexit_sleep_ms=0",
		"MCP_FIXTURE_JOURNAL="+filepath.Join(dir, "fx.journal"))
	stdin, err := fx.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := fx.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = fx.Process.Kill()
		_ = fx.Wait()
	}()
	e := &env{t: t, dir: dir}
	e.awaitJournal("fx.journal", 1, "listening")
	addr, _ := os.ReadFile(portFile)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	ready := make(chan string, 1)
	go func() {
		code, err := mcpproxy.RunHTTP(ctx, mcpproxy.HTTPOptions{
			Upstream: "http://" + strings.TrimSpace(string(addr)) + "/mcp",
			Journal:  filepath.Join(dir, "px.journal"), Control: "127.0.0.1:0", ControlFile: filepath.Join(dir, "px.control"),
			Ready: func(u string, _ mcpproxy.ControlEndpoint) { ready <- u },
		})
		if err != nil {
			t.Error(err)
		}
		done <- code
	}()
	url := <-ready
	defer func() {
		cancel()
		<-done
	}()

	srv, _ := json.Marshal(map[string]any{"type": "http", "url": url})
	e2 := newEnv(t, srv, host.Options{})
	e2.dir = dir
	sess, err := e2.rt.OpenSession(t.Context(), host.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e2.sess = sess
	e2.await(event.ServerConnected)
	o := e2.result(e2.call("mcp_fx_echo", map[string]any{"text": "a"}))
	if o.err != nil || !strings.Contains(o.res.Text, "a") {
		t.Fatalf("call through the proxy: %+v %v", o.res, o.err)
	}
	e2.control("POST", "/rules", "tool-error=tool:echo,message=injected")
	o = e2.result(e2.call("mcp_fx_echo", map[string]any{"text": "b"}))
	if !o.res.IsError || !strings.Contains(o.res.Text, "injected") {
		t.Fatalf("call with tool-error: %+v %v", o.res, o.err)
	}
	e2.control("DELETE", "/rules")
	o = e2.result(e2.call("mcp_fx_echo", map[string]any{"text": "c"}))
	if o.err != nil || !strings.Contains(o.res.Text, "c") {
		t.Fatalf("call after DELETE: %+v %v", o.res, o.err)
	}
	e2.awaitJournal("px.journal", 3, "call-start", "tool", "echo")
	if n := e2.count("fx.journal", "call-start"); n != 2 {
		t.Errorf("the server saw %d calls, want 2", n)
	}
}
