package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
)

// asFixtureEnv makes the test binary run as the fixture MCP server.
const asFixtureEnv = "HOST_TEST_AS_FIXTURE"

// fixtureEnv is a runtime with fixture servers on a fake clock.
type fixtureEnv struct {
	t     *testing.T
	rt    *Runtime
	clock *clocktest.Fake
	dir   string
}

// fixtureServer returns a server config that runs the test binary as the
// fixture with the given knobs; its journal is journal(name).
func (e *fixtureEnv) fixtureServer(name string, knobs map[string]string, extra string) json.RawMessage {
	exe, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	env := map[string]string{
		asFixtureEnv:          "1",
		"GORACE":              "atexit_sleep_ms=0",
		"MCP_FIXTURE_JOURNAL": e.journal(name),
	}
	for k, v := range knobs {
		env[k] = v
	}
	cfg := map[string]any{"command": exe, "env": env}
	b, _ := json.Marshal(cfg)
	if extra != "" {
		b = append(b[:len(b)-1], []byte(","+extra+"}")...)
	}
	return b
}

func (e *fixtureEnv) journal(name string) string { return filepath.Join(e.dir, name+".journal") }

func (e *fixtureEnv) entries(name string) []journal.Entry {
	es, err := journal.Read(e.journal(name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		e.t.Fatal(err)
	}
	return es
}

func (e *fixtureEnv) count(name, kind string) int {
	n := 0
	for _, en := range e.entries(name) {
		if en.Kind == kind {
			n++
		}
	}
	return n
}

func newFixtureEnv(t *testing.T, servers func(e *fixtureEnv) map[string]json.RawMessage, opts Options) *fixtureEnv {
	t.Helper()
	e := &fixtureEnv{t: t, clock: clocktest.New(), dir: t.TempDir()}
	opts.Clock = e.clock
	opts.Discovery.Inline = servers(e)
	opts.Discovery.HomeDir = t.TempDir()
	if opts.Discovery.Env == nil {
		opts.Discovery.Env = func(string) (string, bool) { return "", false }
	}
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.rt = rt
	t.Cleanup(func() {
		e.close()
		checkDocumented(t, e.rt.Events().Events())
		if t.Failed() || os.Getenv("HOST_TEST_DUMP") != "" {
			for _, name := range []string{"fx"} {
				for _, en := range e.entries(name) {
					t.Logf("journal %s: %d %s pid=%d launch=%d %v", name, en.Seq, en.Kind, en.PID, en.Launch, en.Fields)
				}
			}
		}
	})
	return e
}

// close closes the runtime, advancing the fake clock through any stop grace.
func (e *fixtureEnv) close() {
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
			// Polling the fake clock here only speeds up teardown of servers
			// that ignore stdin EOF; no assertion depends on it.
			e.clock.AdvanceToNext()
		}
	}
}

// awaitJournal waits until the fixture journal of name has n entries of
// kind: the server's own evidence that it got that far. The fixture is a
// real process, so this polls its journal file on a short real ticker.
func (e *fixtureEnv) awaitJournal(name, kind string, n int) {
	e.t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for e.count(name, kind) < n {
		select {
		case <-tick.C:
		case <-deadline.C:
			e.t.Fatalf("journal %s: waited for %d %q entries, have %d\nevents:\n%s", name, n, kind, e.count(name, kind), eventsString(e.rt.Events().Events()))
		}
	}
}

func (e *fixtureEnv) await(m event.Matcher) event.Event {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Second)
	defer cancel()
	ev, err := e.rt.Events().Await(ctx, 0, m)
	if err != nil {
		e.t.Fatalf("%v\nevents:\n%s", err, eventsString(e.rt.Events().Events()))
	}
	return ev
}

func (e *fixtureEnv) awaitAfter(after uint64, m event.Matcher) event.Event {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Second)
	defer cancel()
	ev, err := e.rt.Events().Await(ctx, after, m)
	if err != nil {
		e.t.Fatalf("%v\nevents:\n%s", err, eventsString(e.rt.Events().Events()))
	}
	return ev
}

