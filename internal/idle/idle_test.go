package idle

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/runtime/event"
)

// writeJournal writes entries as a fixture journal of this process (so its
// launch counts as alive) and returns the file.
func writeJournal(t *testing.T, entries ...map[string]any) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fx.jsonl")
	var b strings.Builder
	for i, e := range entries {
		line := map[string]any{"seq": i + 1, "pid": os.Getpid(), "launch": 1, "time": "2026-01-01T00:00:00Z"}
		for k, v := range e {
			line[k] = v
		}
		j, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFixtureWork(t *testing.T) {
	launch := map[string]any{"kind": "launch"}
	bound := time.Minute
	cases := []struct {
		name    string
		entries []map[string]any
		busy    bool
	}{
		{"nothing pending", []map[string]any{launch, {"kind": "initialize"}}, false},
		{"a short hang ends by itself", []map[string]any{launch, {"kind": "hang-start", "ms": 100, "blocking": false}}, true},
		{"a hang past the bound is held", []map[string]any{launch, {"kind": "hang-start", "ms": 600000, "blocking": false}}, false},
		{"an ended hang", []map[string]any{launch, {"kind": "hang-start", "ms": 100}, {"kind": "hang-end"}}, false},
		{"a short sleep", []map[string]any{launch, {"kind": "call-start", "tool": "sleep", "args": `{"ms":50}`}}, true},
		{"a long sleep is held", []map[string]any{launch, {"kind": "call-start", "tool": "sleep", "args": `{"ms":600000}`}}, false},
		{"an armed self-exit", []map[string]any{launch, {"kind": "exit-armed", "delayMs": 2000}}, true},
		{"a self-exit behind a blocking hang cannot fire", []map[string]any{launch, {"kind": "exit-armed", "delayMs": 2000}, {"kind": "hang-start", "ms": 600000, "blocking": true}}, false},
	}
	idleExit := map[string]string{"MCP_FIXTURE_IDLE_EXIT_MS": "1500"}
	listed := map[string]any{"kind": "tools-list", "count": 9}
	cases = append(cases, []struct {
		name    string
		entries []map[string]any
		busy    bool
	}{
		{"an idle exit before the first tools/list is not armed", []map[string]any{launch, {"kind": "initialize"}}, false},
		{"an idle exit after the first tools/list is armed", []map[string]any{launch, listed}, true},
		{"an idle exit that happened", []map[string]any{launch, listed, {"kind": "exit", "reason": "idle-exit", "code": 0}}, false},
	}...)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := Source{Journals: map[string]string{"fx": writeJournal(t, c.entries...)}, HoldBound: bound}
			if i >= len(cases)-3 {
				src.Knobs = map[string]map[string]string{"fx": idleExit}
			}
			if got := src.Busy(t.Context()); (got != "") != c.busy {
				t.Errorf("Busy() = %q, want busy %v", got, c.busy)
			}
		})
	}
}

