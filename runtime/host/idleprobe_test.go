package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/runtime/event"
)

// The idle probe runs on the runtime's clock only: every test here uses a
// fake clock (clocktest) inside a synctest bubble and moves it by hand, so
// a wait that went around rt.clock would never end (or end at once) and
// fail the test.

func awaitAfter(t *testing.T, env *memEnv, after uint64, kind event.Kind, server string, attrs ...string) event.Event {
	t.Helper()
	m := event.Matcher{Kind: kind, Server: server, Attrs: map[string]string{}}
	for i := 0; i+1 < len(attrs); i += 2 {
		m.Attrs[attrs[i]] = attrs[i+1]
	}
	e, err := env.rt.Events().Await(t.Context(), after, m)
	if err != nil {
		t.Fatalf("%v\nevents:\n%s", err, env.trace())
	}
	return e
}

func countAfter(env *memEnv, after uint64, kind event.Kind, server string) int {
	n := 0
	for _, e := range env.rt.Events().Events() {
		if e.Seq > after && e.Kind == kind && e.Server == server {
			n++
		}
	}
	return n
}

// Off by default: no timer is armed, no idle probe ever runs.
func TestIdleProbeOffByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := clocktest.New()
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{Clock: fake})
		if _, err := env.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		fake.Advance(24 * time.Hour)
		synctest.Wait()
		for _, k := range []event.Kind{event.ProbeIdleScheduled, event.ProbeIdleStarted, event.ProbeStarted} {
			if n := env.rt.Events().Count(event.Matcher{Kind: k}); n != 0 {
				t.Fatalf("%d %s events without IdleProbeInterval:\n%s", n, k, env.trace())
			}
		}
	})
}

// A server wedged while idle is found by the idle probe and restarted;
// its healthy neighbour is probed and left alone; the next round is armed
// once the round is over.
func TestIdleProbeRestartsWedgedServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := clocktest.New()
		const every = 30 * time.Second
		env := newMemRuntime(t, map[string]string{"a": "", "b": ""}, Options{Clock: fake, IdleProbeInterval: every})
		sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		first := awaitAfter(t, env, 0, event.ProbeIdleScheduled, "", "delay_ms", "30000")
		m := env.servers["a"]
		m.mu.Lock()
		m.block = make(chan struct{}) // wedged: nothing is answered, ping included
		m.mu.Unlock()

		fake.Advance(every)
		awaitAfter(t, env, first.Seq, event.ProbeIdleStarted, "b")
		awaitAfter(t, env, first.Seq, event.ProbeFinished, "b", "method", "ping", "healthy", "true")
		awaitAfter(t, env, first.Seq, event.ProbeIdleStarted, "a")
		awaitAfter(t, env, first.Seq, event.ProbeStarted, "a", "method", "ping")
		fake.Advance(DefaultProbeTimeout)
		awaitAfter(t, env, first.Seq, event.ProbeStarted, "a", "method", "tools/list")
		fake.Advance(DefaultProbeTimeout)
		awaitAfter(t, env, first.Seq, event.ProbeFinished, "a", "method", "tools/list", "healthy", "false")
		awaitAfter(t, env, first.Seq, event.RestartScheduled, "a", "reason", "idle-probe-failure", "attempt", "1", "delay_ms", "0")
		awaitAfter(t, env, first.Seq, event.RestartAttempt, "a", "reason", "idle-probe-failure")
		m.mu.Lock()
		close(m.block) // the relaunched server answers
		m.block = nil
		m.mu.Unlock()
		back := awaitAfter(t, env, first.Seq, event.RestartSucceeded, "a", "reason", "idle-probe-failure")
		second := awaitAfter(t, env, first.Seq, event.ProbeIdleScheduled, "")
		if got := fake.Elapsed(); got != every+2*DefaultProbeTimeout {
			t.Errorf("the second round was armed at %v, want %v (after the first round's probes)", got, every+2*DefaultProbeTimeout)
		}
		if n := countAfter(env, first.Seq, event.RestartScheduled, "b"); n != 0 {
			t.Errorf("the healthy server b was restarted:\n%s", env.trace())
		}
		if n := m.launches.Load(); n != 2 {
			t.Errorf("a launched %d times, want 2", n)
		}
		res, err := sess.CallTool(t.Context(), "mcp_a_echo", map[string]any{"text": "back"})
		if err != nil || !strings.Contains(res.Text, "back") {
			t.Fatalf("call after the restart: %+v, %v\n%s", res, err, env.trace())
		}
		// The next round probes both again and restarts nothing.
		fake.Advance(every)
		awaitAfter(t, env, second.Seq, event.ProbeFinished, "a", "healthy", "true")
		awaitAfter(t, env, second.Seq, event.ProbeFinished, "b", "healthy", "true")
		awaitAfter(t, env, max(second.Seq, back.Seq), event.ProbeIdleScheduled, "")
		if n := countAfter(env, back.Seq, event.RestartScheduled, "a") + countAfter(env, back.Seq, event.RestartScheduled, "b"); n != 0 {
			t.Errorf("healthy servers restarted in round 2:\n%s", env.trace())
		}
	})
}

