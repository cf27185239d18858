package driver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
)

// The tests of Conn and Handlers, the API for writing a driver in Go. They
// serve a toy implementation (toyHandlers) and talk to it with raw lines,
// as any harness would.

// connHarness is one Conn under test, fed over a pipe.
type connHarness struct {
	t      *testing.T
	ctx    context.Context
	in     *io.PipeWriter
	lines  chan []byte
	served chan error
	// sent and received are the transcript, checked against the schemas
	// at the end.
	mu         sync.Mutex
	transcript []TranscriptLine
	out        *recordingWriter
}

// recordingWriter keeps what the driver has written, before passing it on.
type recordingWriter struct {
	mu  sync.Mutex
	buf strings.Builder
	w   io.Writer
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.buf.Write(p)
	r.mu.Unlock()
	return r.w.Write(p)
}

// String returns everything written so far.
func (r *recordingWriter) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// serveConn serves the Handlers build returns for a new Conn; setup, when
// not nil, may adjust the Conn first. The transcript is checked against
// the protocol's schemas when the test ends, after EOF has shut the driver
// down.
func serveConn(t *testing.T, setup func(*Conn), build func(*Conn) Handlers) *connHarness {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	rec := &recordingWriter{w: outW}
	c := NewConn(rec, nil)
	if setup != nil {
		setup(c)
	}
	h := &connHarness{t: t, ctx: testCtx(t), in: inW, lines: make(chan []byte, 64), served: make(chan error, 1), out: rec}
	go func() {
		h.served <- c.Serve(context.Background(), inR, build(c))
		outW.Close()
	}()
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			h.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	t.Cleanup(func() {
		inW.Close() // EOF: shutdown without a response
		for l := range h.lines {
			h.record(Received, l, false)
		}
		if err := <-h.served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		v, err := NewValidator()
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range v.ValidateTranscript(h.transcript) {
			t.Error(err)
		}
	})
	return h
}

func (h *connHarness) record(dir Direction, line []byte, raw bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.transcript = append(h.transcript, TranscriptLine{Dir: dir, Line: line, Raw: raw})
}

// send writes one line; raw marks a line that is not a valid request.
func (h *connHarness) send(line string, raw bool) {
	h.t.Helper()
	h.record(Sent, []byte(line), raw)
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatalf("writing %s: %v", line, err)
	}
}

// next returns the next line the driver writes.
func (h *connHarness) next() connLine {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			h.t.Fatal("the driver's output ended")
		}
		h.record(Received, l, false)
		var m connLine
		if err := json.Unmarshal(l, &m); err != nil {
			h.t.Fatalf("line %s: %v", l, err)
		}
		m.raw = string(l)
		return m
	case <-h.ctx.Done():
		h.t.Fatal("no line from the driver")
	}
	return connLine{}
}

// connLine is one line of driver output, decoded loosely.
type connLine struct {
	Type      string          `json:"type"`
	ID        *int64          `json:"id"`
	Result    json.RawMessage `json:"result"`
	Error     *RemoteError    `json:"error"`
	Event     *event.Event    `json:"event"`
	CallID    string          `json:"callId"`
	AcquireID string          `json:"acquireId"`
	OK        bool            `json:"ok"`
	raw       string
}

// request sends a request line and returns its response, which must be
// the next line but for events.
func (h *connHarness) request(id int64, method, params string) connLine {
	h.t.Helper()
	line := fmt.Sprintf(`{"id":%d,"method":%q}`, id, method)
	if params != "" {
		line = fmt.Sprintf(`{"id":%d,"method":%q,"params":%s}`, id, method, params)
	}
	v, _ := NewValidator()
	h.send(line, v.Validate(SchemaRequest, []byte(line)) != nil || v.Validate(method+".params", []byte(orEmpty(params))) != nil)
	r := h.next()
	for r.Type == TypeEvent {
		r = h.next()
	}
	if r.Type != TypeResponse || r.ID == nil || *r.ID != id {
		h.t.Fatalf("%s: got %s, want its response", line, r.raw)
	}
	return r
}

func orEmpty(params string) string {
	if params == "" {
		return "{}"
	}
	return params
}

// wantErr checks that r is an error response with code.
func wantErr(t *testing.T, r connLine, code ErrorCode) {
	t.Helper()
	if r.Error == nil || r.Error.Code != string(code) {
		t.Errorf("response %s, want error %s", r.raw, code)
	}
}