func eventsString(evs []event.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.String() + "\n")
	}
	return b.String()
}

type callOutcome struct {
	res bridge.Result
	err error
}

func (e *fixtureEnv) callAsync(sess *Session, tool string, args any) <-chan callOutcome {
	ch := make(chan callOutcome, 1)
	go func() {
		res, err := sess.CallTool(context.Background(), tool, args)
		ch <- callOutcome{res, err}
	}()
	return ch
}

func m(kind event.Kind, server string, attrs ...string) event.Matcher {
	mt := event.Matcher{Kind: kind, Server: server, Attrs: map[string]string{}}
	for i := 0; i+1 < len(attrs); i += 2 {
		mt.Attrs[attrs[i]] = attrs[i+1]
	}
	return mt
}

func TestFixtureEchoAndCleanClose(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", nil, "")}
	}, Options{})
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "hello"})
	if err != nil || !strings.Contains(res.Text, "hello") {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	e.close()
	if n := e.count("fx", "launch"); n != 1 {
		t.Fatalf("launches = %d", n)
	}
	if n := e.count("fx", "exit"); n != 1 {
		t.Fatalf("fixture did not journal its exit")
	}
}

// TestFixtureSlowCallHealthyProbe is seed scenario 072 (probe success): a
// hanging tool with a healthy ping times out and nothing restarts. The seed's
// probe starts with ping, which only the handshake era has: the fixture is
// legacy-only (the modern probe: scenarios 072c and 153).
func TestFixtureSlowCallHealthyProbe(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{
			"MCP_FIXTURE_ERA": "legacy", "MCP_FIXTURE_MODE": "restart", "MCP_FIXTURE_SKIP_EXIT": "1", "MCP_FIXTURE_HANG_MS": "600000",
		}, `"toolTimeout": 1000`)}
	}, Options{})
	sess, _ := e.rt.OpenSession(t.Context(), SessionOptions{})
	out := e.callAsync(sess, "mcp_fx_test", map[string]any{"text": "x"})
	e.awaitJournal("fx", "hang-start", 1)
	e.clock.Advance(time.Second)
	o := <-out
	if !errors.Is(o.err, ErrToolTimeout) || o.res.Code != CodeToolTimeout {
		t.Fatalf("call = %+v, %v", o.res, o.err)
	}
	e.await(m(event.ProbeFinished, "fx", "healthy", "true", "method", "ping"))
	if n := e.count("fx", "ping"); n != 1 {
		t.Fatalf("fixture saw %d pings, want 1", n)
	}
	if n := e.rt.Events().Count(m(event.RestartScheduled, "fx")); n != 0 {
		t.Fatalf("a healthy probe restarted the server")
	}
	if n := e.count("fx", "launch"); n != 1 {
		t.Fatalf("launches = %d, want 1", n)
	}
}

