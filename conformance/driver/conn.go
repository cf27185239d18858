package driver

// Conn: the protocol's rules for any Go driver. It reads request lines
// (bounded), parses them, applies the error precedence of docs/DRIVER.md
// section 5 (bad envelope, unknown method, missing capability, shutting
// down, bad params, not started; then the handler's own errors), routes
// each method to its handler, keeps the calls and acquires it accepted,
// and writes every line in the order section 3 prescribes. The reference
// driver (Serve) is one Handlers served by a Conn.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
)

// MaxLine bounds one request line in bytes, without its newline. The
// protocol asks readers to accept lines of at least 16 MiB; a longer line
// is answered with bad_request and a null id, and the driver goes on.
const MaxLine = 64 << 20

// Conn is the driver's side of the protocol over one pair of streams: it
// serves Handlers on them (Serve) and writes the implementation's events
// (Emit). Create it with NewConn; its methods are safe for concurrent use.
type Conn struct {
	out             *lineWriter
	log             *slog.Logger
	shutdownTimeout time.Duration
	maxLine         int

	// flushHook, when set, returns once every event emitted so far has
	// been written or is held to go out with the next line (lineWriter's
	// hold); finishHook, when set, runs once shutdown is complete. The
	// reference driver, whose events come asynchronously from a
	// recorder, sets them.
	flushHook  func()
	finishHook func()

	// Set by Serve before it reads.
	h          Handlers
	valid      *Validator
	caps       map[Capability]bool
	root       context.Context // Serve's ctx
	base       context.Context // ends when shutdown begins
	cancelBase context.CancelFunc
	wg         sync.WaitGroup // requests, calls and acquires in flight

	mu        sync.Mutex
	served    bool
	now       func() time.Duration
	origin    time.Time
	closing   bool
	started   bool
	realClock bool // start succeeded with clock "real"
	calls     map[string]*accepted
	acquires  map[string]*accepted
}

// accepted is a tool call or acquire that was answered {"accepted": true}.
type accepted struct {
	cancel context.CancelCauseFunc
	done   bool
	// release drops a successful acquire's reference; nil once released.
	release func()
}

// NewConn returns a Conn that writes the driver's lines to out; opts may
// be nil.
func NewConn(out io.Writer, opts *ConnOptions) *Conn {
	var o ConnOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	return &Conn{
		out:             &lineWriter{w: out},
		log:             o.Logger,
		shutdownTimeout: o.ShutdownTimeout,
		maxLine:         MaxLine,
		origin:          time.Now(),
		calls:           map[string]*accepted{},
		acquires:        map[string]*accepted{},
	}
}

// Now returns the implementation's clock as an offset from start:
// Handlers.Now, or real time since start was received.
func (c *Conn) Now() time.Duration {
	c.mu.Lock()
	now, origin := c.now, c.origin
	c.mu.Unlock()
	if now != nil {
		return now()
	}
	return time.Since(origin)
}

// Emit writes one event line at once: its seq is the next number, its
// at_ms the implementation's clock (Now). Events emitted by a handler
// before it returns are written before its response, and those emitted by
// a CallFunc or AcquireFunc before it returns before its result line, as
// section 3 of docs/DRIVER.md requires. attrs holds the kind's attributes
// (strings, int64 and bools; nil for none). An event whose attributes
// cannot be encoded as JSON is logged and dropped without using a seq.
func (c *Conn) Emit(kind event.Kind, server, session string, attrs map[string]any) {
	e := event.Event{At: c.Now(), Server: server, Session: session, Kind: kind}
	if len(attrs) > 0 {
		e.Attrs = attrs
	}
	if err := c.out.writeEvent(e); err != nil {
		c.log.Error("dropping an event", "kind", kind, "error", err)
	}
}

