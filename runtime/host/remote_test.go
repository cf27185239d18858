package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
)

// remoteFixture is a fixture serving http or sse as its own process, the way
// a remote server would run; the test starts, kills and restarts it.
type remoteFixture struct {
	t         *testing.T
	transport string
	addr      string
	journal   string
	state     string
	cmd       *exec.Cmd
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func startRemote(t *testing.T, dir, transport string, knobs map[string]string) *remoteFixture {
	r := &remoteFixture{t: t, transport: transport, addr: freeAddr(t),
		journal: filepath.Join(dir, "fx.journal"), state: filepath.Join(dir, "state.json")}
	r.launch(knobs)
	return r
}

func (r *remoteFixture) launch(knobs map[string]string) {
	exe, _ := os.Executable()
	portFile := filepath.Join(filepath.Dir(r.journal), fmt.Sprintf("port.%d", time.Now().UnixNano()))
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), asFixtureEnv+"=1", "GORACE=atexit_sleep_ms=0",
		"MCP_FIXTURE_TRANSPORT="+r.transport, "MCP_FIXTURE_LISTEN="+r.addr,
		"MCP_FIXTURE_PORT_FILE="+portFile, "MCP_FIXTURE_JOURNAL="+r.journal, "MCP_FIXTURE_STATE_FILE="+r.state)
	// These tests check the handshake era's HTTP behaviours (sessions,
	// GET streams, Last-Event-ID, ping); the stateless revision's are
	// scenarios 160-163.
	if _, ok := knobs["MCP_FIXTURE_ERA"]; !ok {
		cmd.Env = append(cmd.Env, "MCP_FIXTURE_ERA=legacy")
	}
	for k, v := range knobs {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.cmd = cmd
	r.t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		if _, err := os.Stat(portFile); err == nil {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			r.t.Fatal("remote fixture did not start listening")
		}
	}
}

func (r *remoteFixture) kill() {
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.cmd.Wait()
}

func (r *remoteFixture) url() string {
	if r.transport == "sse" {
		return "http://" + r.addr + "/sse"
	}
	return "http://" + r.addr + "/mcp"
}

// TestRemoteIdleExitRestart checks, for streamable HTTP and SSE, that a
// remote server going away is noticed without a call in flight, that the
// restart loop keeps trying on its schedule while the server is down, and
// that it reconnects once the server is back.
func TestRemoteIdleExitRestart(t *testing.T) {
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			dir := t.TempDir()
			remote := startRemote(t, dir, transport, map[string]string{"MCP_FIXTURE_MODE": "restart", "MCP_FIXTURE_HANG_MS": "600000", "MCP_FIXTURE_SKIP_EXIT": "1"})
			e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
				return map[string]json.RawMessage{"fx": json.RawMessage(fmt.Sprintf(`{"type":%q,"url":%q}`, transport, remote.url()))}
			}, Options{})
			e.dir = dir
			sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep := sess.StartReport(); len(rep.Ready) != 1 {
				t.Fatalf("report %+v", rep)
			}
			res, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "one"})
			if err != nil || !strings.Contains(res.Text, "one") {
				t.Fatalf("echo = %+v %v", res, err)
			}
			last := e.rt.Events().Last()
			remote.kill()
			e.awaitAfter(last, m(event.TransportClosed, "fx"))
			// The first attempt is immediate and fails: the server is down.
			e.awaitAfter(last, m(event.RestartFailed, "fx", "attempt", "1"))
			e.awaitAfter(last, m(event.RestartScheduled, "fx", "attempt", "2", "delay_ms", "1000"))
			_, err = sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "down"})
			if !errors.Is(err, ErrRestartFailed) || !strings.Contains(err.Error(), "mcp_restart_failed:fx:") {
				t.Fatalf("call while down = %v, want mcp_restart_failed", err)
			}
			remote.launch(map[string]string{"MCP_FIXTURE_MODE": "restart", "MCP_FIXTURE_SKIP_EXIT": "1"})
			e.clock.Advance(time.Second)
			e.awaitAfter(last, m(event.RestartSucceeded, "fx", "reason", "transport-exit", "attempt", "2"))
			res, err = sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "two"})
			if err != nil || !strings.Contains(res.Text, "two") {
				t.Fatalf("echo after restart = %+v %v", res, err)
			}
			if n := e.count("fx", "launch"); n != 2 {
				t.Fatalf("fixture launches = %d", n)
			}
		})
	}
}

// TestRemoteWedgedProbeRestart: over HTTP, a wedged server fails the probe
// and is reconnected (the runtime cannot kill a remote process; it drops the
// session and connects anew).
func TestRemoteWedgedProbeRestart(t *testing.T) {
	dir := t.TempDir()
	remote := startRemote(t, dir, "http", map[string]string{"MCP_FIXTURE_PING": "drop", "MCP_FIXTURE_HANG_MS": "600000"})
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q,"toolTimeout":1000,"healthProbe":"ping"}`, remote.url()))}
	}, Options{})
	e.dir = dir
	sess, _ := e.rt.OpenSession(t.Context(), SessionOptions{})
	out := e.callAsync(sess, "mcp_fx_test", map[string]any{"text": "x"})
	e.awaitJournal("fx", "hang-start", 1)
	e.clock.Advance(time.Second)
	e.await(m(event.ProbeStarted, "fx", "method", "ping"))
	e.awaitJournal("fx", "ping", 1) // the server has the ping it will drop
	e.clock.Advance(3 * time.Second)
	// Ping is dropped, but tools/list answers: healthy, and the server is
	// remembered as ping-less.
	e.await(m(event.ProbeFinished, "fx", "method", "tools/list", "healthy", "true"))
	o := <-out
	if !errors.Is(o.err, ErrToolTimeout) {
		t.Fatalf("call = %v", o.err)
	}
	out = e.callAsync(sess, "mcp_fx_test", map[string]any{"text": "y"})
	e.awaitJournal("fx", "hang-start", 2)
	last := e.rt.Events().Last()
	e.clock.Advance(time.Second)
	// Ping-less now: the probe goes straight to tools/list.
	ev := e.awaitAfter(last, m(event.ProbeStarted, "fx"))
	if method, _ := ev.Get("method"); method != "tools/list" {
		t.Fatalf("second probe used %s, want tools/list", method)
	}
	<-out
	// The second probe's tools/list reached the server (connect, probe 1,
	// probe 2); only the first probe ever pinged.
	e.awaitJournal("fx", "tools-list", 3)
	if n := e.count("fx", "ping"); n != 1 {
		t.Fatalf("fixture saw %d pings, want 1", n)
	}
}
