package host

import (
	"fmt"
	"os"

	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"

	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/mcplife/mcplife/runtime/event"
)

// TestMain checks for leaked goroutines (goleak) and processes. When
// asFixtureEnv is set the test binary is the fixture MCP server instead.
func TestMain(m *testing.M) {
	if os.Getenv(asFixtureEnv) == "1" {
		os.Exit(fixture.Main())
	}
	if dir := os.Getenv(slowDualEnv); dir != "" {
		if err := serveSlowDual(dir); err != nil {
			fmt.Fprintln(os.Stderr, "slow dual-era server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	proctest.Main(m)
}

func TestConnectListCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"alpha": "", "beta": ""}, Options{})
		sess, err := env.rt.OpenSession(t.Context(), SessionOptions{Name: "main"})
		if err != nil {
			t.Fatal(err)
		}
		rep := sess.StartReport()
		if len(rep.Ready) != 2 {
			t.Fatalf("ready = %v, errors %v", rep.Ready, rep.Errors)
		}
		var names []string
		for _, tl := range sess.Tools() {
			names = append(names, tl.Name)
		}
		want := "mcp_alpha_echo mcp_alpha_hang mcp_beta_echo mcp_beta_hang"
		if got := strings.Join(names, " "); got != want {
			t.Fatalf("tools = %s, want %s", got, want)
		}
		res, err := sess.CallTool(t.Context(), "mcp_alpha_echo", map[string]any{"text": "hi"})
		if err != nil || !strings.Contains(res.Text, "hi") || !strings.Contains(res.Text, `<mcp_tool_output server="alpha" tool="echo"`) {
			t.Fatalf("call = %+v, %v", res, err)
		}
	})
}

func TestToolTimeoutHealthyProbeDoesNotRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": `"toolTimeout": 1000`}, Options{})
		sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		start := time.Now()
		res, err := sess.CallTool(t.Context(), "mcp_a_hang", map[string]any{})
		if !errors.Is(err, ErrToolTimeout) {
			t.Fatalf("err = %v, want ErrToolTimeout (result %+v)\n%s", err, res, env.trace())
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("timed out after %v, want exactly 1s", d)
		}
		if n := env.count(event.RestartScheduled, "a"); n != 0 {
			t.Fatalf("restart scheduled %d times after a healthy probe\n%s", n, env.trace())
		}
		env.await(t, event.Matcher{Kind: event.ProbeFinished, Server: "a", Attrs: map[string]string{"healthy": "true", "method": "ping"}})
	})
}

func TestWedgedServerIsRestartedAndCallRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": `"toolTimeout": 1000`}, Options{})
		sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		m := env.servers["a"]
		m.mu.Lock()
		m.block = make(chan struct{})
		m.mu.Unlock()
		done := make(chan error, 1)
		go func() {
			// After the restart the block is lifted so the retry answers.
			env.await(t, event.Matcher{Kind: event.RestartAttempt, Server: "a"})
			m.mu.Lock()
			close(m.block)
			m.block = nil
			m.mu.Unlock()
			done <- nil
		}()
		start := time.Now()
		res, err := sess.CallTool(t.Context(), "mcp_a_echo", map[string]any{"text": "again"})
		<-done
		if err != nil || !strings.Contains(res.Text, "again") {
			t.Fatalf("call = %+v, %v\n%s", res, err, env.trace())
		}
		// 1 s tool timeout + 3 s ping + 3 s tools/list, restart at delay 0.
		if d := time.Since(start); d != 7*time.Second {
			t.Fatalf("call took %v, want 7s", d)
		}
		env.await(t, event.Matcher{Kind: event.RestartSucceeded, Server: "a", Attrs: map[string]string{"reason": "probe-failure"}})
		if n := m.launches.Load(); n != 2 {
			t.Fatalf("launches = %d, want 2", n)
		}
	})
}

func TestRelentlessSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{StartupGate: -1})
		m := env.servers["a"]
		m.failNext = 9 // the first connect and 8 restarts fail
		sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = sess
		env.await(t, event.Matcher{Kind: event.RestartSucceeded, Server: "a"})
		var delays []int64
		for _, e := range env.rt.Events().Events() {
			if e.Kind == event.RestartScheduled {
				delays = append(delays, e.Attrs["delay_ms"].(int64))
			}
		}
		want := []int64{0, 1000, 2000, 5000, 10000, 30000, 60000, 60000, 60000}
		if len(delays) != len(want) {
			t.Fatalf("delays = %v, want %v", delays, want)
		}
		for i := range want {
			if delays[i] != want[i] {
				t.Fatalf("delays = %v, want %v", delays, want)
			}
		}
	})
}

func TestIdleExitRestartsWithGraceWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{})
		sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		m := env.servers["a"]
		m.failNext = 1 // the first restart attempt fails; the next is 1 s later
		m.kill()
		env.await(t, event.Matcher{Kind: event.TransportClosed, Server: "a"})
		env.await(t, event.Matcher{Kind: event.ToolsUnregisterScheduled, Server: "a"})
		if n := len(sess.Tools()); n != 2 {
			t.Fatalf("tools during grace = %d, want 2", n)
		}
		env.await(t, event.Matcher{Kind: event.RestartSucceeded, Server: "a", Attrs: map[string]string{"reason": "transport-exit"}})
		env.await(t, event.Matcher{Kind: event.ToolsUnregisterCancelled, Server: "a"})
		if n := env.count(event.ToolsUnregistered, "a"); n != 0 {
			t.Fatalf("tools were unregistered inside the grace window")
		}
		res, err := sess.CallTool(t.Context(), "mcp_a_echo", map[string]any{"text": "back"})
		if err != nil || !strings.Contains(res.Text, "back") {
			t.Fatalf("call after restart = %+v %v", res, err)
		}
	})
}

func TestCallInFlightFailsFastOnExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{})
		sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		errc := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := sess.CallTool(t.Context(), "mcp_a_hang", map[string]any{})
			errc <- err
		}()
		env.await(t, event.Matcher{Kind: event.ToolCallStarted, Server: "a"})
		synctest.Wait()
		env.servers["a"].kill()
		err := <-errc
		if !errors.Is(err, ErrConnectionLost) {
			t.Fatalf("err = %v, want ErrConnectionLost", err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("in-flight call failed after %v, want at once", d)
		}
	})
}

func TestCallerAbortNeverProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": `"toolTimeout": 1000`}, Options{})
		sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		_, err := sess.CallTool(ctx, "mcp_a_hang", map[string]any{})
		if !errors.Is(err, ErrAborted) {
			t.Fatalf("err = %v, want ErrAborted", err)
		}
		advance(10 * time.Second)
		if n := env.count(event.ProbeStarted, "a"); n != 0 {
			t.Fatalf("abort probed %d times", n)
		}
	})
}