func TestHolds(t *testing.T) {
	launch := map[string]any{"kind": "launch"}
	bound := time.Minute
	release := filepath.Join(t.TempDir(), "release")
	held := latestLaunch(readFile(t, writeJournal(t, launch, map[string]any{"kind": "init-wait", "file": release})))
	if !handshakeHeld(held) {
		t.Error("an initialize waiting for a missing release file is not held")
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if handshakeHeld(held) {
		t.Error("an initialize whose release file exists is still held")
	}
	if !callHeld(readFile(t, writeJournal(t, launch, map[string]any{"kind": "hang-start", "ms": 600000})), bound) {
		t.Error("a call hanging past the bound is not held")
	}
	if callHeld(readFile(t, writeJournal(t, launch, map[string]any{"kind": "hang-start", "ms": 10})), bound) {
		t.Error("a call hanging 10 ms is held")
	}
	closed := map[string]any{"kind": "corrupt", "what": "close-stdout", "at": "tool"}
	if !callHeld(readFile(t, writeJournal(t, launch, map[string]any{"kind": "call-start", "tool": "corrupt"}, closed, map[string]any{"kind": "call-end", "tool": "corrupt"})), bound) {
		t.Error("a call whose server closed stdout and lives on is not held")
	}
	if callHeld(readFile(t, writeJournal(t, launch, map[string]any{"kind": "call-start", "tool": "corrupt"}, map[string]any{"kind": "corrupt", "what": "garbage", "at": "tool"})), bound) {
		t.Error("a call whose server wrote garbage is held")
	}
	if !probeHeld(readFile(t, writeJournal(t, launch, map[string]any{"kind": "ping", "action": "dropped"})), bound) {
		t.Error("a dropped ping does not hold the probe")
	}
	if probeHeld(readFile(t, writeJournal(t, launch, map[string]any{"kind": "ping", "action": "answered"})), bound) {
		t.Error("an answered ping holds the probe")
	}
}

func readFile(t *testing.T, p string) journal {
	t.Helper()
	j, err := Source{}.read(p)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestContradiction(t *testing.T) {
	ctx, cancel := Bound(t.Context(), time.Hour, Source{Contradictions: []func() string{func() string { return "seen" }}})
	defer cancel()
	<-ctx.Done()
	var ce *ContradictedError
	if err := context.Cause(ctx); !errors.As(err, &ce) || ce.Why != "seen" || !Decided(err) {
		t.Fatalf("cause %v, want the contradiction", err)
	}
}

func TestRealClockNeverIdle(t *testing.T) {
	// With the real clock and no contradiction, only the bound ends the
	// wait: the implementation's own timers are invisible.
	ctx, cancel := Bound(t.Context(), time.Hour, Source{})
	defer cancel()
	if _, ok := ctx.Deadline(); !ok {
		t.Fatal("no deadline")
	}
	select {
	case <-ctx.Done():
		t.Fatalf("ended: %v", context.Cause(ctx))
	default:
	}
}

// TestIdleReferenceRuntime runs the reference runtime with no server and
// awaits an event that never comes: the wait ends with an *Error, decided
// from the implementation's state, long before its bound.
func TestIdleReferenceRuntime(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c, err := driver.StartInProcess(ctx, driver.ServeOptions{})
	started(t, c, err, driver.ClockVirtual)
	defer closeDriver(t, c)
	wctx, done := Bound(ctx, time.Hour, Source{DecideIdle: true, Client: c, HoldBound: time.Minute})
	defer done()
	_, err = c.Await(wctx, 0, event.Matcher{Kind: event.RestartSucceeded})
	var ie *Error
	if !errors.As(context.Cause(wctx), &ie) || err == nil {
		t.Fatalf("await ended with %v (cause %v), want the idle decision", err, context.Cause(wctx))
	}
}

// TestRealTimers runs a driver on the real clock that lists its
// implementation's pending timers (pending-timers) and awaits an event that
// never comes, with a bound of an hour: with no timer, or only one due after
// the bound, the wait is decided idle at once; with one due before it, not
// before that timer fired (the decision lists no pending timer).
func TestRealTimers(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, timer string
		listed      bool // the decision lists the timer
	}{
		{"none", "", false},
		{"after the bound", "2h", true},
		{"before the bound", "300ms", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			c, err := driver.StartCommand(ctx, []string{exe}, append(os.Environ(), timersDriverEnv+"="+tc.timer), nil)
			started(t, c, err, driver.ClockReal)
			defer closeDriver(t, c)
			wctx, done := Bound(ctx, time.Hour, Source{DecideIdle: true, RealTimers: true, Client: c, HoldBound: time.Minute})
			defer done()
			_, err = c.Await(wctx, 0, event.Matcher{Kind: event.RestartSucceeded})
			var ie *Error
			if !errors.As(context.Cause(wctx), &ie) || err == nil {
				t.Fatalf("await ended with %v (cause %v), want the idle decision", err, context.Cause(wctx))
			}
			if !ie.RealClock || (len(ie.Timers) > 0) != tc.listed || !strings.Contains(ie.Error(), "real clock") {
				t.Errorf("decision %+v (%v): want the real clock, timer listed %t", ie, ie, tc.listed)
			}
		})
	}
}

