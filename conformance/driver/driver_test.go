package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// testTimeout bounds every test in real time; nothing waits on it unless
// something is broken.
const testTimeout = 60 * time.Second

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func executable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// testServer returns the inline config of a server running this test
// binary as the test MCP server.
func testServer(t *testing.T, env map[string]string) json.RawMessage {
	t.Helper()
	e := map[string]string{envServer: "1"}
	for k, v := range env {
		e[k] = v
	}
	b, err := json.Marshal(map[string]any{"command": executable(t), "env": e})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkExchange validates every line exchanged with c against its schema
// and reports protocol problems.
func checkExchange(t *testing.T, c *Client) {
	t.Helper()
	defer func() {
		if t.Failed() {
			for _, l := range c.Transcript() {
				t.Logf("%-8s %s", l.Dir, l.Line)
			}
		}
	}()
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	lines := c.Transcript()
	for _, err := range v.ValidateTranscript(lines) {
		t.Errorf("schema: %v", err)
	}
	for _, err := range c.Problems() {
		t.Errorf("protocol: %v", err)
	}
	if len(lines) == 0 {
		t.Error("empty transcript")
	}
}

// inProcess starts the reference driver in this process; cleanup closes it
// and validates the exchange.
func inProcess(t *testing.T) *Client {
	t.Helper()
	c, err := StartInProcess(context.Background(), ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		checkExchange(t, c)
	})
	return c
}