// Serve serves h: it reads request lines from in and answers them, with
// the events and the result lines of calls and acquires, until a shutdown
// request has been answered (it returns nil), in reaches EOF (nil, after
// the same shutdown without a response) or ctx ends (ctx's error, after
// closing in when it is an io.Closer, and the same shutdown). In every
// case Handlers.Shutdown has run and every goroutine Serve started has
// ended when it returns — except that when ctx ends during a read that
// closing in does not interrupt, such as a blocking stdin, that read's
// goroutine ends only when the read returns. Serve returns an error at
// once, before reading, when h cannot be served (Handlers says what it
// needs) or when it was called before on c.
func (c *Conn) Serve(ctx context.Context, in io.Reader, h Handlers) error {
	if err := h.check(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.served {
		c.mu.Unlock()
		return errors.New("driver: Conn.Serve was called twice")
	}
	c.served = true
	c.now = h.Now
	c.mu.Unlock()
	c.h = h
	// The schemas of the methods called are compiled when first needed.
	c.valid = newLazyValidator()
	c.caps = map[Capability]bool{}
	for _, k := range h.Capabilities {
		c.caps[k] = true
	}
	c.root = ctx
	c.base, c.cancelBase = context.WithCancel(ctx)
	defer c.cancelBase()

	type read struct {
		line    []byte
		tooLong bool
		err     error
	}
	// The reader reads one line per request on next, so that it is idle,
	// not blocked in a read, when Serve returns after shutdown or EOF.
	next := make(chan struct{})
	lines := make(chan read, 1)
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for range next {
			line, tooLong, err := readLine(r, c.maxLine)
			lines <- read{line, tooLong, err}
			if err != nil {
				return
			}
		}
	}()
	defer close(next)
	for {
		next <- struct{}{}
		var rd read
		select {
		case rd = <-lines:
		case <-ctx.Done():
			if cl, ok := in.(io.Closer); ok {
				_ = cl.Close()
			}
			c.shutdown()
			return ctx.Err()
		}
		switch {
		case rd.tooLong:
			c.respond(nil, nil, rerr(CodeBadRequest, "request line longer than %d bytes", c.maxLine))
		case len(bytes.TrimSpace(rd.line)) > 0:
			if c.dispatch(rd.line) {
				return nil
			}
		}
		if rd.err != nil {
			c.shutdown()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(rd.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("driver: reading requests: %w", rd.err)
		}
	}
}

// readLine reads one line of at most max bytes (without the newline). A
// longer line is consumed to its end without being kept: tooLong is set
// and line is nil.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(bytes.TrimSuffix(frag, []byte("\n"))) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, tooLong, err
	}
}

// dispatch handles one request line. It reports whether the driver shut
// down.
func (c *Conn) dispatch(line []byte) bool {
	id, method, raw, perr := parseRequest(line)
	if perr != nil {
		c.respond(id, nil, perr)
		return false
	}
	c.log.Debug("request", "id", *id, "method", method)
	info, known := methodInfo(method)
	if !known {
		c.respond(id, nil, rerr(CodeUnknownMethod, "unknown method %q", method))
		return false
	}
	if info.Capability != "" && !c.caps[info.Capability] {
		c.respond(id, nil, rerr(CodeUnsupported, "%s needs capability %q, which this driver does not announce", method, info.Capability))
		return false
	}
	switch method {
	case MethodHello:
		p, err := c.decode(method, raw)
		if err != nil {
			c.respond(id, nil, err)
			return false
		}
		// Every run starts and opens a session: their schemas are compiled
		// before hello is answered, not while the harness times them.
		c.valid.warm(MethodStart+".params", MethodSessionOpen+".params")
		c.respond(id, c.h.hello(p.(*HelloParams).Protocol), nil)
		return false
	case MethodShutdown:
		if _, err := c.decode(method, raw); err != nil {
			c.respond(id, nil, err)
			return false
		}
		c.shutdown()
		c.respond(id, Empty{}, nil)
		return true
	}
	c.mu.Lock()
	closing, started, realClock := c.closing, c.started, c.realClock
	c.mu.Unlock()
	if closing {
		c.respond(id, nil, rerr(CodeShuttingDown, "the driver is shutting down"))
		return false
	}
	p, err := c.decode(method, raw)
	if err != nil {
		c.respond(id, nil, err)
		return false
	}
	if method == MethodStart {
		// start never waits on the clock; handling it before reading on
		// lets a harness pipeline requests after it.
		c.respond(id, nil, c.start(p.(*StartParams)))
		return false
	}
	if !started {
		c.respond(id, nil, rerr(CodeNotStarted, "start has not succeeded"))
		return false
	}
	if realClock && (method == MethodClockAdvance || method == MethodClockPending) {
		c.respond(id, nil, rerr(CodeUnsupported, "%s needs start with clock %q", method, ClockVirtual))
		return false
	}
	if !realClock && method == MethodTimersPending {
		c.respond(id, nil, rerr(CodeUnsupported, "%s needs start with clock %q (use %s)", method, ClockReal, MethodClockPending))
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		res, after, err := c.handle(c.base, method, p)
		if err != nil && c.base.Err() != nil {
			var re *RemoteError
			switch {
			case !errors.As(err, &re):
				err = rerr(CodeShuttingDown, "interrupted by shutdown: %v", err)
			case re.Code == string(CodeFailed):
				err = rerr(CodeShuttingDown, "interrupted by shutdown: %s", re.Message)
			}
		}
		c.respond(id, res, err)
		if err == nil && after != nil {
			after()
		}
	}()
	return false
}