// started checks that the driver c started (err), then says hello and
// starts it with clock. The caller closes it (closeDriver) before its
// context ends.
func started(t *testing.T, c *driver.Client, err error, clock string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Hello(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context(), driver.StartParams{Clock: clock, Home: t.TempDir(), Env: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
}

// closeDriver shuts the driver c down.
func closeDriver(t *testing.T, c *driver.Client) {
	t.Helper()
	if err := c.Close(context.Background()); err != nil {
		t.Error(err)
	}
}

// deadPID returns the pid of a process that ran and was reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestBusyEvents judges, on the real clock with listed timers, a
// session.open held by the implementation, after the events it emitted:
// held while it announces nothing, it is at work; once it announces its
// connects, the rules on them decide. A call sent after its server's
// connection closed, whose process is gone, is the implementation's own.
func TestBusyEvents(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ev := func(seq uint64, kind event.Kind, attrs map[string]any) event.Event {
		return event.Event{Seq: seq, Server: "fx", Kind: kind, Attrs: attrs}
	}
	connecting := ev(0, event.ServerConnecting, map[string]any{"attempt": 0, "transport": "http"})
	dead := writeJournalPID(t, deadPID(t), map[string]any{"kind": "launch"}, map[string]any{"kind": "tools-list"}, map[string]any{"kind": "exit"})
	for _, tc := range []struct {
		name     string
		evs      []event.Event
		journals map[string]string
		busy     string // a part of the reason, "" for not busy
	}{
		{"nothing announced", nil, nil, "request session.open outstanding"},
		{"a connect under way", []event.Event{connecting}, nil, "connect in progress"},
		{"a connect that failed", []event.Event{connecting, ev(0, event.ServerFailed, nil)}, nil, ""},
		{"a connect refused with Retry-After", []event.Event{connecting}, map[string]string{"fx": writeJournal(t, map[string]any{"kind": "launch"}, map[string]any{"kind": "throttled", "status": 503, "retryAfter": 60})}, ""},
		{"a call after the connection closed, its process gone", []event.Event{connecting, ev(0, event.ServerConnected, nil), ev(0, event.TransportClosed, nil), ev(0, event.ToolCallStarted, map[string]any{"call": "call-1"})}, map[string]string{"fx": dead}, ""},
		{"a call whose stream dropped, its resumption waiting on the clock", []event.Event{connecting, ev(0, event.ServerConnected, nil), ev(0, event.ToolCallStarted, map[string]any{"call": "call-1"}), ev(0, event.RemoteStreamDropped, map[string]any{"retry_ms": 600000})}, nil, ""},
		{"a call whose stream dropped, its resumption due", []event.Event{connecting, ev(0, event.ServerConnected, nil), ev(0, event.ToolCallStarted, map[string]any{"call": "call-1"}), ev(0, event.RemoteStreamDropped, map[string]any{"retry_ms": 0})}, nil, "stream resumption in progress"},
		{"a call sent after another's stream dropped", []event.Event{connecting, ev(0, event.ServerConnected, nil), ev(0, event.ToolCallStarted, map[string]any{"call": "call-1"}), ev(0, event.RemoteStreamDropped, map[string]any{"retry_ms": 600000}), ev(0, event.ToolCallStarted, map[string]any{"call": "call-2"})}, nil, "call call-2 on fx in flight"},
		{"a call after the connection closed, its process alive", []event.Event{connecting, ev(0, event.ServerConnected, nil), ev(0, event.TransportClosed, nil), ev(0, event.ToolCallStarted, map[string]any{"call": "call-1"})}, map[string]string{"fx": writeJournal(t, map[string]any{"kind": "launch"})}, "call call-1 on fx in flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The driver ends with session.opened: once it is in, so is
			// every event before it, and session.open is outstanding.
			evs := append(slices.Clone(tc.evs), event.Event{Session: "main", Kind: event.SessionOpened})
			spec, err := json.Marshal(evs)
			if err != nil {
				t.Fatal(err)
			}
			c, err := driver.StartCommand(t.Context(), []string{exe}, append(os.Environ(), eventsDriverEnv+"="+string(spec)), nil)
			started(t, c, err, driver.ClockReal)
			opened := make(chan error, 1)
			defer func() {
				closeDriver(t, c)
				<-opened
			}()
			go func() {
				_, err := c.OpenSession(t.Context(), "main")
				opened <- err
			}()
			if _, err := c.Await(t.Context(), 0, event.Matcher{Kind: event.SessionOpened}); err != nil {
				t.Fatal(err)
			}
			src := Source{DecideIdle: true, RealTimers: true, Client: c, Journals: tc.journals, HoldBound: time.Minute}
			if got := src.busy(t.Context(), 0); (tc.busy == "") != (got == "") || !strings.Contains(got, tc.busy) {
				t.Errorf("busy = %q, want %q", got, tc.busy)
			}
		})
	}
}

// writeJournalPID is writeJournal for a launch by process pid.
func writeJournalPID(t *testing.T, pid int, entries ...map[string]any) string {
	t.Helper()
	for _, e := range entries {
		e["pid"] = pid
	}
	return writeJournal(t, entries...)
}

// TestEscapedHolds: a call is the implementation's own decision once its
// server is dead and a live process that escaped its group holds its pipes,
// and not otherwise.
func TestEscapedHolds(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := cmd.Process.Pid, os.Getpid()
	child := func(pid int, escaped bool) map[string]any {
		e := map[string]any{"kind": "child-started", "childPid": pid}
		if escaped {
			e["escaped"] = true
		}
		return e
	}
	cases := []struct {
		name          string
		server, child int
		escaped, want bool
	}{
		{"dead server, live escaped child", dead, live, true, true},
		{"live server, live escaped child", live, live, true, false},
		{"dead server, dead escaped child", dead, dead, true, false},
		{"dead server, live child in its group", dead, live, false, false},
	}
	for _, c := range cases {
		j := readFile(t, writeJournalPID(t, c.server, map[string]any{"kind": "launch"}, child(c.child, c.escaped)))
		if got := escapedHolds(j); got != c.want {
			t.Errorf("%s: escapedHolds = %v, want %v", c.name, got, c.want)
		}
	}
}