// started says hello and starts a runtime with servers.
func started(t *testing.T, c *Client, clockMode string, servers map[string]json.RawMessage, opts *StartOptions) {
	t.Helper()
	ctx := testCtx(t)
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	err := c.Start(ctx, StartParams{
		Clock:     clockMode,
		Workspace: t.TempDir(),
		Home:      t.TempDir(),
		Inline:    servers,
		Env:       map[string]string{},
		Options:   opts,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

func wantCode(t *testing.T, err error, code ErrorCode) {
	t.Helper()
	var re *RemoteError
	if !errors.As(err, &re) {
		t.Fatalf("got error %v, want a remote error %q", err, code)
	}
	if re.Code != string(code) {
		t.Fatalf("got error code %q (%s), want %q", re.Code, re.Message, code)
	}
}

// toolNamed returns the exposed name of the raw MCP tool raw.
func toolNamed(t *testing.T, tools []Tool, raw string) string {
	t.Helper()
	for _, tl := range tools {
		if tl.Tool == raw {
			return tl.Name
		}
	}
	t.Fatalf("no tool %q in %+v", raw, tools)
	return ""
}

func statusOf(t *testing.T, c *Client, name string) ServerStatus {
	t.Helper()
	list, err := c.Status(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no server %q in status %+v", name, list)
	return ServerStatus{}
}

func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestHello(t *testing.T) {
	c := inProcess(t)
	h, err := c.Hello(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if h.Protocol != ProtocolVersion || h.Implementation.Name != "mcplife" || !slices.Equal(h.Eras, []Era{EraLegacy, EraModern}) {
		t.Errorf("hello = %+v", h)
	}
	for _, ci := range Capabilities() {
		if !h.Has(ci.Name) {
			t.Errorf("reference driver does not announce capability %s", ci.Name)
		}
	}
	for _, p := range Profiles() {
		if !h.Claims(p.Name) {
			t.Errorf("reference driver does not claim profile %s", p.Name)
		}
	}
	if c.HelloResult() == nil {
		t.Error("HelloResult not kept")
	}
}

// TestHelloVersion1 checks both directions of the fallback to version 1: a
// driver of version 1 is accepted and taken to speak the legacy era only,
// and the reference driver answers a harness that asks for version 1 with
// version 1, without eras.
func TestHelloVersion1(t *testing.T) {
	ctx := testCtx(t)
	c, err := StartCommand(ctx, []string{executable(t)}, append(os.Environ(), envFake+"=v1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatalf("a version-1 hello was rejected: %v", err)
	}
	if h.Protocol != ProtocolVersion1 || !slices.Equal(h.SpokenEras(), []Era{EraLegacy}) || h.Speaks(EraModern) {
		t.Errorf("version-1 hello = %+v, spoken eras %v; want legacy only", h, h.SpokenEras())
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}

	ref := inProcess(t)
	var got HelloResult
	if err := ref.Request(ctx, MethodHello, HelloParams{Protocol: ProtocolVersion1}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Protocol != ProtocolVersion1 || got.Eras != nil {
		t.Errorf("reference hello to a version-1 harness = %+v; want version 1 without eras", got)
	}
	if err := got.validate(); err != nil {
		t.Errorf("the reference's version-1 hello does not validate: %v", err)
	}
	h2, err := ref.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h2.SpokenEras(), []Era{EraLegacy, EraModern}) {
		t.Errorf("reference eras = %v, want both", h2.SpokenEras())
	}
	// The conventions profile is of version 4: the reference claims it
	// then, and drops it for a harness of an earlier version, whose
	// core, registration and security hold its requirements.
	if !h2.Claims(ProfileConventions) || !h2.Knows(ProfileConventions) {
		t.Errorf("reference hello %s claims %v; want conventions among them", h2.Protocol, h2.Profiles)
	}
	for _, v := range []string{ProtocolVersion3, ProtocolVersion2, ProtocolVersion1} {
		var old HelloResult
		if err := ref.Request(ctx, MethodHello, HelloParams{Protocol: v}, &old); err != nil {
			t.Fatal(err)
		}
		if old.Protocol != v || old.Claims(ProfileConventions) || old.Knows(ProfileConventions) || !old.Claims(ProfileCore) {
			t.Errorf("reference hello to a %s harness = %s claiming %v; want %s, core and no conventions", v, old.Protocol, old.Profiles, v)
		}
		if err := old.validate(); err != nil {
			t.Errorf("the reference's %s hello does not validate: %v", v, err)
		}
	}
}

func TestHelloRejectsBrokenDrivers(t *testing.T) {
	for mode, want := range map[string]string{
		"wrong-version":              `speaks "mcplife-driver/0", this harness speaks "mcplife-driver/4" (and accepts ["mcplife-driver/3" "mcplife-driver/2" "mcplife-driver/1"])`,
		"no-eras":                    `no eras (protocol mcplife-driver/4 requires`,
		"v3-with-conventions":        `profile "conventions" is of mcplife-driver/4, not of mcplife-driver/3`,
		"unknown-era":                `unknown era "stateless"`,
		"v1-with-eras":               `eras is a field of mcplife-driver/2 and later, not of mcplife-driver/1`,
		"v2-with-pending-timers":     `capability "pending-timers" is of mcplife-driver/3, not of mcplife-driver/2`,
		"unknown-capability":         `unknown capability "time-travel"`,
		"profile-without-capability": `profile "startup-gate" requires capability "virtual-clock"`,
	} {
		t.Run(mode, func(t *testing.T) {
			ctx := testCtx(t)
			c, err := StartCommand(ctx, []string{executable(t)}, append(os.Environ(), envFake+"="+mode), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Hello(ctx)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Hello error = %v, want it to contain %q", err, want)
			}
			var ve *VersionError
			if (mode == "wrong-version") != errors.As(err, &ve) {
				t.Errorf("Hello error %T: VersionError only for a version mismatch", err)
			}
			if c.HelloResult() != nil {
				t.Error("a rejected hello was kept")
			}
			if err := c.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

func TestCallLifecycle(t *testing.T) {
	c := inProcess(t)
	ctx := testCtx(t)
	started(t, c, ClockVirtual, map[string]json.RawMessage{"t": testServer(t, nil)}, nil)

	rep, err := c.OpenSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Ready, []string{"t"}) || len(rep.Failed)+len(rep.Late)+len(rep.Deferred) != 0 || rep.ElapsedMs != 0 {
		t.Errorf("report = %+v", rep)
	}
	tools, err := c.Tools(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 {
		t.Fatalf("tools = %+v", tools)
	}
	for _, tl := range tools {
		if tl.Server != "t" || tl.Deferred || !bytes.HasPrefix(tl.InputSchema, []byte("{")) {
			t.Errorf("tool %+v", tl)
		}
	}
	echo := toolNamed(t, tools, "echo")

	err = c.CallTool(ctx, ToolCallParams{Session: "s1", CallID: "c1", Tool: echo, Arguments: json.RawMessage(`{"text":"hi"}`)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.AwaitCall(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || res.Result.IsError || !strings.Contains(res.Result.Text, "echo: hi") || res.Result.Server != "t" || res.Result.Tool != echo {
		t.Errorf("call_result = %+v", res)
	}
	// Every event of the call was written before its call_result.
	if n := c.Count(event.Matcher{Kind: event.ToolCallFinished, Session: "s1", Attrs: map[string]string{"outcome": "ok"}}); n != 1 {
		t.Errorf("%d tool.call_finished events before the call_result, want 1", n)
	}

	st := statusOf(t, c, "t")
	if st.State != "connected" || st.PID <= 0 || st.ConnectedAtMs == nil || st.Refs != 1 || st.Tools != 2 {
		t.Errorf("status = %+v", st)
	}
	started, err := c.Await(ctx, 0, event.Matcher{Kind: event.ProcessStarted, Server: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if pid, _ := started.Get("pid"); pid != itoa(st.PID) {
		t.Errorf("process.started pid %s, status pid %d", pid, st.PID)
	}

	if err := c.CloseSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if c.Count(event.Matcher{Kind: event.SessionClosed, Session: "s1"}) != 1 {
		t.Error("no session.closed before the session.close response")
	}
	_, err = c.Tools(ctx, "s1")
	wantCode(t, err, CodeUnknownSession)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestCancel(t *testing.T) {
	c := inProcess(t)
	ctx := testCtx(t)
	started(t, c, ClockVirtual, map[string]json.RawMessage{"t": testServer(t, nil)}, nil)
	if _, err := c.OpenSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	tools, err := c.Tools(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	after := c.Last()
	if err := c.CallTool(ctx, ToolCallParams{Session: "s1", CallID: "c1", Tool: toolNamed(t, tools, "slow")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Await(ctx, after, event.Matcher{Kind: event.ToolCallStarted, Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.CallResult("c1"); ok {
		t.Fatal("call_result before the call could finish")
	}
	running, err := c.Cancel(ctx, "c1")
	if err != nil || !running {
		t.Fatalf("Cancel = %v, %v; want running", running, err)
	}
	res, err := c.AwaitCall(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Code != string(OutcomeAborted) || !res.Result.Aborted || !res.Result.IsError || res.Result.Text != "" {
		t.Errorf("call_result = %+v (error %+v)", res, res.Error)
	}
	if c.Count(event.Matcher{Kind: event.ToolCallFinished, Attrs: map[string]string{"outcome": "aborted"}}) != 1 {
		t.Error("no aborted tool.call_finished")
	}
	running, err = c.Cancel(ctx, "c1")
	if err != nil || running {
		t.Errorf("second Cancel = %v, %v; want not running", running, err)
	}
	_, err = c.Cancel(ctx, "nope")
	wantCode(t, err, CodeUnknownID)
	// The server survives a cancelled call.
	if st := statusOf(t, c, "t"); st.State != "connected" {
		t.Errorf("status after cancel = %+v", st)
	}
}

func TestToolTimeoutOnVirtualClock(t *testing.T) {
	c := inProcess(t)
	ctx := testCtx(t)
	started(t, c, ClockVirtual, map[string]json.RawMessage{"t": testServer(t, nil)}, nil)
	if _, err := c.OpenSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	tools, err := c.Tools(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	after := c.Last()
	err = c.CallTool(ctx, ToolCallParams{Session: "s1", CallID: "t1", Tool: toolNamed(t, tools, "slow"), TimeoutMs: ptr[int64](1000)})
	if err != nil {
		t.Fatal(err)
	}
	// tool.call_started announces the armed watchdog.
	if _, err := c.Await(ctx, after, event.Matcher{Kind: event.ToolCallStarted, Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	pending, err := c.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pending, time.Second) {
		t.Fatalf("pending timers %v lack the 1s watchdog", pending)
	}
	now, err := c.Advance(ctx, 999*time.Millisecond)
	if err != nil || now != 999*time.Millisecond {
		t.Fatalf("Advance = %v, %v", now, err)
	}
	pending, err = c.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pending, time.Millisecond) {
		t.Fatalf("after 999ms the watchdog should have 1ms left; pending %v", pending)
	}
	if _, ok := c.CallResult("t1"); ok || c.Count(event.Matcher{Kind: event.ToolTimeout}) != 0 {
		t.Fatal("the timeout fired early")
	}
	if now, err = c.Advance(ctx, time.Millisecond); err != nil || now != time.Second {
		t.Fatalf("Advance = %v, %v", now, err)
	}
	res, err := c.AwaitCall(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Code != string(OutcomeToolTimeout) || res.Result.Code != string(OutcomeToolTimeout) || !res.Result.IsError {
		t.Errorf("call_result = %+v (error %+v)", res, res.Error)
	}
	to, err := c.Await(ctx, after, event.Matcher{Kind: event.ToolTimeout, Server: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if to.At != time.Second {
		t.Errorf("tool.timeout at %v, want exactly 1s", to.At)
	}
	if _, err := c.Await(ctx, after, event.Matcher{Kind: event.ProbeFinished, Server: "t", Attrs: map[string]string{"healthy": "true"}}); err != nil {
		t.Error(err)
	}
	if now, err := c.Now(ctx); err != nil || now != time.Second {
		t.Errorf("Now = %v, %v", now, err)
	}
}

func TestAdvanceWhileSessionOpens(t *testing.T) {
	c := inProcess(t)
	ctx := testCtx(t)
	started(t, c, ClockVirtual, map[string]json.RawMessage{
		"fast": testServer(t, nil),
		"hang": testServer(t, map[string]string{envServerHang: "1"}),
	}, &StartOptions{StartupGateMs: ptr[int64](250), LateRegistration: ptr(true)})

	after := c.Last()
	open, err := c.Send(ctx, MethodSessionOpen, SessionParams{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	// gate.opened announces the armed gate timer.
	if _, err := c.Await(ctx, after, event.Matcher{Kind: event.GateOpened, Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	// tools.registered follows the installed connection.
	if _, err := c.Await(ctx, after, event.Matcher{Kind: event.ToolsRegistered, Server: "fast"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Advance(ctx, 250*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var res SessionOpenResult
	if err := open.Wait(ctx, &res); err != nil {
		t.Fatal(err)
	}
	rep := res.Report
	if !slices.Equal(rep.Ready, []string{"fast"}) || !slices.Equal(rep.Late, []string{"hang"}) || rep.ElapsedMs != 250 {
		t.Errorf("report = %+v", rep)
	}
	if st := statusOf(t, c, "hang"); st.State != "connecting" {
		t.Errorf("hang status = %+v", st)
	}
}

func TestStatusDisconnectReload(t *testing.T) {
	c := inProcess(t)
	ctx := testCtx(t)
	started(t, c, ClockVirtual, map[string]json.RawMessage{"t": testServer(t, nil)}, nil)
	if _, err := c.OpenSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	tools, err := c.Tools(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	echo := toolNamed(t, tools, "echo")
	pid1 := statusOf(t, c, "t").PID

	if err := c.Disconnect(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if c.Count(event.Matcher{Kind: event.ServerDisconnected, Server: "t"}) != 1 {
		t.Error("no server.disconnected before the response")
	}
	if st := statusOf(t, c, "t"); st.State != "disconnected" || st.PID != 0 {
		t.Errorf("status after disconnect = %+v", st)
	}
	if !processGone(pid1) {
		t.Errorf("process %d still exists after server.disconnect", pid1)
	}
	if tools, err := c.Tools(ctx, "s1"); err != nil || len(tools) != 0 {
		t.Errorf("tools after disconnect = %+v, %v", tools, err)
	}
	if err := c.CallTool(ctx, ToolCallParams{Session: "s1", CallID: "c1", Tool: echo}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.AwaitCall(ctx, "c1"); err != nil || res.Error == nil || res.Error.Code != string(OutcomeUnknownTool) {
		t.Errorf("call after disconnect = %+v, %v", res, err)
	}
	wantCode(t, c.Disconnect(ctx, "nope"), CodeUnknownServer)

	after := c.Last()
	if err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Await(ctx, after, event.Matcher{Kind: event.ReloadFinished}); err != nil {
		t.Fatal(err)
	}
	st := statusOf(t, c, "t")
	if st.State != "connected" || st.PID <= 0 || st.PID == pid1 {
		t.Errorf("status after reload = %+v (old pid %d)", st, pid1)
	}
	if err := c.CallTool(ctx, ToolCallParams{Session: "s1", CallID: "c2", Tool: echo, Arguments: json.RawMessage(`{"text":"back"}`)}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.AwaitCall(ctx, "c2"); err != nil || res.Error != nil || !strings.Contains(res.Result.Text, "echo: back") {
		t.Errorf("call after reload = %+v, %v", res, err)
	}
}

func TestAcquire(t *testing.T) {
	c := inProcess(t)
	ctx := testCtx(t)
	started(t, c, ClockVirtual, map[string]json.RawMessage{
		"t":    testServer(t, nil),
		"hang": testServer(t, map[string]string{envServerHang: "1"}),
	}, &StartOptions{AcquireTimeoutMs: ptr[int64](1000)})
	if err := c.Acquire(ctx, "a1", "t"); err != nil {
		t.Fatal(err)
	}
	res, err := c.AwaitAcquire(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Error != nil {
		t.Errorf("acquire_result = %+v", res)
	}
	if st := statusOf(t, c, "t"); st.State != "connected" || st.Refs != 1 {
		t.Errorf("status after acquire = %+v", st)
	}
	wantCode(t, c.Acquire(ctx, "a1", "t"), CodeDuplicateID)
	wantCode(t, c.Acquire(ctx, "a2", "nope"), CodeUnknownServer)
	if err := c.Release(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if c.Count(event.Matcher{Kind: event.PoolReleased, Server: "t", Attrs: map[string]string{"refs": "0"}}) != 1 {
		t.Error("no pool.released refs=0 after release")
	}
	if err := c.Release(ctx, "a1"); err != nil {
		t.Errorf("second release: %v", err)
	}
	wantCode(t, c.Release(ctx, "zz"), CodeUnknownID)

	// A cold server that never answers: the acquire timeout runs on the
	// virtual clock, armed before pool.acquired.
	after := c.Last()
	if err := c.Acquire(ctx, "a3", "hang"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Await(ctx, after, event.Matcher{Kind: event.PoolAcquired, Server: "hang"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.AcquireResult("a3"); ok {
		t.Fatal("acquire of a hung server finished before the timeout")
	}
	if _, err := c.Advance(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	res, err = c.AwaitAcquire(ctx, "a3")
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Error == nil || res.Error.Code != string(OutcomeUnavailable) {
		t.Errorf("acquire of a hung server = %+v (error %+v)", res, res.Error)
	}

	// Releasing a pending acquire cancels it.
	if err := c.Acquire(ctx, "a4", "hang"); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, "a4"); err != nil {
		t.Fatal(err)
	}
	res, err = c.AwaitAcquire(ctx, "a4")
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Error == nil || res.Error.Code != string(OutcomeAborted) {
		t.Errorf("released pending acquire = %+v (error %+v)", res, res.Error)
	}
}

func TestProtocolErrors(t *testing.T) {
	c := inProcess(t)
	ctx := testCtx(t)

	_, err := c.OpenSession(ctx, "s1")
	wantCode(t, err, CodeNotStarted)
	_, err = c.Now(ctx)
	wantCode(t, err, CodeNotStarted)
	wantCode(t, c.Request(ctx, "no.such.method", nil, nil), CodeUnknownMethod)

	// Malformed lines get bad_request and the driver keeps going.
	if err := c.SendLine(ctx, []byte("this is not json")); err != nil {
		t.Fatal(err)
	}
	r, err := c.AwaitUnmatched(ctx, func(r Response) bool { return r.ID == nil })
	if err != nil {
		t.Fatal(err)
	}
	if r.Error == nil || r.Error.Code != string(CodeBadRequest) {
		t.Errorf("response to a malformed line = %+v", r)
	}
	for id, line := range map[int64]string{
		9001: `{"id":9001,"method":"hello","params":[]}`,
		9002: `{"id":9002,"method":"hello","params":{"protocol":"x","extra":1}}`,
		9003: `{"id":9003,"params":{}}`,
		9004: `{"id":9004,"method":"hello","jsonrpc":"2.0"}`,
	} {
		if err := c.SendLine(ctx, []byte(line)); err != nil {
			t.Fatal(err)
		}
		r, err := c.AwaitUnmatched(ctx, func(r Response) bool { return r.ID != nil && *r.ID == id })
		if err != nil {
			t.Fatal(err)
		}
		if r.Error == nil || r.Error.Code != string(CodeBadRequest) {
			t.Errorf("response to %s = %+v", line, r)
		}
	}
	// Requests that break their params schema (sent raw, so the transcript
	// check skips them).
	for id, req := range map[int64]Request{
		9101: {Method: MethodToolCall, Params: json.RawMessage(`{"session":"s1"}`)},
		9102: {Method: MethodStart, Params: json.RawMessage(`{"clock":"sundial"}`)},
		9103: {Method: MethodStart, Params: json.RawMessage(`{"clock":"real","options":{"probeTimeoutMs":0}}`)},
		9104: {Method: MethodSessionOpen, Params: json.RawMessage(`{"session":""}`)},
	} {
		wantCode(t, rawRequest(t, c, id, req), CodeBadRequest)
	}

	started(t, c, ClockReal, map[string]json.RawMessage{"t": testServer(t, nil)}, nil)
	wantCode(t, c.Start(ctx, StartParams{Clock: ClockReal}), CodeAlreadyStarted)
	_, err = c.Advance(ctx, time.Second)
	wantCode(t, err, CodeUnsupported)
	_, err = c.Pending(ctx)
	wantCode(t, err, CodeUnsupported)
	if _, err := c.Now(ctx); err != nil {
		t.Errorf("clock.now on the real clock: %v", err)
	}
	_, err = c.Tools(ctx, "ghost")
	wantCode(t, err, CodeUnknownSession)
	if _, err := c.OpenSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	_, err = c.OpenSession(ctx, "s1")
	wantCode(t, err, CodeSessionExists)
	wantCode(t, c.CallTool(ctx, ToolCallParams{Session: "ghost", CallID: "c0", Tool: "x"}), CodeUnknownSession)
	if err := c.CallTool(ctx, ToolCallParams{Session: "s1", CallID: "c1", Tool: "mcp_nope"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.CallTool(ctx, ToolCallParams{Session: "s1", CallID: "c1", Tool: "mcp_nope"}), CodeDuplicateID)
	res, err := c.AwaitCall(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Code != string(OutcomeUnknownTool) || !res.Result.IsError || res.Result.Tool != "mcp_nope" {
		t.Errorf("call of an unknown tool = %+v (error %+v)", res, res.Error)
	}
	if _, err := c.Hello(ctx); err != nil {
		t.Errorf("hello after errors: %v", err)
	}
}

// rawRequest sends req with id as a raw line and returns the response's
// error, if any.
func rawRequest(t *testing.T, c *Client, id int64, req Request) error {
	t.Helper()
	ctx := testCtx(t)
	req.ID = id
	line, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SendLine(ctx, line); err != nil {
		t.Fatal(err)
	}
	r, err := c.AwaitUnmatched(ctx, func(r Response) bool { return r.ID != nil && *r.ID == id })
	if err != nil {
		t.Fatal(err)
	}
	if r.Error != nil {
		return r.Error
	}
	return nil
}

func TestShutdownLeavesNothing(t *testing.T) {
	c, err := StartInProcess(context.Background(), ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	started(t, c, ClockVirtual, map[string]json.RawMessage{"t": testServer(t, nil)}, nil)
	if _, err := c.OpenSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	tools, err := c.Tools(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	pid := statusOf(t, c, "t").PID
	after := c.Last()
	if err := c.CallTool(ctx, ToolCallParams{Session: "s1", CallID: "c1", Tool: toolNamed(t, tools, "slow")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Await(ctx, after, event.Matcher{Kind: event.ToolCallStarted}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The call in flight was aborted and reported before the shutdown
	// response, and the runtime closed.
	res, ok := c.CallResult("c1")
	if !ok || res.Error == nil || res.Error.Code != string(OutcomeAborted) {
		t.Errorf("call in flight at shutdown: %+v, %v", res, ok)
	}
	evs := c.Events()
	if len(evs) == 0 || evs[len(evs)-1].Kind != event.RuntimeClosed {
		t.Errorf("last event is not runtime.closed: %v", evs[len(evs)-1])
	}
	if !processGone(pid) {
		t.Errorf("server process %d survived shutdown", pid)
	}
	checkExchange(t, c)
	if _, err := c.Status(ctx); !errors.Is(err, ErrDriverExited) {
		t.Errorf("request after Close: %v", err)
	}
	goleak.VerifyNone(t)
}

func TestExternalDriver(t *testing.T) {
	ctx := testCtx(t)
	var stderr bytes.Buffer
	c, err := StartCommand(ctx, []string{executable(t)}, append(os.Environ(), envDriver+"=1"), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	started(t, c, ClockVirtual, map[string]json.RawMessage{"t": testServer(t, nil)}, nil)
	if _, err := c.OpenSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	tools, err := c.Tools(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CallTool(ctx, ToolCallParams{Session: "s1", CallID: "c1", Tool: toolNamed(t, tools, "echo"), Arguments: json.RawMessage(`{"text":"out"}`)}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.AwaitCall(ctx, "c1"); err != nil || res.Error != nil || !strings.Contains(res.Result.Text, "echo: out") {
		t.Errorf("call_result = %+v, %v", res, err)
	}
	pid := statusOf(t, c, "t").PID
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v (stderr: %s)", err, stderr.String())
	}
	if !processGone(pid) {
		t.Errorf("server process %d survived the driver", pid)
	}
	checkExchange(t, c)
}

func TestCloseKillsAHungDriver(t *testing.T) {
	// A driver that never answers: Close gives up on shutdown when its
	// context ends and kills the process group.
	ctx := testCtx(t)
	c, err := StartCommand(ctx, []string{executable(t)}, append(os.Environ(), envFake+"=hang"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	p, err := c.Send(cctx, MethodHello, HelloParams{Protocol: ProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := p.Wait(cctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after cancel: %v", err)
	}
	if err := c.Close(cctx); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close of a hung driver: %v", err)
	}
}

func TestServeOptions(t *testing.T) {
	ctx := testCtx(t)
	calls := 0
	c, err := StartInProcess(context.Background(), ServeOptions{
		Implementation: Implementation{Name: "broken", Version: "0"},
		Capabilities:   []Capability{CapStatus},
		Profiles:       []Profile{},
		Configure: func(p *StartParams, o *host.Options) error {
			calls++
			if calls == 1 {
				return errors.New("first start refused")
			}
			// A deliberately broken variant: it forgets the inline servers.
			o.Discovery.Inline = nil
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Error(err)
		}
		checkExchange(t, c)
	})
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Implementation.Name != "broken" || !slices.Equal(h.Capabilities, []Capability{CapStatus}) || len(h.Profiles) != 0 {
		t.Errorf("hello = %+v", h)
	}
	servers := map[string]json.RawMessage{"t": testServer(t, nil)}
	wantCode(t, c.Start(ctx, StartParams{Clock: ClockVirtual, Inline: servers}), CodeUnsupported)
	wantCode(t, c.Start(ctx, StartParams{Clock: ClockReal, Inline: servers, Home: t.TempDir()}), CodeFailed)
	if err := c.Start(ctx, StartParams{Clock: ClockReal, Inline: servers, Home: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if list, err := c.Status(ctx); err != nil || len(list) != 0 {
		t.Errorf("status of the broken variant = %+v, %v", list, err)
	}
	_, err = c.Advance(ctx, time.Second)
	wantCode(t, err, CodeUnsupported)
	wantCode(t, c.Reload(ctx), CodeUnsupported)
	wantCode(t, c.Acquire(ctx, "a", "t"), CodeUnsupported)
}

func TestServeCancelled(t *testing.T) {
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := StartInProcess(sctx, ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	// start is handled before later requests are read, so a harness may
	// pipeline after it.
	start, err := c.Send(ctx, MethodStart, StartParams{Clock: ClockVirtual, Home: t.TempDir(), Env: map[string]string{},
		Inline: map[string]json.RawMessage{"t": testServer(t, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	open, err := c.Send(ctx, MethodSessionOpen, SessionParams{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := start.Wait(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := open.Wait(ctx, nil); err != nil {
		t.Fatal(err)
	}
	pid := statusOf(t, c, "t").PID
	cancel()
	if _, err := c.Await(ctx, 0, event.Matcher{Kind: event.RuntimeClosed}); err != nil {
		t.Fatal(err)
	}
	err = c.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("Close after the Serve context ended: %v", err)
	}
	if !processGone(pid) {
		t.Errorf("server process %d survived the cancelled Serve", pid)
	}
	evs := c.Events()
	if evs[len(evs)-1].Kind != event.RuntimeClosed {
		t.Errorf("last event %v, want runtime.closed", evs[len(evs)-1])
	}
	checkExchange(t, c)
}

// TestTimersPending: on the real clock the reference driver lists its
// runtime's pending timers (pending-timers): the startup gate's, armed
// before gate.opened, and the connect timeout of a handshake that hangs,
// armed before server.connecting. With the virtual clock timers.pending is
// unsupported (clock.pending lists them).
func TestTimersPending(t *testing.T) {
	c := inProcess(t)
	ctx := testCtx(t)
	started(t, c, ClockReal, map[string]json.RawMessage{"hang": testServer(t, map[string]string{envServerHang: "1"})},
		&StartOptions{StartupGateMs: ptr[int64](600000)})
	if _, err := c.Send(ctx, MethodSessionOpen, SessionParams{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Await(ctx, 0, event.Matcher{Kind: event.GateOpened, Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	connecting, err := c.Await(ctx, 0, event.Matcher{Kind: event.ServerConnecting, Server: "hang"})
	if err != nil {
		t.Fatal(err)
	}
	connect := time.Duration(attrMs(t, connecting, "timeout_ms")) * time.Millisecond
	timers, err := c.PendingTimers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	near := func(want time.Duration) bool {
		return slices.ContainsFunc(timers, func(d time.Duration) bool { return d <= want && d > want/2 })
	}
	if !slices.IsSorted(timers) || !near(connect) || !near(10*time.Minute) {
		t.Errorf("pending timers %v, want soonest first, with the connect timeout (%v) and the gate (10m) among them", timers, connect)
	}

	v := inProcess(t)
	started(t, v, ClockVirtual, nil, nil)
	_, err = v.PendingTimers(ctx)
	wantCode(t, err, CodeUnsupported)
}

// attrMs reads an integer attribute of e.
func attrMs(t *testing.T, e event.Event, k string) int64 {
	t.Helper()
	s, _ := e.Get(k)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s %s=%q: %v", e.Kind, k, s, err)
	}
	return n
}