// methodInfo looks a method up in the protocol's vocabulary.
func methodInfo(method string) (MethodInfo, bool) {
	for _, m := range Methods() {
		if m.Name == method {
			return m, true
		}
	}
	return MethodInfo{}, false
}

// newParams returns a pointer to the params type of method.
func newParams(method string) any {
	switch method {
	case MethodHello:
		return &HelloParams{}
	case MethodStart:
		return &StartParams{}
	case MethodSessionOpen, MethodSessionClose, MethodToolsList:
		return &SessionParams{}
	case MethodToolCall:
		return &ToolCallParams{}
	case MethodToolCancel:
		return &CancelParams{}
	case MethodAcquire:
		return &AcquireParams{}
	case MethodRelease:
		return &ReleaseParams{}
	case MethodServerDisconnect:
		return &ServerParams{}
	case MethodClockAdvance:
		return &AdvanceParams{}
	}
	// status, reload, clock.now, clock.pending, timers.pending, shutdown.
	return &Empty{}
}

// decode checks params against the method's schema, which refuses unknown
// fields, wrong types, missing fields and values out of range, and decodes
// them strictly into the method's params type.
func (c *Conn) decode(method string, params json.RawMessage) (any, *RemoteError) {
	name := method + ".params"
	if err := c.valid.Validate(name, params); err != nil {
		msg := strings.TrimPrefix(err.Error(), name+": ")
		msg = strings.TrimPrefix(msg, "validating "+SchemaBaseURI+name+".json: ")
		return nil, rerr(CodeBadRequest, "params: %s", msg)
	}
	p := newParams(method)
	if err := decodeParams(params, p); err != nil {
		return nil, err
	}
	return p, nil
}

// start runs Handlers.Start, once it may.
func (c *Conn) start(p *StartParams) error {
	if p.Clock == ClockVirtual && !c.caps[CapVirtualClock] {
		return rerr(CodeUnsupported, "clock %q needs capability %q, which this driver does not announce", p.Clock, CapVirtualClock)
	}
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return rerr(CodeAlreadyStarted, "start was already called")
	}
	c.origin = time.Now()
	c.mu.Unlock()
	if err := c.h.Start(c.base, p); err != nil {
		return err
	}
	c.mu.Lock()
	c.started, c.realClock = true, p.Clock == ClockReal
	c.mu.Unlock()
	return nil
}