// A server with a tool call in flight is not idle: the round skips it
// (the call's own timeout and probe are what judge it).
func TestIdleProbeSkipsBusyServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := clocktest.New()
		const every = 10 * time.Second
		env := newMemRuntime(t, map[string]string{"a": `"toolTimeout": 0`, "b": ""}, Options{Clock: fake, IdleProbeInterval: every})
		sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		first := awaitAfter(t, env, 0, event.ProbeIdleScheduled, "")
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := sess.CallTool(ctx, "mcp_a_hang", map[string]any{})
			done <- err
		}()
		awaitAfter(t, env, 0, event.ToolCallStarted, "a")
		fake.Advance(every)
		awaitAfter(t, env, first.Seq, event.ProbeFinished, "b", "healthy", "true")
		second := awaitAfter(t, env, first.Seq, event.ProbeIdleScheduled, "")
		if n := countAfter(env, first.Seq, event.ProbeIdleStarted, "a") + countAfter(env, first.Seq, event.ProbeStarted, "a"); n != 0 {
			t.Fatalf("a, busy with a call, was probed:\n%s", env.trace())
		}
		cancel()
		if err := <-done; !errors.Is(err, ErrAborted) {
			t.Fatalf("the cancelled call: %v", err)
		}
		// Idle again: the next round probes it.
		fake.Advance(every)
		awaitAfter(t, env, second.Seq, event.ProbeIdleStarted, "a")
		awaitAfter(t, env, second.Seq, event.ProbeFinished, "a", "healthy", "true")
	})
}

// RetryNow ends the backoff wait at once: the attempt runs without the
// clock moving. It refuses a connected server and an unknown name.
func TestRetryNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := clocktest.New()
		env := newMemRuntime(t, map[string]string{"a": "", "b": ""}, Options{Clock: fake, StartupGate: -1})
		env.servers["a"].failNext = 2 // the first connect and restart attempt 1 fail
		if _, err := env.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
			t.Fatal(err)
		}
		awaitAfter(t, env, 0, event.RestartScheduled, "a", "attempt", "2", "delay_ms", "1000")
		if err := env.rt.RetryNow("b"); !errors.Is(err, ErrNotRetrying) {
			t.Errorf("RetryNow of the connected b: %v, want ErrNotRetrying", err)
		}
		if err := env.rt.RetryNow("nosuch"); err == nil || errors.Is(err, ErrNotRetrying) || !strings.Contains(err.Error(), `"nosuch"`) {
			t.Errorf("RetryNow of an unknown server: %v", err)
		}
		if err := env.rt.RetryNow("a"); err != nil {
			t.Fatal(err)
		}
		awaitAfter(t, env, 0, event.RestartRetryNow, "a", "attempt", "2")
		awaitAfter(t, env, 0, event.RestartSucceeded, "a", "attempt", "2")
		if got := fake.Elapsed(); got != 0 {
			t.Errorf("the retry waited %v of the clock, want 0", got)
		}
		if err := env.rt.RetryNow("a"); !errors.Is(err, ErrNotRetrying) {
			t.Errorf("RetryNow once connected: %v, want ErrNotRetrying", err)
		}
		// No retry is left over for a later loop: the next failure waits
		// out its schedule.
		if n := env.rt.Events().Count(event.Matcher{Kind: event.RestartRetryNow}); n != 1 {
			t.Errorf("%d restart.retry_now events, want 1", n)
		}
	})
}
