package host

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
)

func TestConnectConcurrencyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs := map[string]string{}
		for i := range 6 {
			cfgs["s"+strconv.Itoa(i)] = ""
		}
		env := newMemRuntime(t, cfgs, Options{ConnectConcurrency: 2, StartupGate: -1, LateRegistration: true})
		release := make(chan struct{})
		for _, m := range env.servers {
			m.initWait = release
		}
		env.rt.OpenSession(t.Context(), SessionOptions{})
		synctest.Wait()
		var launched atomic.Int32
		for _, m := range env.servers {
			launched.Add(m.launches.Load())
		}
		if n := launched.Load(); n != 2 {
			t.Fatalf("%d connect attempts running with a cap of 2", n)
		}
		close(release)
		for name := range cfgs {
			env.await(t, event.Matcher{Kind: event.ServerConnected, Server: name})
		}
	})
}

func TestConnectTimeoutOnClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": `"timeout": 5000, "restart": "never"`, "b": ""}, Options{})
		env.servers["a"].initWait = make(chan struct{}) // never answers initialize
		start := time.Now()
		sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rep := sess.StartReport()
		if time.Since(start) != 5*time.Second || len(rep.Failed) != 1 || len(rep.Ready) != 1 {
			t.Fatalf("start took %v, report %+v", time.Since(start), rep)
		}
		if err := rep.Errors["a"]; err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error for a = %v, want a connect timeout", err)
		}
		close(env.servers["a"].initWait)
	})
}

func TestIdleTimeoutStopsUnusedServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{IdleTimeout: time.Minute})
		sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		sess.Close(t.Context())
		start := time.Now()
		env.await(t, event.Matcher{Kind: event.PoolIdleStop, Server: "a"})
		if d := time.Since(start); d != time.Minute {
			t.Fatalf("idle stop after %v, want 1m", d)
		}
		synctest.Wait()
		if n := env.count(event.RestartScheduled, "a"); n != 0 {
			t.Fatal("an idle stop triggered a restart")
		}
		// A new session starts it again.
		if _, err := env.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
			t.Fatal(err)
		}
		if n := env.servers["a"].launches.Load(); n != 2 {
			t.Fatalf("launches = %d, want 2", n)
		}
	})
}

func TestNoIdleTimeoutKeepsServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{})
		sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		sess.Close(t.Context())
		advance(24 * time.Hour)
		if st := env.rt.Status(); st[0].State != StateConnected || st[0].Refs != 0 {
			t.Fatalf("status after a day unused: %+v", st[0])
		}
	})
}

func TestRestartWaitLetsCallsWait(t *testing.T) {
	for _, wait := range []time.Duration{0, 10 * time.Second} {
		synctest.Test(t, func(t *testing.T) {
			env := newMemRuntime(t, map[string]string{"a": ""}, Options{RestartWait: wait})
			sess, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
			m := env.servers["a"]
			m.initWait = make(chan struct{}) // the restart attempt hangs in initialize
			m.kill()
			env.await(t, event.Matcher{Kind: event.RestartAttempt, Server: "a"})
			synctest.Wait()
			released := make(chan struct{})
			defer func() { <-released }()
			go func() {
				defer close(released)
				advance(2 * time.Second)
				m.mu.Lock()
				close(m.initWait)
				m.initWait = nil
				m.mu.Unlock()
			}()
			_, err := sess.CallTool(t.Context(), "mcp_a_echo", map[string]any{"text": "x"})
			if wait == 0 && !errors.Is(err, ErrRestartInProgress) {
				t.Fatalf("without RestartWait: %v, want mcp_restart_in_progress", err)
			}
			if wait > 0 && err != nil {
				t.Fatalf("with RestartWait: %v, want the call to wait for the restart", err)
			}
		})
	}
}

func TestPrivateServerClosesWithSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"p": `"shared": false`, "s": ""}, Options{})
		s1, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		s2, _ := env.rt.OpenSession(t.Context(), SessionOptions{})
		if n := env.servers["p"].launches.Load(); n != 2 {
			t.Fatalf("private launches = %d, want one per session", n)
		}
		if n := env.servers["s"].launches.Load(); n != 1 {
			t.Fatalf("shared launches = %d, want 1", n)
		}
		s1.Close(t.Context())
		env.await(t, event.Matcher{Kind: event.ToolsUnregistered, Server: "p", Attrs: map[string]string{"reason": "session closed"}})
		if n := len(s2.Tools()); n != 4 {
			t.Fatalf("the other session lost tools: %d", n)
		}
	})
}