// TestFixtureWedgedServerRestartRecovers is seed scenario 071: the event
// loop is blocked, the tool times out, ping and tools/list fail, the server is
// restarted and the retried call answers recovered:. Legacy-only fixture, for
// the seed's ping (the modern era: scenario 071 in a modern run).
func TestFixtureWedgedServerRestartRecovers(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{
			"MCP_FIXTURE_ERA": "legacy", "MCP_FIXTURE_MODE": "restart", "MCP_FIXTURE_BLOCK_EVENT_LOOP": "1", "MCP_FIXTURE_HANG_MS": "600000",
			"MCP_FIXTURE_STATE_FILE": filepath.Join(e.dir, "state.json"),
		}, `"toolTimeout": 1000`)}
	}, Options{})
	sess, _ := e.rt.OpenSession(t.Context(), SessionOptions{})
	out := e.callAsync(sess, "mcp_fx_test", map[string]any{"text": "x"})
	e.awaitJournal("fx", "hang-start", 1)
	e.clock.Advance(time.Second)
	e.await(m(event.ProbeStarted, "fx", "method", "ping"))
	e.clock.Advance(3 * time.Second)
	e.await(m(event.ProbeStarted, "fx", "method", "tools/list"))
	e.clock.Advance(3 * time.Second)
	// The old process is stopped first: the wedged server ignores EOF and
	// SIGTERM ends it; then the restart is scheduled at delay 0.
	e.await(m(event.ProcessSignaled, "fx", "step", "stdin-closed"))
	e.clock.Advance(2 * time.Second)
	e.await(m(event.RestartScheduled, "fx", "reason", "probe-failure", "delay_ms", "0"))
	var o callOutcome
	select {
	case o = <-out:
	case <-time.After(15 * time.Second):
		t.Fatalf("the call did not finish\n%s", eventsString(e.rt.Events().Events()))
	}
	if o.err != nil || !strings.Contains(o.res.Text, "recovered:x") {
		t.Fatalf("call = %+v, %v\n%s", o.res, o.err, eventsString(e.rt.Events().Events()))
	}
	e.await(m(event.RestartSucceeded, "fx", "reason", "probe-failure"))
	if n := e.count("fx", "launch"); n != 2 {
		t.Fatalf("launches = %d, want 2", n)
	}
}

// TestFixtureIdleExitRestarts is seed scenario 074: the server exits on its
// own; the call in flight fails at once; the restart is immediate and the
// next call answers recovered:.
func TestFixtureIdleExitRestarts(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{
			"MCP_FIXTURE_MODE": "restart", "MCP_FIXTURE_EXIT_DELAY_MS": "50", "MCP_FIXTURE_HANG_MS": "600000",
			"MCP_FIXTURE_STATE_FILE": filepath.Join(e.dir, "state.json"),
		}, "")}
	}, Options{})
	sess, _ := e.rt.OpenSession(t.Context(), SessionOptions{})
	o := <-e.callAsync(sess, "mcp_fx_test", map[string]any{"text": "x"})
	if !errors.Is(o.err, ErrConnectionLost) {
		t.Fatalf("in-flight call = %+v, %v", o.res, o.err)
	}
	if e.clock.Elapsed() != 0 {
		t.Fatalf("virtual time moved: %v", e.clock.Elapsed())
	}
	e.await(m(event.TransportClosed, "fx"))
	e.await(m(event.RestartSucceeded, "fx", "reason", "transport-exit"))
	res, err := sess.CallTool(t.Context(), "mcp_fx_test", map[string]any{"text": "y"})
	if err != nil || !strings.Contains(res.Text, "recovered:y") {
		t.Fatalf("call after restart = %+v, %v", res, err)
	}
}

// TestFixtureInitFailuresRetry: the first two launches fail; the restart loop
// retries on the schedule and the third launch connects.
func TestFixtureInitFailuresRetry(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{
			"MCP_FIXTURE_FAIL_INIT_ATTEMPTS": "2", "MCP_FIXTURE_STATE_FILE": filepath.Join(e.dir, "state.json"),
			"MCP_FIXTURE_STDERR": "boot failed: missing token",
		}, "")}
	}, Options{StartupGate: -1})
	sess, _ := e.rt.OpenSession(t.Context(), SessionOptions{})
	f := e.await(m(event.ServerFailed, "fx"))
	if s, _ := f.Get("stderr"); !strings.Contains(s, "boot failed: missing token") {
		t.Fatalf("failure does not quote stderr: %v", f)
	}
	e.await(m(event.RestartScheduled, "fx", "attempt", "2", "delay_ms", "1000"))
	if st := e.rt.Status(); !strings.Contains(st[0].Error, "boot failed") {
		t.Fatalf("status error lacks the stderr tail: %+v", st[0])
	}
	e.clock.Advance(time.Second)
	e.await(m(event.RestartSucceeded, "fx", "attempt", "2"))
	if n := e.count("fx", "launch"); n != 3 {
		t.Fatalf("launches = %d, want 3", n)
	}
	if n := len(sess.Tools()); n == 0 {
		t.Fatal("no tools after the late connect")
	}
}