// handle runs a method other than hello, start and shutdown. after, when
// not nil, runs once the response has been written.
func (c *Conn) handle(ctx context.Context, method string, p any) (result any, after func(), err error) {
	h := &c.h
	switch method {
	case MethodSessionOpen:
		rep, err := h.SessionOpen(ctx, p.(*SessionParams))
		if err != nil {
			return nil, nil, err
		}
		rep.Ready, rep.Failed = nonNilSlice(rep.Ready), nonNilSlice(rep.Failed)
		rep.Deferred, rep.Late = nonNilSlice(rep.Deferred), nonNilSlice(rep.Late)
		if rep.Errors == nil {
			rep.Errors = map[string]string{}
		}
		return SessionOpenResult{Report: rep}, nil, nil
	case MethodSessionClose:
		return Empty{}, nil, h.SessionClose(ctx, p.(*SessionParams))
	case MethodToolsList:
		tools, err := h.ToolsList(ctx, p.(*SessionParams))
		if err != nil {
			return nil, nil, err
		}
		tools = nonNilSlice(tools)
		for i, t := range tools {
			if s := bytes.TrimSpace(t.InputSchema); len(s) == 0 || string(s) == "null" {
				tools[i].InputSchema = json.RawMessage(`{"type":"object"}`)
			}
		}
		return ToolsListResult{Tools: tools}, nil, nil
	case MethodToolCall:
		return c.toolCall(ctx, p.(*ToolCallParams))
	case MethodToolCancel:
		return c.toolCancel(p.(*CancelParams))
	case MethodAcquire:
		return c.acquire(ctx, p.(*AcquireParams))
	case MethodRelease:
		return c.release(p.(*ReleaseParams))
	case MethodStatus:
		list, err := h.Status(ctx)
		if err != nil {
			return nil, nil, err
		}
		list = nonNilSlice(list)
		slices.SortStableFunc(list, func(a, b ServerStatus) int { return strings.Compare(a.Name, b.Name) })
		return StatusResult{Servers: list}, nil, nil
	case MethodReload:
		return Empty{}, nil, h.Reload(ctx)
	case MethodServerDisconnect:
		return Empty{}, nil, h.ServerDisconnect(ctx, p.(*ServerParams))
	case MethodClockAdvance:
		if err := h.ClockAdvance(ctx, time.Duration(p.(*AdvanceParams).Ms)*time.Millisecond); err != nil {
			return nil, nil, err
		}
		return ClockResult{NowMs: c.Now().Milliseconds()}, nil, nil
	case MethodClockNow:
		return ClockResult{NowMs: c.Now().Milliseconds()}, nil, nil
	case MethodClockPending:
		pending, err := h.ClockPending(ctx)
		if err != nil {
			return nil, nil, err
		}
		return pendingResult(pending), nil, nil
	case MethodTimersPending:
		pending, err := h.TimersPending(ctx)
		if err != nil {
			return nil, nil, err
		}
		return pendingResult(pending), nil, nil
	}
	return nil, nil, rerr(CodeUnknownMethod, "unknown method %q", method)
}

// pendingResult is the result of clock.pending or timers.pending: each
// duration rounded up to whole milliseconds, so advancing by the value
// fires the timer.
func pendingResult(pending []time.Duration) PendingResult {
	out := PendingResult{TimersMs: make([]int64, len(pending))}
	for i, d := range pending {
		out.TimersMs[i] = int64(math.Ceil(float64(max(d, 0)) / float64(time.Millisecond)))
	}
	return out
}

// goRun runs f in a goroutine that shutdown waits for.
func (c *Conn) goRun(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// register records an accepted call or acquire under id; it refuses an id
// used before.
func (c *Conn) register(m map[string]*accepted, kind, id string, a *accepted) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := m[id]; dup {
		return rerr(CodeDuplicateID, "%s %q was used before", kind, id)
	}
	m[id] = a
	return nil
}

// outcomeError returns the error object of a failed call or acquire.
func outcomeError(ctx context.Context, err error) *RemoteError {
	var re *RemoteError
	if errors.As(err, &re) && re != nil {
		return &RemoteError{Code: re.Code, Message: re.Message}
	}
	if ctx.Err() != nil {
		return Errorf(OutcomeAborted, "%v", err)
	}
	return Errorf(OutcomeFailed, "%v", err)
}