// TestOptionsDefaults: the zero Options get every documented default, a
// value that is set is kept, and the options whose doc gives a negative
// value a meaning keep it.
func TestOptionsDefaults(t *testing.T) {
	z := Options{}.withDefaults()
	type check struct {
		name      string
		got, want any
	}
	checks := []check{
		{"EventLimit", z.EventLimit, DefaultEventLimit},
		{"ConnectConcurrency", z.ConnectConcurrency, DefaultConnectConcurrency},
		{"StartupGate", z.StartupGate, DefaultStartupGate},
		{"ProtocolVersion", z.ProtocolVersion, ""}, // per transport (era.go)
		{"ToolTimeout", z.ToolTimeout, DefaultToolTimeout},
		{"ProbeTimeout", z.ProbeTimeout, DefaultProbeTimeout},
		{"UnregisterGrace", z.UnregisterGrace, DefaultUnregisterGrace},
		{"StabilityWindow", z.StabilityWindow, DefaultStabilityWindow},
		{"AcquireTimeout", z.AcquireTimeout, DefaultAcquireTimeout},
		{"ListChangedDebounce", z.ListChangedDebounce, DefaultListChangedDebounce},
		{"MaxResultChars", z.MaxResultChars, DefaultMaxResultChars},
		{"MaxMessageBytes", z.MaxMessageBytes, DefaultMaxMessageBytes},
		{"StderrLimit", z.StderrLimit, proc.DefaultStderrLimit},
		{"MaxTools", z.MaxTools, DefaultMaxTools},
		{"MaxToolNameBytes", z.MaxToolNameBytes, DefaultMaxToolNameBytes},
		{"MaxSchemaDepth", z.MaxSchemaDepth, DefaultMaxSchemaDepth},
		{"OAuthRedirectURL", z.OAuthRedirectURL, DefaultOAuthRedirectURL},
		{"ClientName", z.ClientName, "mcplife"},
		{"IdleTimeout", z.IdleTimeout, time.Duration(0)}, // zero keeps servers running
	}
	set := Options{
		EventLimit: 7, ConnectConcurrency: 3, StartupGate: time.Second, ProtocolVersion: "2025-06-18",
		ToolTimeout: time.Minute, ProbeTimeout: 2 * time.Second, UnregisterGrace: time.Second,
		StabilityWindow: time.Hour, AcquireTimeout: 9 * time.Second, ListChangedDebounce: time.Millisecond,
		MaxResultChars: 11, MaxMessageBytes: 4096, StderrLimit: 512, MaxTools: 5, MaxToolNameBytes: 6,
		MaxSchemaDepth: 4, OAuthRedirectURL: "http://127.0.0.1:1/cb", ClientName: "other",
	}
	s := set.withDefaults()
	checks = append(checks,
		check{"set EventLimit", s.EventLimit, 7},
		check{"set ConnectConcurrency", s.ConnectConcurrency, 3},
		check{"set StartupGate", s.StartupGate, time.Second},
		check{"set ProtocolVersion", s.ProtocolVersion, "2025-06-18"},
		check{"set ToolTimeout", s.ToolTimeout, time.Minute},
		check{"set ProbeTimeout", s.ProbeTimeout, 2 * time.Second},
		check{"set UnregisterGrace", s.UnregisterGrace, time.Second},
		check{"set StabilityWindow", s.StabilityWindow, time.Hour},
		check{"set AcquireTimeout", s.AcquireTimeout, 9 * time.Second},
		check{"set ListChangedDebounce", s.ListChangedDebounce, time.Millisecond},
		check{"set MaxResultChars", s.MaxResultChars, 11},
		check{"set MaxMessageBytes", s.MaxMessageBytes, 4096},
		check{"set StderrLimit", s.StderrLimit, 512},
		check{"set MaxTools", s.MaxTools, 5},
		check{"set MaxToolNameBytes", s.MaxToolNameBytes, 6},
		check{"set MaxSchemaDepth", s.MaxSchemaDepth, 4},
		check{"set OAuthRedirectURL", s.OAuthRedirectURL, "http://127.0.0.1:1/cb"},
		check{"set ClientName", s.ClientName, "other"},
	)
	// Negative values with a documented meaning are kept: keep every event,
	// close the startup gate at once, no stdout limit.
	n := Options{EventLimit: -1, StartupGate: -1, MaxMessageBytes: -1}.withDefaults()
	checks = append(checks,
		check{"negative EventLimit", n.EventLimit, -1},
		check{"negative StartupGate", n.StartupGate, time.Duration(-1)},
		check{"negative MaxMessageBytes", n.MaxMessageBytes, -1},
	)
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if z.Clock == nil || z.Logger == nil || z.Events == nil {
		t.Errorf("zero Options left Clock %v, Logger %v or Events %v nil", z.Clock, z.Logger, z.Events)
	}
}