// TestFixtureCrashLoopBreaker: a server that exits right after every
// handshake is relaunched on the growing schedule, never in a tight loop.
func TestFixtureCrashLoopBreaker(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{"MCP_FIXTURE_EXIT_AFTER": "tools-list"}, "")}
	}, Options{StartupGate: -1})
	e.rt.OpenSession(t.Context(), SessionOptions{})
	for i, d := range []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second} {
		ev := e.await(m(event.RestartScheduled, "fx", "attempt", itoa(i+1)))
		if got := ev.Attrs["delay_ms"].(int64); got != d.Milliseconds() {
			t.Fatalf("attempt %d delay %dms, want %v", i+1, got, d)
		}
		e.clock.Advance(d)
	}
	if n := e.count("fx", "launch"); n > 5 {
		t.Fatalf("%d launches for 4 scheduled restarts", n)
	}
}

// TestFixtureKillEscalation: a server that ignores stdin EOF and SIGTERM is
// killed with SIGKILL after the grace steps; no process is left.
func TestFixtureKillEscalation(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{
			"MCP_FIXTURE_IGNORE_SIGTERM": "1", "MCP_FIXTURE_IGNORE_STDIN_EOF": "1", "MCP_FIXTURE_SPAWN_CHILD": "1",
		}, "")}
	}, Options{})
	if _, err := e.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
		t.Fatal(err)
	}
	var child int
	for _, en := range e.entries("fx") {
		if en.Kind == "child-started" {
			child = en.Int("childPid")
		}
	}
	done := make(chan struct{})
	go func() { e.rt.Close(context.Background()); close(done) }()
	e.await(m(event.ProcessSignaled, "fx", "step", "stdin-closed"))
	e.clock.Advance(2 * time.Second)
	e.await(m(event.ProcessSignaled, "fx", "step", "SIGTERM"))
	e.awaitJournal("fx", "signal", 1) // the fixture saw SIGTERM and ignored it
	e.clock.Advance(2 * time.Second)
	e.await(m(event.ProcessSignaled, "fx", "step", "SIGKILL"))
	<-done
	sig := 0
	for _, en := range e.entries("fx") {
		if en.Kind == "signal" && en.Str("signal") == "SIGTERM" && en.Bool("ignored") {
			sig++
		}
	}
	if sig == 0 {
		t.Fatal("the fixture never saw the SIGTERM it ignored")
	}
	if child == 0 {
		t.Fatal("no child pid in the journal")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := proctest.WaitGone(ctx, child); err != nil {
		t.Fatalf("grandchild survived Close: %v", err)
	}
}

// TestFixtureConcurrentAcquiresOneLaunch: 100 sessions opening at once start
// exactly one process, counted by the fixture itself.
func TestFixtureConcurrentAcquiresOneLaunch(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{"MCP_FIXTURE_INIT_DELAY_MS": "100"}, "")}
	}, Options{})
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if _, err := e.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := e.count("fx", "launch"); n != 1 {
		t.Fatalf("launches = %d, want 1", n)
	}
}