// toolCall accepts a call; its CallFunc runs once the response is written.
func (c *Conn) toolCall(ctx context.Context, p *ToolCallParams) (any, func(), error) {
	run, err := c.h.ToolCall(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	if run == nil {
		return nil, nil, rerr(CodeFailed, "the driver accepted call %q without a function to run it", p.CallID)
	}
	cctx, cancel := context.WithCancelCause(c.base)
	a := &accepted{cancel: cancel}
	if err := c.register(c.calls, "callId", p.CallID, a); err != nil {
		cancel(nil)
		return nil, nil, err
	}
	after := func() {
		c.goRun(func() {
			defer cancel(nil)
			out, err := run(cctx)
			line := CallResultLine{Type: TypeCallResult, CallID: p.CallID, Result: out}
			if line.Result.Tool == "" {
				line.Result.Tool = p.Tool
			}
			line.Result.Signals = nonNilSlice(line.Result.Signals)
			if err != nil {
				line.Error = outcomeError(cctx, err)
				line.Result.IsError = true
				if line.Error.Code == string(OutcomeAborted) {
					line.Result.Aborted, line.Result.Text = true, ""
				}
			}
			c.mu.Lock()
			a.done = true
			c.mu.Unlock()
			c.writeResult(line)
		})
	}
	return AcceptedResult{Accepted: true}, after, nil
}

func (c *Conn) toolCancel(p *CancelParams) (any, func(), error) {
	c.mu.Lock()
	a, ok := c.calls[p.CallID]
	running := ok && !a.done
	c.mu.Unlock()
	if !ok {
		return nil, nil, rerr(CodeUnknownID, "no tool call %q", p.CallID)
	}
	if running {
		a.cancel(ErrCancelled)
	}
	return CancelResult{Running: running}, nil, nil
}

// acquire accepts an acquire; its AcquireFunc runs once the response is
// written.
func (c *Conn) acquire(ctx context.Context, p *AcquireParams) (any, func(), error) {
	run, err := c.h.Acquire(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	if run == nil {
		return nil, nil, rerr(CodeFailed, "the driver accepted acquire %q without a function to run it", p.AcquireID)
	}
	actx, cancel := context.WithCancelCause(c.base)
	a := &accepted{cancel: cancel}
	if err := c.register(c.acquires, "acquireId", p.AcquireID, a); err != nil {
		cancel(nil)
		return nil, nil, err
	}
	after := func() {
		c.goRun(func() {
			defer cancel(nil)
			release, err := run(actx)
			if err == nil && actx.Err() != nil {
				// Released (or shut down) while it was pending.
				if release != nil {
					release()
				}
				release, err = nil, context.Cause(actx)
			}
			line := AcquireResultLine{Type: TypeAcquireResult, AcquireID: p.AcquireID, OK: err == nil}
			if err != nil {
				line.Error = outcomeError(actx, err)
				release = nil
			}
			c.mu.Lock()
			a.done, a.release = true, release
			c.mu.Unlock()
			c.writeResult(line)
		})
	}
	return AcceptedResult{Accepted: true}, after, nil
}

func (c *Conn) release(p *ReleaseParams) (any, func(), error) {
	c.mu.Lock()
	a, ok := c.acquires[p.AcquireID]
	var release func()
	pending := false
	if ok {
		release, a.release = a.release, nil
		pending = !a.done
	}
	c.mu.Unlock()
	switch {
	case !ok:
		return nil, nil, rerr(CodeUnknownID, "no acquire %q", p.AcquireID)
	case pending:
		a.cancel(ErrCancelled)
	case release != nil:
		release()
	}
	return Empty{}, nil, nil
}

// shutdown cancels everything in flight, waits for it (bounded), releases
// held acquires, runs Handlers.Shutdown and waits for every goroutine; the
// remaining lines are written. It runs once.
func (c *Conn) shutdown() {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.closing = true
	c.mu.Unlock()
	c.cancelBase()

	// Requests, calls and acquires end on the cancelled context;
	// Handlers.Shutdown unblocks anything that does not.
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(c.shutdownTimeout)
	select {
	case <-done:
	case <-timer.C:
		c.log.Warn("requests still running at shutdown; closing the runtime under them")
	}
	timer.Stop()

	c.mu.Lock()
	var releases []func()
	for _, a := range c.acquires {
		if a.release != nil {
			releases = append(releases, a.release)
			a.release = nil
		}
	}
	c.mu.Unlock()
	for _, r := range releases {
		r()
	}
	if c.h.Shutdown != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.root), c.shutdownTimeout)
		c.h.Shutdown(ctx)
		cancel()
	}
	<-done
	c.flush()
	if err := c.out.sync(); err != nil {
		c.log.Error("writing the last events", "error", err)
	}
	if c.finishHook != nil {
		c.finishHook()
	}
}

