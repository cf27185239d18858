package host

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestStartupGateDeferredFromCache(t *testing.T) {
	cache := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		// A first runtime fills the cache.
		warm := newMemRuntime(t, map[string]string{"slow": "", "fast": ""}, Options{CacheDir: cache})
		if _, err := warm.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
			t.Fatal(err)
		}
		warm.await(t, event.Matcher{Kind: event.CacheWritten, Server: "slow"})
		warm.rt.Close(t.Context())

		env := newMemRuntime(t, map[string]string{"slow": "", "fast": ""}, Options{CacheDir: cache})
		release := make(chan struct{})
		env.servers["slow"].initWait = release
		start := time.Now()
		sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != DefaultStartupGate {
			t.Fatalf("session start took %v, want the 250ms gate", d)
		}
		rep := sess.StartReport()
		if strings.Join(rep.Deferred, ",") != "slow" || strings.Join(rep.Ready, ",") != "fast" {
			t.Fatalf("report = %+v", rep)
		}
		env.await(t, event.Matcher{Kind: event.GateClosed, Attrs: map[string]string{"deferred": "1", "ready": "1", "elapsed_ms": "250"}})
		var deferred int
		for _, tl := range sess.Tools() {
			if tl.Deferred {
				deferred++
			}
		}
		if deferred != 2 {
			t.Fatalf("deferred tools = %d, want 2", deferred)
		}
		// A deferred call waits for the late connection.
		done := make(chan string, 1)
		go func() {
			res, err := sess.CallTool(t.Context(), "mcp_slow_echo", map[string]any{"text": "late"})
			if err != nil {
				done <- err.Error()
				return
			}
			done <- res.Text
		}()
		advance(time.Second)
		close(release)
		if got := <-done; !strings.Contains(got, "late") {
			t.Fatalf("deferred call = %q", got)
		}
		env.await(t, event.Matcher{Kind: event.ToolsRegistered, Server: "slow", Attrs: map[string]string{"deferred": "false"}})
		for _, tl := range sess.Tools() {
			if tl.Deferred {
				t.Fatalf("tool %s still deferred after connect", tl.Name)
			}
		}
	})
}

func TestGateWithoutCacheHoldsOrRegistersLate(t *testing.T) {
	for _, late := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			env := newMemRuntime(t, map[string]string{"slow": ""}, Options{LateRegistration: late})
			release := make(chan struct{})
			env.servers["slow"].initWait = release
			go func() {
				advance(2 * time.Second)
				close(release)
			}()
			start := time.Now()
			sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			elapsed := time.Since(start)
			if late {
				if elapsed != DefaultStartupGate || len(sess.StartReport().Late) != 1 || len(sess.Tools()) != 0 {
					t.Fatalf("late: start %v, report %+v", elapsed, sess.StartReport())
				}
				env.await(t, event.Matcher{Kind: event.ToolsRegistered, Server: "slow"})
				synctest.Wait()
				if len(sess.Tools()) != 2 {
					t.Fatalf("late registration: %d tools", len(sess.Tools()))
				}
			} else if elapsed != 2*time.Second || len(sess.Tools()) != 2 {
				t.Fatalf("hold: start took %v with %d tools, want 2s and 2 tools", elapsed, len(sess.Tools()))
			}
		})
	}
}

func TestConcurrentSessionsShareOneLaunch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{})
		env.servers["a"].initWait = make(chan struct{})
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				if _, err := env.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
					t.Error(err)
				}
			})
		}
		advance(time.Second)
		close(env.servers["a"].initWait)
		wg.Wait()
		if n := env.servers["a"].launches.Load(); n != 1 {
			t.Fatalf("launches = %d, want 1", n)
		}
		st := env.rt.Status()
		if len(st) != 1 || st[0].Refs != 100 || st[0].State != StateConnected {
			t.Fatalf("status = %+v", st)
		}
	})
}

func TestAcquireTimeoutThenFastUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{})
		env.servers["a"].failNext = 1 << 30
		start := time.Now()
		_, err := env.rt.Acquire(t.Context(), "a")
		if !errors.Is(err, ErrUnavailable) || time.Since(start) != DefaultAcquireTimeout {
			t.Fatalf("first acquire: %v after %v", err, time.Since(start))
		}
		start = time.Now()
		_, err = env.rt.Acquire(t.Context(), "a")
		if !errors.Is(err, ErrUnavailable) || time.Since(start) != 0 || !strings.Contains(err.Error(), "initialization failed 60s ago, retrying in background") {
			t.Fatalf("second acquire: %v after %v", err, time.Since(start))
		}
	})
}

func TestCrashLoopBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{StartupGate: -1})
		m := env.servers["a"]
		if _, err := env.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
			t.Fatal(err)
		}
		// The server dies right after every handshake: launches follow the
		// growing schedule, never a tight loop.
		var times []time.Duration
		start := time.Now()
		for i := range 5 {
			env.await(t, event.Matcher{Kind: event.ServerConnected, Server: "a", Attrs: map[string]string{"attempt": itoa(i)}})
			synctest.Wait()
			times = append(times, time.Since(start))
			m.kill()
		}
		want := []time.Duration{0, 0, time.Second, 3 * time.Second, 8 * time.Second}
		for i := range want {
			if times[i] != want[i] {
				t.Fatalf("connect times = %v, want %v", times, want)
			}
		}
		// After the stability window the step returns to zero.
		env.await(t, event.Matcher{Kind: event.ServerConnected, Server: "a", Attrs: map[string]string{"attempt": "5"}})
		advance(DefaultStabilityWindow + time.Second)
		before := time.Now()
		m.kill()
		env.await(t, event.Matcher{Kind: event.ServerConnected, Server: "a", Attrs: map[string]string{"attempt": "1"}})
		synctest.Wait()
		if d := time.Since(before); d != 0 {
			t.Fatalf("restart after a stable period waited %v, want 0", d)
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestListChangedRefreshKeepsOldOnEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{})
		sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		m := env.servers["a"]
		m.srv.AddTool(&mcp.Tool{Name: "extra", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		env.await(t, event.Matcher{Kind: event.ToolsChanged, Server: "a"})
		env.await(t, event.Matcher{Kind: event.ToolsRegistered, Server: "a", Attrs: map[string]string{"tools": "3"}})
		synctest.Wait()
		if n := len(sess.Tools()); n != 3 {
			t.Fatalf("tools after list_changed = %d", n)
		}
		m.srv.RemoveTools("extra", "echo", "hang")
		env.await(t, event.Matcher{Kind: event.ToolsRefreshKept, Server: "a"})
		if n := len(sess.Tools()); n != 3 {
			t.Fatalf("empty refresh replaced the tools: %d left", n)
		}
	})
}

func TestReloadSwapsToolsAndDisconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": "", "b": ""}, Options{})
		sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		if err := env.rt.DisconnectServer(t.Context(), "b"); err != nil {
			t.Fatal(err)
		}
		if n := len(sess.Tools()); n != 2 {
			t.Fatalf("tools after disconnect = %d, want 2", n)
		}
		if _, err := sess.CallTool(t.Context(), "mcp_b_echo", nil); !errors.Is(err, ErrUnknownTool) {
			t.Fatalf("call to a disconnected server's tool: %v", err)
		}
		synctest.Wait()
		if n := env.count(event.RestartScheduled, "b"); n != 0 {
			t.Fatal("a planned disconnect triggered a restart")
		}
		if err := env.rt.Reload(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := len(sess.Tools()); n != 4 {
			t.Fatalf("tools after reload = %d, want 4", n)
		}
		if n := env.servers["a"].launches.Load(); n != 2 {
			t.Fatalf("launches of a = %d, want 2 (reload reconnects)", n)
		}
	})
}

func TestPoliciesGiveUp(t *testing.T) {
	for _, tc := range []struct {
		cfg    string
		delays []int64
	}{
		{`"shared": false`, []int64{0}},
		{`"restart": "bounded"`, []int64{2000, 5000, 15000}},
		{`"restart": "never"`, nil},
		{`"restart": "bounded", "restartDelays": [100, 200]`, []int64{100, 200}},
	} {
		synctest.Test(t, func(t *testing.T) {
			env := newMemRuntime(t, map[string]string{"a": tc.cfg}, Options{StartupGate: -1})
			env.servers["a"].failNext = 1 << 30
			env.rt.OpenSession(t.Context(), SessionOptions{})
			env.await(t, event.Matcher{Kind: event.RestartGaveUp, Server: "a"})
			var delays []int64
			for _, e := range env.rt.Events().Events() {
				if e.Kind == event.RestartScheduled {
					delays = append(delays, e.Attrs["delay_ms"].(int64))
				}
			}
			if len(delays) != len(tc.delays) {
				t.Fatalf("%s: delays %v, want %v", tc.cfg, delays, tc.delays)
			}
			for i := range delays {
				if delays[i] != tc.delays[i] {
					t.Fatalf("%s: delays %v, want %v", tc.cfg, delays, tc.delays)
				}
			}
			if st := env.rt.Status(); st[0].State != StateFailed {
				t.Fatalf("%s: state %s after giving up", tc.cfg, st[0].State)
			}
		})
	}
}

func TestCollisionReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"my-server": "", "my.server": ""}, Options{})
		sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		env.await(t, event.Matcher{Kind: event.ToolsCollision, Attrs: map[string]string{"name": "mcp_my_server_echo", "winner": "my-server/echo"}})
		if n := len(sess.Tools()); n != 2 {
			t.Fatalf("tools = %d, want 2 (one per exposed name)", n)
		}
	})
}