// wantOK checks that r is a result response.
func wantOK(t *testing.T, r connLine) {
	t.Helper()
	if r.Error != nil || r.Result == nil {
		t.Errorf("response %s, want a result", r.raw)
	}
}

// toy is a toy implementation behind toyHandlers: sessions, one tool
// (mcp_toy_echo) and a count of handler calls. Calls of the tool "block"
// wait until their context ends.
type toy struct {
	conn *Conn

	mu       sync.Mutex
	calls    map[string]int // handler calls by method
	sessions map[string]bool
	released int
	// blocking receives the context of each call of "block" once it runs.
	blocking chan context.Context
	// output, when set, reads what the driver has written so far; a call
	// of mcp_toy_echo keeps it in writtenAtRun.
	output       func() string
	writtenAtRun map[string]string
	// openGate, when not nil, holds session.open until it is closed or the
	// request's context ends; entered is signalled when it starts holding.
	openGate chan struct{}
	entered  chan struct{}
}

func (y *toy) count(method string) {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.calls[method]++
}

func (y *toy) called(method string) int {
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.calls[method]
}

func (y *toy) session(name string) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	if !y.sessions[name] {
		return Errorf(CodeUnknownSession, "no open session %q", name)
	}
	return nil
}

// toyHandlers returns the toy's Handlers: core methods, status, acquire
// (announced when caps says so) and a virtual clock that never moves.
func toyHandlers(y *toy, caps ...Capability) Handlers {
	return Handlers{
		Implementation: Implementation{Name: "toy", Version: "1"},
		Capabilities:   caps,
		Eras:           []Era{EraLegacy},
		Now:            func() time.Duration { return 7 * time.Millisecond },
		Start: func(ctx context.Context, p *StartParams) error {
			y.count(MethodStart)
			y.conn.Emit(event.ConfigLoaded, "", "", map[string]any{"file": "", "provider": "inline", "level": "inline", "servers": int64(len(p.Inline))})
			return nil
		},
		SessionOpen: func(ctx context.Context, p *SessionParams) (StartReport, error) {
			y.count(MethodSessionOpen)
			if y.openGate != nil {
				y.entered <- struct{}{}
				select {
				case <-y.openGate:
				case <-ctx.Done():
					return StartReport{}, ctx.Err()
				}
			}
			y.mu.Lock()
			y.sessions[p.Session] = true
			y.mu.Unlock()
			y.conn.Emit(event.SessionOpened, "", p.Session, nil)
			y.conn.Emit(event.ServerConnected, "toy", "", map[string]any{"transport": "stdio", "attempt": int64(0), "tools": int64(1), "protocol": "2025-11-25"})
			return StartReport{Ready: []string{"toy"}}, nil
		},
		SessionClose: func(ctx context.Context, p *SessionParams) error {
			y.count(MethodSessionClose)
			return y.session(p.Session)
		},
		ToolsList: func(ctx context.Context, p *SessionParams) ([]Tool, error) {
			y.count(MethodToolsList)
			if err := y.session(p.Session); err != nil {
				return nil, err
			}
			return []Tool{{Name: "mcp_toy_echo", Server: "toy", Tool: "echo", RequiresApproval: true}}, nil
		},
		ToolCall: func(ctx context.Context, p *ToolCallParams) (CallFunc, error) {
			y.count(MethodToolCall)
			if err := y.session(p.Session); err != nil {
				return nil, err
			}
			return func(ctx context.Context) (CallOutcome, error) {
				if y.output != nil {
					y.mu.Lock()
					y.writtenAtRun[p.CallID] = y.output()
					y.mu.Unlock()
				}
				attrs := func() map[string]any { return map[string]any{"call": p.CallID, "tool": p.Tool} }
				y.conn.Emit(event.ToolCallStarted, "toy", p.Session, attrs())
				if p.Tool == "block" {
					y.blocking <- ctx
					<-ctx.Done()
					return CallOutcome{Server: "toy"}, context.Cause(ctx)
				}
				a := attrs()
				a["outcome"], a["code"] = "ok", ""
				y.conn.Emit(event.ToolCallFinished, "toy", p.Session, a)
				return CallOutcome{Text: "echo", OriginalChars: 4, Server: "toy"}, nil
			}, nil
		},
		Acquire: func(ctx context.Context, p *AcquireParams) (AcquireFunc, error) {
			y.count(MethodAcquire)
			if p.Server != "toy" {
				return nil, Errorf(CodeUnknownServer, "no server %q", p.Server)
			}
			return func(ctx context.Context) (func(), error) {
				if p.AcquireID == "pending" {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return func() {
					y.mu.Lock()
					y.released++
					y.mu.Unlock()
				}, nil
			}, nil
		},
		Status: func(ctx context.Context) ([]ServerStatus, error) {
			y.count(MethodStatus)
			return []ServerStatus{{Name: "zeta", State: "connected"}, {Name: "alpha", State: "disabled"}}, nil
		},
		ClockAdvance: func(ctx context.Context, d time.Duration) error {
			y.count(MethodClockAdvance)
			return nil
		},
		ClockPending: func(ctx context.Context) ([]time.Duration, error) {
			y.count(MethodClockPending)
			return []time.Duration{time.Millisecond / 2, 3 * time.Millisecond}, nil
		},
	}
}

func newToy() *toy {
	return &toy{calls: map[string]int{}, sessions: map[string]bool{}, blocking: make(chan context.Context, 1), entered: make(chan struct{}, 1), writtenAtRun: map[string]string{}}
}

// serveToy serves a toy announcing caps.
func serveToy(t *testing.T, caps ...Capability) (*connHarness, *toy) {
	y := newToy()
	h := serveConn(t, nil, func(c *Conn) Handlers {
		y.conn = c
		return toyHandlers(y, caps...)
	})
	return h, y
}

// TestConnStrictParams checks that params are refused with bad_request
// when they break the method's schema — unknown fields, wrong types,
// missing fields, values out of range — before and after start, and that
// the handler is never called for them.
func TestConnStrictParams(t *testing.T) {
	h, y := serveToy(t, CapStatus, CapVirtualClock)
	bad := []struct{ method, params string }{
		{MethodHello, `{}`},
		{MethodHello, `{"protocol":"mcplife-driver/2","extra":1}`},
		{MethodStart, `{"clock":"sundial"}`},
		{MethodStart, `{"clock":"real","options":{"probeTimeoutMs":0}}`},
		{MethodStart, `{"clock":"real","configFiles":[{"path":"x","level":"galaxy"}]}`},
		{MethodStart, `{"clock":"real","inline":{"a":"not an object"}}`},
		{MethodSessionOpen, `{"session":"s","extra":1}`},
		{MethodSessionOpen, `{"session":1}`},
		{MethodSessionOpen, `{"session":""}`},
		{MethodToolCall, `{"session":"s"}`},
		{MethodToolCall, `{"session":"s","callId":"c","tool":"t","timeoutMs":-1}`},
		{MethodToolCall, `{"session":"s","callId":"c","tool":"t","arguments":[1]}`},
		{MethodClockAdvance, `{"ms":-1}`},
		{MethodClockAdvance, `{"ms":"soon"}`},
		{MethodStatus, `{"verbose":true}`},
		{MethodShutdown, `{"now":true}`},
	}
	id := int64(100)
	for _, started := range []bool{false, true} {
		for _, b := range bad {
			id++
			wantErr(t, h.request(id, b.method, b.params), CodeBadRequest)
		}
		if !started {
			wantOK(t, h.request(1, MethodStart, `{"clock":"virtual"}`))
		}
	}
	for _, m := range []string{MethodSessionOpen, MethodToolCall, MethodClockAdvance, MethodStatus} {
		if n := y.called(m); n != 0 {
			t.Errorf("%s handler called %d times for bad params", m, n)
		}
	}
	if n := y.called(MethodStart); n != 1 {
		t.Errorf("start handler called %d times, want once", n)
	}
}

// TestConnErrorPrecedence checks the order of section 5 of docs/DRIVER.md
// ("Which error wins") for a driver written with Handlers.
func TestConnErrorPrecedence(t *testing.T) {
	h, y := serveToy(t, CapStatus, CapVirtualClock) // not acquire
	// 1. A bad envelope beats an unknown method.
	h.send(`{"id":1,"method":"no.such","jsonrpc":"2.0"}`, true)
	wantErr(t, h.next(), CodeBadRequest)
	h.send(`{"method":"hello"}`, true)
	if r := h.next(); r.ID != nil || r.Error == nil || r.Error.Code != string(CodeBadRequest) {
		t.Errorf("request without an id answered %s, want bad_request with id null", r.raw)
	}
	// 2. An unknown method beats bad params and not_started.
	wantErr(t, h.request(2, "no.such", `{"bogus":1}`), CodeUnknownMethod)
	// 3. A missing capability beats bad params and not_started.
	wantErr(t, h.request(3, MethodAcquire, `{}`), CodeUnsupported)
	// 5. Bad params beat not_started.
	wantErr(t, h.request(5, MethodToolsList, `{"session":""}`), CodeBadRequest)
	// 6. not_started beats the handler's own errors.
	wantErr(t, h.request(6, MethodToolsList, `{"session":"ghost"}`), CodeNotStarted)
	wantErr(t, h.request(7, MethodToolCancel, `{"callId":"ghost"}`), CodeNotStarted)
	wantErr(t, h.request(8, MethodClockNow, ``), CodeNotStarted)
	// 7. The method's own errors: a virtual clock is not unsupported here
	// (announced), then already_started after a start.
	wantOK(t, h.request(9, MethodStart, `{"clock":"real"}`))
	wantErr(t, h.request(10, MethodStart, `{"clock":"real"}`), CodeAlreadyStarted)
	wantErr(t, h.request(11, MethodStart, `{"clock":"sundial"}`), CodeBadRequest)
	wantErr(t, h.request(12, MethodToolsList, `{"session":"ghost"}`), CodeUnknownSession)
	// After a start on the real clock, bad params of clock.advance still
	// come before its unsupported.
	wantErr(t, h.request(13, MethodClockAdvance, `{"ms":-1}`), CodeBadRequest)
	wantErr(t, h.request(14, MethodClockAdvance, `{"ms":1}`), CodeUnsupported)
	wantErr(t, h.request(15, MethodClockPending, ``), CodeUnsupported)
	if n := y.called(MethodClockAdvance) + y.called(MethodClockPending) + y.called(MethodAcquire); n != 0 {
		t.Errorf("clock or acquire handlers called %d times", n)
	}
	if n := y.called(MethodToolsList); n != 1 {
		t.Errorf("tools.list handler called %d times, want once (after start)", n)
	}
	// 4. shutting_down: a request interrupted by shutdown is answered so.
	// session.open waits until its context ends; shutdown answers it
	// before its own response.
	y.openGate = make(chan struct{})
	h.send(`{"id":16,"method":"session.open","params":{"session":"s1"}}`, false)
	select {
	case <-y.entered:
	case <-h.ctx.Done():
		t.Fatal("session.open never reached its handler")
	}
	h.send(`{"id":17,"method":"shutdown"}`, false)
	r := h.next()
	if r.ID == nil || *r.ID != 16 {
		t.Fatalf("got %s, want the response to session.open first", r.raw)
	}
	wantErr(t, r, CodeShuttingDown)
	r = h.next()
	if r.ID == nil || *r.ID != 17 || r.Error != nil {
		t.Errorf("got %s, want shutdown's {}", r.raw)
	}
}

// TestConnUnsupported checks that a method of a capability the driver
// does not announce is answered unsupported, whatever its params and
// before start, without calling its handler even when it is set.
func TestConnUnsupported(t *testing.T) {
	h, y := serveToy(t) // no capability at all, though the toy has handlers
	for i, m := range Methods() {
		if m.Capability == "" {
			continue
		}
		wantErr(t, h.request(int64(i), m.Name, `{"bogus":true}`), CodeUnsupported)
	}
	wantErr(t, h.request(90, MethodStart, `{"clock":"virtual"}`), CodeUnsupported)
	wantOK(t, h.request(91, MethodStart, `{"clock":"real"}`))
	wantErr(t, h.request(92, MethodStatus, ``), CodeUnsupported)
	wantErr(t, h.request(93, MethodAcquire, `{"acquireId":"a","server":"toy"}`), CodeUnsupported)
	for _, m := range []string{MethodStatus, MethodAcquire, MethodClockAdvance, MethodClockPending} {
		if n := y.called(m); n != 0 {
			t.Errorf("%s handler called %d times", m, n)
		}
	}
	if n := y.called(MethodStart); n != 1 {
		t.Errorf("start handler called %d times, want once", n)
	}
}

// TestConnEventsBeforeResponse checks the ordering rules of section 3:
// the events a handler emits come before its response, the accepted
// response of tool.call before the call's events and its call_result, and
// seq counts every event from 1 in output order, at_ms from Now.
func TestConnEventsBeforeResponse(t *testing.T) {
	h, y := serveToy(t, CapStatus, CapJournalPID)
	y.output = h.out.String
	seq := uint64(0)
	wantEvent := func(kind event.Kind) {
		t.Helper()
		l := h.next()
		if l.Type != TypeEvent || l.Event == nil || l.Event.Kind != kind {
			t.Fatalf("got %s, want event %s", l.raw, kind)
		}
		seq++
		if l.Event.Seq != seq || l.Event.At != 7*time.Millisecond {
			t.Errorf("event %s: seq %d at %v, want seq %d at 7ms", l.raw, l.Event.Seq, l.Event.At, seq)
		}
	}
	h.send(`{"id":1,"method":"start","params":{"clock":"real","inline":{"toy":{"command":"toy"}}}}`, false)
	wantEvent(event.ConfigLoaded)
	wantOK(t, h.next())
	h.send(`{"id":2,"method":"session.open","params":{"session":"s1"}}`, false)
	wantEvent(event.SessionOpened)
	wantEvent(event.ServerConnected)
	r := h.next()
	if r.ID == nil || *r.ID != 2 {
		t.Fatalf("got %s, want session.open's response", r.raw)
	}
	var open SessionOpenResult
	if err := json.Unmarshal(r.Result, &open); err != nil || open.Report.Failed == nil || open.Report.Errors == nil {
		t.Errorf("session.open result %s: the report's empty lists and map must be sent as [] and {} (%v)", r.Result, err)
	}
	h.send(`{"id":3,"method":"tool.call","params":{"session":"s1","callId":"c1","tool":"mcp_toy_echo","arguments":{"text":"hi"}}}`, false)
	r = h.next()
	if r.ID == nil || *r.ID != 3 || string(r.Result) != `{"accepted":true}` {
		t.Fatalf("got %s, want tool.call's accepted response first", r.raw)
	}
	wantEvent(event.ToolCallStarted)
	wantEvent(event.ToolCallFinished)
	y.mu.Lock()
	atRun := y.writtenAtRun["c1"]
	y.mu.Unlock()
	if !strings.HasSuffix(atRun, `{"type":"response","id":3,"result":{"accepted":true}}`+"\n") {
		t.Errorf("the call ran before its accepted response was written; output then:\n%s", atRun)
	}
	res := h.next()
	if res.Type != TypeCallResult || res.CallID != "c1" {
		t.Fatalf("got %s, want the call_result of c1", res.raw)
	}
	// Conn fills what the CallFunc left empty: the tool and [] signals.
	var line CallResultLine
	if err := json.Unmarshal([]byte(res.raw), &line); err != nil || line.Result.Tool != "mcp_toy_echo" || line.Result.Signals == nil || line.Error != nil {
		t.Errorf("call_result %s (%v)", res.raw, err)
	}
	// tools.list: a tool without a schema gets an object schema; status is
	// sorted by name.
	r = h.request(4, MethodToolsList, `{"session":"s1"}`)
	var tools ToolsListResult
	if err := json.Unmarshal(r.Result, &tools); err != nil || len(tools.Tools) != 1 || string(tools.Tools[0].InputSchema) != `{"type":"object"}` {
		t.Errorf("tools.list result %s (%v)", r.Result, err)
	}
	r = h.request(5, MethodStatus, ``)
	var st StatusResult
	if err := json.Unmarshal(r.Result, &st); err != nil || len(st.Servers) != 2 || st.Servers[0].Name != "alpha" {
		t.Errorf("status result %s, want sorted by name (%v)", r.Result, err)
	}
	r = h.request(6, MethodClockNow, ``)
	if string(r.Result) != `{"nowMs":7}` {
		t.Errorf("clock.now answered %s, want Now's 7 ms", r.raw)
	}
}

// TestConnCalls checks the bookkeeping of calls Conn does for every
// driver: duplicate ids, tool.cancel of a running and of a finished call
// (the CallFunc's context ends with ErrCancelled, and the call_result says
// aborted), and shutdown aborting a call in flight before it answers.
func TestConnCalls(t *testing.T) {
	h, y := serveToy(t)
	wantOK(t, h.request(1, MethodStart, `{"clock":"real"}`))
	wantOK(t, h.request(2, MethodSessionOpen, `{"session":"s1"}`))
	wantErr(t, h.request(3, MethodToolCall, `{"session":"ghost","callId":"c0","tool":"mcp_toy_echo"}`), CodeUnknownSession)

	callBlocking := func(id int64, callID string) context.Context {
		t.Helper()
		wantOK(t, h.request(id, MethodToolCall, fmt.Sprintf(`{"session":"s1","callId":%q,"tool":"block"}`, callID)))
		if l := h.next(); l.Event == nil || l.Event.Kind != event.ToolCallStarted {
			t.Fatalf("got %s, want tool.call_started", l.raw)
		}
		select {
		case ctx := <-y.blocking:
			return ctx
		case <-h.ctx.Done():
			t.Fatal("the call never ran")
		}
		return nil
	}
	ctx := callBlocking(4, "c1")
	wantErr(t, h.request(5, MethodToolCall, `{"session":"s1","callId":"c1","tool":"mcp_toy_echo"}`), CodeDuplicateID)
	wantErr(t, h.request(6, MethodToolCancel, `{"callId":"ghost"}`), CodeUnknownID)
	h.send(`{"id":7,"method":"tool.cancel","params":{"callId":"c1"}}`, false)
	// The response and the call_result race; both must come.
	var cancelResp, result connLine
	for range 2 {
		l := h.next()
		if l.Type == TypeCallResult {
			result = l
		} else {
			cancelResp = l
		}
	}
	if string(cancelResp.Result) != `{"running":true}` {
		t.Errorf("tool.cancel of a running call answered %s", cancelResp.raw)
	}
	if !errors.Is(context.Cause(ctx), ErrCancelled) {
		t.Errorf("the call's context ended with %v, want ErrCancelled", context.Cause(ctx))
	}
	var line CallResultLine
	if err := json.Unmarshal([]byte(result.raw), &line); err != nil || line.Error == nil || line.Error.Code != string(OutcomeAborted) || !line.Result.Aborted || !line.Result.IsError {
		t.Errorf("call_result of a cancelled call: %s (%v)", result.raw, err)
	}
	r := h.request(8, MethodToolCancel, `{"callId":"c1"}`)
	if string(r.Result) != `{"running":false}` {
		t.Errorf("tool.cancel of a finished call answered %s", r.raw)
	}
	// Shutdown aborts the call in flight; its call_result comes before the
	// shutdown response.
	callBlocking(9, "c2")
	h.send(`{"id":10,"method":"shutdown"}`, false)
	if l := h.next(); l.Type != TypeCallResult || l.CallID != "c2" || l.Error == nil || l.Error.Code != string(OutcomeAborted) {
		t.Fatalf("got %s, want c2's aborted call_result before shutdown's response", l.raw)
	}
	if l := h.next(); l.ID == nil || *l.ID != 10 || l.Error != nil {
		t.Errorf("got %s, want shutdown's response", l.raw)
	}
}

// TestConnAcquire checks the bookkeeping of acquires: the result line
// after the accepted response, release calling the release function once,
// release of a pending acquire aborting it, unknown ids.
func TestConnAcquire(t *testing.T) {
	h, y := serveToy(t, CapAcquire)
	wantOK(t, h.request(1, MethodStart, `{"clock":"real"}`))
	wantErr(t, h.request(2, MethodAcquire, `{"acquireId":"a0","server":"ghost"}`), CodeUnknownServer)
	wantOK(t, h.request(3, MethodAcquire, `{"acquireId":"a1","server":"toy"}`))
	if l := h.next(); l.Type != TypeAcquireResult || l.AcquireID != "a1" || !l.OK {
		t.Fatalf("got %s, want a1's acquire_result ok", l.raw)
	}
	wantErr(t, h.request(4, MethodAcquire, `{"acquireId":"a1","server":"toy"}`), CodeDuplicateID)
	wantOK(t, h.request(5, MethodRelease, `{"acquireId":"a1"}`))
	wantOK(t, h.request(6, MethodRelease, `{"acquireId":"a1"}`)) // twice does nothing
	y.mu.Lock()
	released := y.released
	y.mu.Unlock()
	if released != 1 {
		t.Errorf("released %d times, want once", released)
	}
	wantErr(t, h.request(7, MethodRelease, `{"acquireId":"ghost"}`), CodeUnknownID)
	wantOK(t, h.request(8, MethodAcquire, `{"acquireId":"pending","server":"toy"}`))
	h.send(`{"id":9,"method":"release","params":{"acquireId":"pending"}}`, false)
	var result connLine
	for range 2 {
		if l := h.next(); l.Type == TypeAcquireResult {
			result = l
		}
	}
	if result.OK || result.Error == nil || result.Error.Code != string(OutcomeAborted) {
		t.Errorf("released pending acquire: %s, want aborted", result.raw)
	}
}

// TestConnHello checks hello: the announcement, and a version-1 answer
// without eras to a harness of version 1.
func TestConnHello(t *testing.T) {
	h, _ := serveToy(t, CapStatus)
	r := h.request(1, MethodHello, `{"protocol":"mcplife-driver/2"}`)
	if string(r.Result) != `{"protocol":"mcplife-driver/2","implementation":{"name":"toy","version":"1"},"capabilities":["status"],"profiles":[],"eras":["legacy"]}` {
		t.Errorf("hello answered %s", r.Result)
	}
	r = h.request(2, MethodHello, `{"protocol":"mcplife-driver/1"}`)
	if string(r.Result) != `{"protocol":"mcplife-driver/1","implementation":{"name":"toy","version":"1"},"capabilities":["status"],"profiles":[]}` {
		t.Errorf("hello of version 1 answered %s", r.Result)
	}
}

// TestConnLongLine checks that a request line longer than the bound is
// answered bad_request with id null without being kept, and the driver
// goes on.
func TestConnLongLine(t *testing.T) {
	y := newToy()
	h := serveConn(t, func(c *Conn) { c.maxLine = 100 }, func(c *Conn) Handlers {
		y.conn = c
		return toyHandlers(y)
	})
	h.send(`{"id":1,"method":"hello","params":{"protocol":"`+strings.Repeat("x", 200)+`"}}`, true)
	if r := h.next(); r.ID != nil || r.Error == nil || r.Error.Code != string(CodeBadRequest) {
		t.Errorf("long line answered %s, want bad_request with id null", r.raw)
	}
	wantOK(t, h.request(2, MethodHello, `{"protocol":"mcplife-driver/2"}`))
}

// TestConnRefusesBadHandlers checks that Serve refuses, before reading,
// Handlers the protocol cannot be served with, and a second Serve.
func TestConnRefusesBadHandlers(t *testing.T) {
	y := newToy()
	good := func() Handlers { return toyHandlers(y) }
	for _, tc := range []struct {
		why    string
		mutate func(*Handlers)
		want   string
	}{
		{"no start", func(h *Handlers) { h.Start = nil }, "no handler for start"},
		{"no tools.list", func(h *Handlers) { h.ToolsList = nil }, "no handler for tools.list"},
		{"acquire without Acquire", func(h *Handlers) { h.Capabilities = []Capability{CapAcquire}; h.Acquire = nil }, `capability "acquire" is announced`},
		{"virtual clock without Now", func(h *Handlers) { h.Capabilities = []Capability{CapVirtualClock}; h.Now = nil }, "no Now"},
		{"profile without its capabilities", func(h *Handlers) { h.Profiles = []Profile{ProfileCore} }, "requires capability"},
		{"no era", func(h *Handlers) { h.Eras = nil }, "no eras"},
		{"unknown capability", func(h *Handlers) { h.Capabilities = []Capability{"time-travel"} }, "unknown capability"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			hs := good()
			tc.mutate(&hs)
			err := NewConn(io.Discard, nil).Serve(context.Background(), strings.NewReader(""), hs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Serve = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	c := NewConn(io.Discard, nil)
	y.conn = c
	if err := c.Serve(context.Background(), strings.NewReader(""), good()); err != nil {
		t.Fatalf("Serve at EOF: %v", err)
	}
	if err := c.Serve(context.Background(), strings.NewReader(""), good()); err == nil {
		t.Error("a second Serve on one Conn succeeded")
	}
}