// TestFixtureInFlightCallFailsFastOnKill: SIGKILL of the server fails a call
// in flight at once, not at its timeout.
func TestFixtureInFlightCallFailsFastOnKill(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", nil, "")}
	}, Options{})
	sess, _ := e.rt.OpenSession(t.Context(), SessionOptions{})
	out := e.callAsync(sess, "mcp_fx_sleep", map[string]any{"ms": 600000})
	e.awaitJournal("fx", "call-start", 1)
	if err := proctest.Kill(e.rt.Status()[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	o := <-out
	if !errors.Is(o.err, ErrConnectionLost) || !strings.HasPrefix(strings.TrimSpace(strings.SplitN(o.res.Text, "\n", 2)[1]), "MCP error:") {
		t.Fatalf("call = %+v, %v", o.res, o.err)
	}
	if e.clock.Elapsed() != 0 {
		t.Fatal("virtual time moved")
	}
}

// TestFixtureStderrLimit: a server's stderrLimit bounds the stderr tail that
// server.failed and the status quote, while another server keeps the
// runtime's default.
func TestFixtureStderrLimit(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		// 100,000 bytes on stderr, then a tools/list go-sdk refuses.
		knobs := map[string]string{"MCP_FIXTURE_STDERR_BYTES": "100000", "MCP_FIXTURE_SCHEMA_DEPTH": "1000"}
		return map[string]json.RawMessage{
			"small":   e.fixtureServer("small", knobs, `"stderrLimit": 300, "restart": "never"`),
			"default": e.fixtureServer("default", knobs, `"restart": "never"`),
		}
	}, Options{StartupGate: -1})
	if _, err := e.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, limit := range map[string]int{"small": 300, "default": proc.DefaultStderrLimit} {
		f := e.await(m(event.ServerFailed, name))
		tail, _ := f.Get("stderr")
		if len(tail) > limit || len(tail) < limit-100 {
			t.Errorf("%s: stderr tail of %d bytes (limit %d): %q", name, len(tail), limit, tail)
		}
	}
}

// TestFixtureMaxMessageBytes: a server's maxMessageBytes bounds what that
// server may write on stdout, while another server keeps the runtime's
// default.
func TestFixtureMaxMessageBytes(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{
			"small":   e.fixtureServer("small", nil, `"maxMessageBytes": 8192, "restart": "never"`),
			"default": e.fixtureServer("default", nil, `"restart": "never"`),
		}
	}, Options{})
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"bytes": 20000}
	res, err := sess.CallTool(t.Context(), "mcp_default_big", args)
	if err != nil || res.IsError {
		t.Fatalf("20 kB answer under the default limit = %+v, %v", res, err)
	}
	res, err = sess.CallTool(t.Context(), "mcp_small_big", args)
	if !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("20 kB answer over the server's 8 KiB limit = %+v, %v; want the connection lost", res, err)
	}
	// The error says why (the stdout guard's cause, not go-sdk's EOF).
	if !strings.Contains(err.Error(), "exceeds the limit of 8192 bytes") {
		t.Errorf("error %q does not say the message exceeded the server's limit", err)
	}
	e.await(event.Matcher{Kind: event.TransportOversized, Server: "small", Attrs: map[string]string{"limit": "8192", "json": "true"}})
	if n := e.count("default", "launch"); n != 1 {
		t.Errorf("the default server was launched %d times", n)
	}
}

// TestFixtureCrashStatusQuotesLastStderr: the status of a server that died
// after connecting quotes the last line it wrote to stderr, which can still
// be in the pipe when its stdout ends; process.exited comes after it is read.
func TestFixtureCrashStatusQuotesLastStderr(t *testing.T) {
	const last = "fatal: lost the database"
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{"MCP_FIXTURE_STDERR_AT_EXIT": last}, `"restart": "never"`)}
	}, Options{StartupGate: -1})
	sess, _ := e.rt.OpenSession(t.Context(), SessionOptions{})
	e.await(m(event.ServerConnected, "fx"))
	if _, err := sess.CallTool(t.Context(), "mcp_fx_crash", nil); err == nil {
		t.Fatal("the crash call succeeded")
	}
	e.await(m(event.ProcessExited, "fx", "planned", "false"))
	st := e.rt.Status()[0]
	if st.State != StateFailed || !strings.Contains(st.Stderr, last) {
		t.Fatalf("status after the crash: state %s, stderr %q", st.State, st.Stderr)
	}
}