// flush returns once every event emitted so far has been written or is
// held to go out with the next line.
func (c *Conn) flush() {
	if c.flushHook != nil {
		c.flushHook()
	}
}

// writeResult writes a call_result or acquire_result line after every
// event emitted so far.
func (c *Conn) writeResult(line any) {
	c.flush()
	if err := c.out.write(line); err != nil {
		c.log.Error("writing a result line", "error", err)
	}
}

// respond writes the response to id (nil: the id could not be read),
// after every event emitted so far.
func (c *Conn) respond(id *int64, result any, err error) {
	c.flush()
	resp := Response{Type: TypeResponse, ID: id}
	if err != nil {
		var re *RemoteError
		if !errors.As(err, &re) || re == nil {
			re = rerr(CodeFailed, "%v", err)
		}
		resp.Error = &RemoteError{Code: re.Code, Message: re.Message}
	} else {
		if result == nil {
			result = Empty{}
		}
		b, merr := json.Marshal(result)
		if merr != nil {
			resp.Error = rerr(CodeFailed, "encoding the result: %v", merr)
		} else {
			resp.Result = b
		}
	}
	if werr := c.out.write(resp); werr != nil {
		c.log.Error("writing a response", "error", werr)
	}
}

// parseRequest reads the envelope of a request line. id is nil when the
// line does not carry a readable id.
func parseRequest(line []byte) (id *int64, method string, params json.RawMessage, err *RemoteError) {
	var env map[string]json.RawMessage
	if e := json.Unmarshal(line, &env); e != nil || env == nil {
		return nil, "", nil, rerr(CodeBadRequest, "not a JSON object: %.200s", bytes.TrimSpace(line))
	}
	rawID, ok := env["id"]
	if !ok {
		return nil, "", nil, rerr(CodeBadRequest, "request without an id")
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(rawID))
	dec.UseNumber()
	if e := dec.Decode(&n); e != nil {
		return nil, "", nil, rerr(CodeBadRequest, "id is not a number: %s", rawID)
	}
	v, e := n.Int64()
	if e != nil || v < 0 {
		return nil, "", nil, rerr(CodeBadRequest, "id is not a non-negative integer: %s", rawID)
	}
	id = &v
	for k := range env {
		if k != "id" && k != "method" && k != "params" {
			return id, "", nil, rerr(CodeBadRequest, "unknown request field %q", k)
		}
	}
	if e := json.Unmarshal(env["method"], &method); e != nil || method == "" {
		return id, "", nil, rerr(CodeBadRequest, "request without a method")
	}
	params = env["params"]
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	if p := bytes.TrimSpace(params); len(p) == 0 || p[0] != '{' {
		return id, method, nil, rerr(CodeBadRequest, "%s: params must be an object", method)
	}
	return id, method, params, nil
}

// decodeParams decodes params strictly: unknown fields are errors.
func decodeParams(params json.RawMessage, v any) *RemoteError {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return rerr(CodeBadRequest, "params: %v", err)
	}
	if dec.More() {
		return rerr(CodeBadRequest, "params: trailing data")
	}
	return nil
}