// TestStdioWatchStartsOnEnd: a connected stdio server costs no goroutine
// of the runtime's (the connection's watch starts on the first sign of the
// end), and an end it did not ask for is still handled: a crash in a call
// ends the connection, the process is reaped and the server restarted.
func TestStdioWatchStartsOnEnd(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", nil, "")}
	}, Options{StartupGate: -1})
	sess, _ := e.rt.OpenSession(t.Context(), SessionOptions{})
	e.await(m(event.ServerConnected, "fx"))
	if n := goroutinesIn(t, "host.(*connection).watch"); n != 0 {
		t.Fatalf("%d connection watches run for a live stdio server, want 0", n)
	}
	if _, err := sess.CallTool(t.Context(), "mcp_fx_crash", nil); err == nil {
		t.Fatal("the crash call succeeded")
	}
	e.await(m(event.ProcessExited, "fx", "planned", "false"))
	e.await(m(event.RestartScheduled, "fx"))
}

// goroutinesIn counts the goroutines with fn in their stacks, once every
// goroutine the runtime started (goRun) runs its function.
func goroutinesIn(t *testing.T, fn string) int {
	t.Helper()
	var b bytes.Buffer
	for {
		b.Reset()
		if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "[runnable]:\n"+"github.com/mcplife/mcplife/runtime/host.(*Runtime).goRun.func1()") {
			break
		}
		runtime.Gosched() // a goroutine that has not started yet shows no frame of its function
	}
	n := 0
	for stack := range strings.SplitSeq(b.String(), "\n\n") {
		if strings.Contains(stack, fn+"(") {
			n++
		}
	}
	return n
}

// TestProbeStartedOnceItsBoundIsArmed: probe.started is emitted once the
// probe's timeout is armed on the clock, so a harness that advances the
// clock as soon as it hears of the probe advances the probe's bound too.
// Emitted before, the bound could be armed after such an advance and wait
// for one more (SHARED-RESTART-005 failed so once under load). The
// logger sees each event in the goroutine that emits it, at that moment.
func TestProbeStartedOnceItsBoundIsArmed(t *testing.T) {
	seen := &pendingAtProbe{pending: make(chan []time.Duration, 2)}
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		seen.clock = e.clock
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{
			"MCP_FIXTURE_ERA": "legacy", "MCP_FIXTURE_BLOCK_EVENT_LOOP": "1", "MCP_FIXTURE_HANG_MS": "600000",
		}, `"toolTimeout": 1000`)}
	}, Options{Logger: slog.New(seen), ProbeTimeout: 3 * time.Second})
	sess, _ := e.rt.OpenSession(t.Context(), SessionOptions{})
	e.callAsync(sess, "mcp_fx_test", map[string]any{"text": "x"})
	e.awaitJournal("fx", "hang-start", 1)
	e.clock.Advance(time.Second)
	for _, method := range []string{"ping", "tools/list"} {
		e.await(m(event.ProbeStarted, "fx", "method", method))
		var pending []time.Duration
		select {
		case pending = <-seen.pending:
		case <-t.Context().Done():
			t.Fatal("the logger never saw probe.started")
		}
		if !slices.Contains(pending, 3*time.Second) {
			t.Fatalf("%s probe started with timers %v pending, want its 3s bound among them", method, pending)
		}
		e.clock.Advance(3 * time.Second)
	}
	e.await(m(event.ProbeFinished, "fx", "method", "tools/list", "healthy", "false"))
}

// pendingAtProbe is a slog handler that sends the clock's pending timers
// when probe.started is logged.
type pendingAtProbe struct {
	clock   *clocktest.Fake
	pending chan []time.Duration
}

func (h *pendingAtProbe) Enabled(context.Context, slog.Level) bool { return true }
func (h *pendingAtProbe) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *pendingAtProbe) WithGroup(string) slog.Handler            { return h }
func (h *pendingAtProbe) Handle(_ context.Context, r slog.Record) error {
	if r.Message == string(event.ProbeStarted) {
		select {
		case h.pending <- h.clock.Pending():
		default: // a later probe: the test looks at the first two
		}
	}
	return nil
}
