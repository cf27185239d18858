package driver

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
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/clock/clocktest"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// DefaultShutdownTimeout bounds, in real time, how long shutdown waits for
// the runtime to stop gracefully before it kills the remaining processes.
const DefaultShutdownTimeout = 5 * time.Second

// ServeOptions configures Serve.
type ServeOptions struct {
	// Implementation is what hello reports; the zero value means
	// {"mcplife", <module version>}.
	Implementation Implementation
	// Capabilities, when not nil, replaces the announced capabilities
	// (every capability by default). Methods needing a capability that is
	// not announced answer "unsupported".
	Capabilities []Capability
	// Profiles, when not nil, replaces the claimed profiles (every profile
	// by default).
	Profiles []Profile
	// Configure, when set, may change the runtime options the driver built
	// from start's params just before the runtime is created. The
	// conformance suite uses it to build deliberately broken variants.
	// Clock is the driver's: replacing it detaches the runtime from
	// clock.advance. Events may be replaced; the driver streams whichever
	// recorder is set when Configure returns.
	Configure func(p *StartParams, o *host.Options) error
	// Logger receives the driver's and the runtime's logs; nil discards
	// them.
	Logger *slog.Logger
	// ShutdownTimeout bounds, in real time, the graceful part of shutdown;
	// zero means DefaultShutdownTimeout. Processes still running then are
	// killed.
	ShutdownTimeout time.Duration
}

// Serve runs the reference driver: it reads requests from in and writes
// response, event, call_result and acquire_result lines to out, with the
// reference runtime (runtime/host) behind them.
//
// Serve returns after a shutdown request has been answered (nil), when in
// reaches EOF (nil), or when ctx is done (ctx's error). In every case it
// first closes the runtime, so no server process is left running, and waits
// for every goroutine it started — except that when ctx ends during a read
// that closing in (if it is an io.Closer) does not interrupt, such as a
// blocking stdin, that read's goroutine ends only when the read returns.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts ServeOptions) error {
	d := newDriver(ctx, opts, out)
	type read struct {
		line []byte
		err  error
	}
	// The reader reads one line per request on next, so that it is idle,
	// not blocked in a read, when Serve returns after shutdown or EOF.
	next := make(chan struct{})
	lines := make(chan read, 1)
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for range next {
			line, err := r.ReadBytes('\n')
			lines <- read{line, err}
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
			if c, ok := in.(io.Closer); ok {
				_ = c.Close()
			}
			d.teardown()
			return ctx.Err()
		}
		if len(bytes.TrimSpace(rd.line)) > 0 {
			if d.dispatch(rd.line) {
				return nil
			}
		}
		if rd.err != nil {
			d.teardown()
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

// driver is the state of one Serve.
type driver struct {
	opts ServeOptions
	log  *slog.Logger
	out  *lineWriter
	caps map[Capability]bool

	root       context.Context // Serve's ctx
	base       context.Context // ends at teardown: aborts calls, acquires, requests
	cancelBase context.CancelFunc
	wg         sync.WaitGroup

	mu       sync.Mutex
	closing  bool
	starting bool
	rt       *host.Runtime
	clk      clock.Clock
	fake     *clocktest.Fake // nil with the real clock
	origin   time.Time
	fwd      *forwarder
	sessions map[string]*host.Session // nil value: opening
	calls    map[string]*callEntry
	acquires map[string]*acquireEntry
}

type callEntry struct {
	cancel context.CancelCauseFunc
	done   bool
}

type acquireEntry struct {
	cancel  context.CancelCauseFunc
	release func()
	done    bool
}

// errCancelled is the cause of a call or acquire cancelled by the harness.
var errCancelled = errors.New("cancelled by the harness")

func newDriver(ctx context.Context, opts ServeOptions, out io.Writer) *driver {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Implementation.Name == "" {
		opts.Implementation = Implementation{Name: "mcplife", Version: moduleVersion()}
	}
	if opts.Capabilities == nil {
		for _, c := range Capabilities() {
			opts.Capabilities = append(opts.Capabilities, c.Name)
		}
	}
	if opts.Profiles == nil {
		for _, p := range Profiles() {
			opts.Profiles = append(opts.Profiles, p.Name)
		}
	}
	d := &driver{
		opts:     opts,
		log:      opts.Logger,
		out:      &lineWriter{w: out},
		caps:     map[Capability]bool{},
		root:     ctx,
		sessions: map[string]*host.Session{},
		calls:    map[string]*callEntry{},
		acquires: map[string]*acquireEntry{},
	}
	for _, c := range opts.Capabilities {
		d.caps[c] = true
	}
	d.base, d.cancelBase = context.WithCancel(ctx)
	return d
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// rerr returns a response error.
func rerr(code ErrorCode, format string, args ...any) *RemoteError {
	return &RemoteError{Code: string(code), Message: fmt.Sprintf(format, args...)}
}

// handler runs one method. after, when not nil, runs once the response has
// been written.
type handler func(ctx context.Context, params json.RawMessage) (result any, after func(), err error)

func (d *driver) handlers() map[string]handler {
	return map[string]handler{
		MethodStart:            d.start,
		MethodSessionOpen:      d.sessionOpen,
		MethodSessionClose:     d.sessionClose,
		MethodToolsList:        d.toolsList,
		MethodToolCall:         d.toolCall,
		MethodToolCancel:       d.toolCancel,
		MethodAcquire:          d.acquire,
		MethodRelease:          d.release,
		MethodStatus:           d.status,
		MethodReload:           d.reload,
		MethodServerDisconnect: d.serverDisconnect,
		MethodClockAdvance:     d.clockAdvance,
		MethodClockNow:         d.clockNow,
		MethodClockPending:     d.clockPending,
	}
}

// dispatch handles one request line. It reports whether the driver shut
// down.
func (d *driver) dispatch(line []byte) bool {
	id, method, params, perr := parseRequest(line)
	if perr != nil {
		d.respond(id, nil, perr)
		return false
	}
	d.log.Debug("request", "id", *id, "method", method)
	switch method {
	case MethodHello:
		var p HelloParams
		if err := decodeParams(params, &p); err != nil {
			d.respond(id, nil, err)
			return false
		}
		d.respond(id, &HelloResult{
			Protocol:       ProtocolVersion,
			Implementation: d.opts.Implementation,
			Capabilities:   slices.Clone(d.opts.Capabilities),
			Profiles:       slices.Clone(d.opts.Profiles),
		}, nil)
		return false
	case MethodShutdown:
		if err := decodeParams(params, &Empty{}); err != nil {
			d.respond(id, nil, err)
			return false
		}
		d.teardown()
		d.respond(id, Empty{}, nil)
		return true
	}
	if method == MethodStart {
		// start never waits on the clock; handling it before reading on
		// lets a harness pipeline requests after it.
		res, _, err := d.start(d.base, params)
		d.respond(id, res, err)
		return false
	}
	h, ok := d.handlers()[method]
	if !ok {
		d.respond(id, nil, rerr(CodeUnknownMethod, "unknown method %q", method))
		return false
	}
	for _, m := range Methods() {
		if m.Name == method && m.Capability != "" && !d.caps[m.Capability] {
			d.respond(id, nil, rerr(CodeUnsupported, "%s needs capability %q, which this driver does not announce", method, m.Capability))
			return false
		}
	}
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		d.respond(id, nil, rerr(CodeShuttingDown, "the driver is shutting down"))
		return false
	}
	d.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		res, after, err := h(d.base, params)
		if err != nil && d.base.Err() != nil {
			var re *RemoteError
			switch {
			case !errors.As(err, &re):
				err = rerr(CodeShuttingDown, "interrupted by shutdown: %v", err)
			case re.Code == string(CodeFailed):
				err = rerr(CodeShuttingDown, "interrupted by shutdown: %s", re.Message)
			}
		}
		d.respond(id, res, err)
		if after != nil {
			after()
		}
	}()
	return false
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

// respond writes the response to id, after every event emitted so far.
func (d *driver) respond(id *int64, result any, err error) {
	d.flushEvents()
	resp := Response{Type: TypeResponse, ID: id}
	if err != nil {
		var re *RemoteError
		if !errors.As(err, &re) {
			re = rerr(CodeFailed, "%v", err)
		}
		resp.Error = re
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
	d.out.write(resp)
}

// flushEvents waits until every event emitted so far has been written.
func (d *driver) flushEvents() {
	d.mu.Lock()
	f := d.fwd
	d.mu.Unlock()
	if f != nil {
		f.flush()
	}
}

// goRun runs f in a goroutine that teardown waits for.
func (d *driver) goRun(f func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
}

// runtime returns the runtime, or not_started.
func (d *driver) runtime() (*host.Runtime, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt == nil {
		return nil, rerr(CodeNotStarted, "start has not succeeded")
	}
	return d.rt, nil
}

func (d *driver) session(name string) (*host.Runtime, *host.Session, error) {
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sess := d.sessions[name]
	if sess == nil {
		if _, opening := d.sessions[name]; opening {
			return nil, nil, rerr(CodeUnknownSession, "session %q is still opening", name)
		}
		return nil, nil, rerr(CodeUnknownSession, "no open session %q", name)
	}
	return rt, sess, nil
}

// teardown cancels everything in flight, closes the runtime and waits for
// every goroutine; the remaining events are written.
func (d *driver) teardown() {
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return
	}
	d.closing = true
	d.mu.Unlock()
	d.cancelBase()

	// In-flight requests, calls and acquires end on the cancelled context;
	// the runtime's Close below unblocks anything that does not.
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(d.opts.ShutdownTimeout)
	select {
	case <-done:
	case <-timer.C:
		d.log.Warn("requests still running at shutdown; closing the runtime under them")
	}
	timer.Stop()

	d.mu.Lock()
	rt := d.rt
	var releases []func()
	for _, a := range d.acquires {
		if a.release != nil {
			releases = append(releases, a.release)
			a.release = nil
		}
	}
	d.mu.Unlock()
	for _, r := range releases {
		r()
	}
	if rt != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(d.root), d.opts.ShutdownTimeout)
		if err := rt.Close(ctx); err != nil {
			d.log.Warn("closing the runtime", "error", err)
		}
		cancel()
	}
	<-done
	d.mu.Lock()
	f := d.fwd
	d.mu.Unlock()
	if f != nil {
		f.stop()
	}
}

// ---- start ----

func (d *driver) start(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p StartParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	var clk clock.Clock
	var fake *clocktest.Fake
	switch p.Clock {
	case ClockVirtual:
		if !d.caps[CapVirtualClock] {
			return nil, nil, rerr(CodeUnsupported, "clock %q needs capability %q", p.Clock, CapVirtualClock)
		}
		fake = clocktest.New()
		clk = fake
	case ClockReal:
		clk = clock.Real{}
	default:
		return nil, nil, rerr(CodeBadRequest, "clock must be %q or %q, not %q", ClockVirtual, ClockReal, p.Clock)
	}
	files := make([]config.File, 0, len(p.ConfigFiles))
	for i, f := range p.ConfigFiles {
		if f.Path == "" {
			return nil, nil, rerr(CodeBadRequest, "configFiles[%d]: path is required", i)
		}
		level := config.Level(f.Level)
		if level != config.LevelProject && level != config.LevelUser {
			return nil, nil, rerr(CodeBadRequest, "configFiles[%d]: level must be \"project\" or \"user\", not %q", i, f.Level)
		}
		files = append(files, config.File{Path: f.Path, Level: level, Provider: f.Provider})
	}
	for name, raw := range p.Inline {
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			return nil, nil, rerr(CodeBadRequest, "inline[%q]: a server must be a JSON object", name)
		}
	}
	hopts := host.Options{
		Clock:  clk,
		Logger: d.log,
		Discovery: config.Options{
			ProjectDir:        p.Workspace,
			HomeDir:           p.Home,
			SkipProjectConfig: p.SkipProjectConfig,
			Files:             files,
			Inline:            p.Inline,
		},
		Trusted:  p.Trusted,
		CacheDir: p.CacheDir,
	}
	if p.CredentialsFile != "" {
		hopts.Credentials = config.FileCredentials{Path: p.CredentialsFile}
	}
	if p.Env != nil {
		env := copyEnv(p.Env)
		hopts.Discovery.Env = func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		}
	}
	if err := applyOptions(p.Options, &hopts); err != nil {
		return nil, nil, err
	}

	d.mu.Lock()
	if d.rt != nil || d.starting {
		d.mu.Unlock()
		return nil, nil, rerr(CodeAlreadyStarted, "start was already called")
	}
	d.starting = true
	d.mu.Unlock()

	origin := clk.Now()
	rec := event.NewRecorder(event.RecorderOptions{Clock: clk, Logger: d.log})
	hopts.Events = rec
	fail := func(err error) (any, func(), error) {
		d.mu.Lock()
		d.starting = false
		f := d.fwd
		d.fwd = nil
		d.mu.Unlock()
		if f != nil {
			f.stop()
		}
		return nil, nil, err
	}
	if d.opts.Configure != nil {
		if err := d.opts.Configure(&p, &hopts); err != nil {
			return fail(rerr(CodeFailed, "configure: %v", err))
		}
	}
	if hopts.Events == nil {
		hopts.Events = rec
	}
	// Events emitted while the runtime is created (config diagnostics) are
	// written before the response.
	f := newForwarder(hopts.Events, d.out)
	d.mu.Lock()
	d.fwd = f
	d.mu.Unlock()
	rt, err := host.New(hopts)
	if err != nil {
		return fail(rerr(CodeFailed, "start: %v", err))
	}
	d.mu.Lock()
	d.starting = false
	d.rt, d.clk, d.fake, d.origin = rt, clk, fake, origin
	d.mu.Unlock()
	return Empty{}, nil, nil
}

func copyEnv(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// applyOptions maps start's options onto host.Options.
func applyOptions(o *StartOptions, h *host.Options) error {
	if o == nil {
		return nil
	}
	nonNeg := func(name string, v *int64) error {
		if v != nil && *v < 0 {
			return rerr(CodeBadRequest, "options.%s must be >= 0", name)
		}
		return nil
	}
	positive := func(name string, v *int64) error {
		if v != nil && *v <= 0 {
			return rerr(CodeBadRequest, "options.%s must be > 0", name)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		v    *int64
		pos  bool
	}{
		{"startupGateMs", o.StartupGateMs, false},
		{"toolTimeoutMs", o.ToolTimeoutMs, false},
		{"probeTimeoutMs", o.ProbeTimeoutMs, true},
		{"unregisterGraceMs", o.UnregisterGraceMs, false},
		{"stabilityWindowMs", o.StabilityWindowMs, true},
		{"acquireTimeoutMs", o.AcquireTimeoutMs, true},
		{"idleTimeoutMs", o.IdleTimeoutMs, false},
		{"restartWaitMs", o.RestartWaitMs, false},
	} {
		check := nonNeg
		if c.pos {
			check = positive
		}
		if err := check(c.name, c.v); err != nil {
			return err
		}
	}
	if o.ConnectConcurrency != nil && *o.ConnectConcurrency <= 0 {
		return rerr(CodeBadRequest, "options.connectConcurrency must be > 0")
	}
	if o.MaxResultChars != nil && *o.MaxResultChars <= 0 {
		return rerr(CodeBadRequest, "options.maxResultChars must be > 0")
	}
	// The host treats zero as "default" and a negative value as "none" for
	// these; the protocol's 0 means "none".
	zeroMeansNone := func(v int64) time.Duration {
		if v == 0 {
			return -1
		}
		return ms(v)
	}
	if o.StartupGateMs != nil {
		h.StartupGate = zeroMeansNone(*o.StartupGateMs)
	}
	if o.LateRegistration != nil {
		h.LateRegistration = *o.LateRegistration
	}
	if o.ToolTimeoutMs != nil {
		h.ToolTimeout = zeroMeansNone(*o.ToolTimeoutMs)
	}
	if o.ProbeTimeoutMs != nil {
		h.ProbeTimeout = ms(*o.ProbeTimeoutMs)
	}
	if o.UnregisterGraceMs != nil {
		h.UnregisterGrace = zeroMeansNone(*o.UnregisterGraceMs)
	}
	if o.StabilityWindowMs != nil {
		h.StabilityWindow = ms(*o.StabilityWindowMs)
	}
	if o.AcquireTimeoutMs != nil {
		h.AcquireTimeout = ms(*o.AcquireTimeoutMs)
	}
	if o.IdleTimeoutMs != nil {
		h.IdleTimeout = ms(*o.IdleTimeoutMs)
	}
	if o.RestartWaitMs != nil {
		h.RestartWait = ms(*o.RestartWaitMs)
	}
	if o.ConnectConcurrency != nil {
		h.ConnectConcurrency = *o.ConnectConcurrency
	}
	if o.NoRetryAfterRestart != nil {
		h.NoRetryAfterRestart = *o.NoRetryAfterRestart
	}
	if o.MaxResultChars != nil {
		h.MaxResultChars = *o.MaxResultChars
	}
	return nil
}

// ---- sessions and tools ----

func (d *driver) sessionOpen(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p SessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	if p.Session == "" {
		return nil, nil, rerr(CodeBadRequest, "session is required")
	}
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	if _, ok := d.sessions[p.Session]; ok {
		d.mu.Unlock()
		return nil, nil, rerr(CodeSessionExists, "session %q is open or opening", p.Session)
	}
	d.sessions[p.Session] = nil
	d.mu.Unlock()
	sess, err := rt.OpenSession(ctx, host.SessionOptions{Name: p.Session})
	d.mu.Lock()
	if err != nil {
		delete(d.sessions, p.Session)
		d.mu.Unlock()
		return nil, nil, rerr(CodeFailed, "session.open: %v", err)
	}
	d.sessions[p.Session] = sess
	d.mu.Unlock()
	rep := sess.StartReport()
	out := StartReport{
		Ready:     nonNil(rep.Ready),
		Failed:    nonNil(rep.Failed),
		Deferred:  nonNil(rep.Deferred),
		Late:      nonNil(append(slices.Clone(rep.Late), rep.Held...)),
		Errors:    map[string]string{},
		ElapsedMs: rep.Elapsed.Milliseconds(),
	}
	for name, e := range rep.Errors {
		if e != nil {
			out.Errors[name] = e.Error()
		}
	}
	return SessionOpenResult{Report: out}, nil, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (d *driver) sessionClose(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p SessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	_, sess, err := d.session(p.Session)
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	delete(d.sessions, p.Session)
	d.mu.Unlock()
	sess.Close(ctx)
	return Empty{}, nil, nil
}

func (d *driver) toolsList(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p SessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	_, sess, err := d.session(p.Session)
	if err != nil {
		return nil, nil, err
	}
	tools := sess.Tools()
	out := ToolsListResult{Tools: make([]Tool, 0, len(tools))}
	for _, t := range tools {
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil || bytes.Equal(schema, []byte("null")) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out.Tools = append(out.Tools, Tool{
			Name:             t.Name,
			Server:           t.Server,
			Tool:             t.MCPName,
			Description:      t.Description,
			Deferred:         t.Deferred,
			RequiresApproval: t.RequiresApproval,
			InputSchema:      schema,
		})
	}
	return out, nil, nil
}

// ---- tool calls ----

func (d *driver) toolCall(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p ToolCallParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	switch {
	case p.CallID == "":
		return nil, nil, rerr(CodeBadRequest, "callId is required")
	case p.Tool == "":
		return nil, nil, rerr(CodeBadRequest, "tool is required")
	case p.TimeoutMs != nil && *p.TimeoutMs < 0:
		return nil, nil, rerr(CodeBadRequest, "timeoutMs must be >= 0")
	}
	args := map[string]any{}
	if len(p.Arguments) > 0 {
		if err := json.Unmarshal(p.Arguments, &args); err != nil || args == nil {
			return nil, nil, rerr(CodeBadRequest, "arguments must be a JSON object")
		}
	}
	_, sess, err := d.session(p.Session)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithCancelCause(d.base)
	cctx = host.WithCallID(cctx, p.CallID)
	if p.TimeoutMs != nil {
		cctx = host.WithCallTimeout(cctx, ms(*p.TimeoutMs))
	}
	entry := &callEntry{cancel: cancel}
	d.mu.Lock()
	if _, dup := d.calls[p.CallID]; dup {
		d.mu.Unlock()
		cancel(nil)
		return nil, nil, rerr(CodeDuplicateID, "callId %q was used before", p.CallID)
	}
	d.calls[p.CallID] = entry
	d.mu.Unlock()
	after := func() {
		d.goRun(func() {
			defer cancel(nil)
			res, err := sess.CallTool(cctx, p.Tool, args)
			line := callResultLine(p.CallID, p.Tool, res, err)
			d.mu.Lock()
			entry.done = true
			d.mu.Unlock()
			d.flushEvents()
			d.out.write(line)
		})
	}
	return AcceptedResult{Accepted: true}, after, nil
}

// callResultLine maps a host call outcome onto the protocol.
func callResultLine(callID, tool string, r bridge.Result, err error) CallResultLine {
	out := CallOutcome{
		Text:          r.Text,
		IsError:       r.IsError,
		Aborted:       r.Aborted,
		Code:          r.Code,
		Truncated:     r.Truncated,
		OriginalChars: r.OriginalChars,
		Signals:       nonNil(slices.Clone(r.Signals)),
		Server:        r.Server,
		Tool:          r.Tool,
	}
	if out.Tool == "" {
		out.Tool = tool
	}
	line := CallResultLine{Type: TypeCallResult, CallID: callID, Result: out}
	if err == nil {
		return line
	}
	code := outcomeCode(err)
	line.Result.IsError = true
	if code == OutcomeAborted {
		line.Result.Aborted = true
		line.Result.Text = ""
	}
	var se *host.ServerError
	if line.Result.Code == "" && errors.As(err, &se) {
		line.Result.Code = se.Code
	}
	line.Error = &RemoteError{Code: string(code), Message: err.Error()}
	return line
}

// outcomeCode classifies a call or acquire failure.
func outcomeCode(err error) OutcomeCode {
	var se *host.ServerError
	coded := errors.As(err, &se)
	if errors.Is(err, host.ErrAborted) || errors.Is(err, errCancelled) ||
		(!coded && errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)) {
		return OutcomeAborted
	}
	if coded {
		for _, c := range OutcomeCodes() {
			if string(c.Code) == se.Code && strings.HasPrefix(se.Code, "mcp_") {
				return c.Code
			}
		}
	}
	switch {
	case errors.Is(err, host.ErrUnknownTool):
		return OutcomeUnknownTool
	case errors.Is(err, host.ErrClosed):
		return OutcomeClosed
	case errors.Is(err, host.ErrToolTimeout):
		return OutcomeToolTimeout
	case errors.Is(err, host.ErrBlocked):
		return OutcomeBlocked
	case errors.Is(err, host.ErrUnavailable), errors.Is(err, host.ErrDisconnected):
		return OutcomeUnavailable
	case errors.Is(err, host.ErrConnectionLost):
		return OutcomeConnectionLost
	case errors.Is(err, host.ErrRestartInProgress):
		return OutcomeRestartInProgress
	case errors.Is(err, host.ErrRestartFailed):
		return OutcomeRestartFailed
	case errors.Is(err, host.ErrFailed):
		return OutcomeServerFailed
	}
	return OutcomeFailed
}

func (d *driver) toolCancel(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p CancelParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	if _, err := d.runtime(); err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	entry, ok := d.calls[p.CallID]
	running := ok && !entry.done
	d.mu.Unlock()
	if !ok {
		return nil, nil, rerr(CodeUnknownID, "no tool call %q", p.CallID)
	}
	if running {
		entry.cancel(errCancelled)
	}
	return CancelResult{Running: running}, nil, nil
}

// ---- acquire ----

func (d *driver) acquire(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p AcquireParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	if p.AcquireID == "" || p.Server == "" {
		return nil, nil, rerr(CodeBadRequest, "acquireId and server are required")
	}
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	if !configured(rt, p.Server) {
		return nil, nil, rerr(CodeUnknownServer, "no enabled server %q", p.Server)
	}
	actx, cancel := context.WithCancelCause(d.base)
	entry := &acquireEntry{cancel: cancel}
	d.mu.Lock()
	if _, dup := d.acquires[p.AcquireID]; dup {
		d.mu.Unlock()
		cancel(nil)
		return nil, nil, rerr(CodeDuplicateID, "acquireId %q was used before", p.AcquireID)
	}
	d.acquires[p.AcquireID] = entry
	d.mu.Unlock()
	after := func() {
		d.goRun(func() {
			defer cancel(nil)
			release, err := rt.Acquire(actx, p.Server)
			if err == nil && actx.Err() != nil {
				// Released (or shut down) while it was pending.
				release()
				release = nil
				err = context.Cause(actx)
			}
			line := AcquireResultLine{Type: TypeAcquireResult, AcquireID: p.AcquireID, OK: err == nil}
			if err != nil {
				if actx.Err() != nil {
					err = fmt.Errorf("%w: %w", err, context.Cause(actx))
				}
				line.Error = &RemoteError{Code: string(outcomeCode(err)), Message: err.Error()}
			}
			d.mu.Lock()
			entry.done = true
			entry.release = release
			d.mu.Unlock()
			d.flushEvents()
			d.out.write(line)
		})
	}
	return AcceptedResult{Accepted: true}, after, nil
}

func configured(rt *host.Runtime, name string) bool {
	cfg := rt.Config()
	if cfg == nil {
		return false
	}
	for _, s := range cfg.Servers {
		if s.Name == name {
			return true
		}
	}
	return false
}

func (d *driver) release(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p ReleaseParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	if _, err := d.runtime(); err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	entry, ok := d.acquires[p.AcquireID]
	var release func()
	pending := false
	if ok {
		release, entry.release = entry.release, nil
		pending = !entry.done
	}
	d.mu.Unlock()
	switch {
	case !ok:
		return nil, nil, rerr(CodeUnknownID, "no acquire %q", p.AcquireID)
	case pending:
		entry.cancel(errCancelled)
	case release != nil:
		release()
	}
	return Empty{}, nil, nil
}

// ---- status, reload, disconnect ----

func (d *driver) status(ctx context.Context, params json.RawMessage) (any, func(), error) {
	if err := decodeParams(params, &Empty{}); err != nil {
		return nil, nil, err
	}
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	origin := d.origin
	d.mu.Unlock()
	list := rt.Status()
	out := StatusResult{Servers: make([]ServerStatus, 0, len(list))}
	for _, s := range list {
		st := ServerStatus{
			Name:            s.Name,
			State:           string(s.State),
			Transport:       string(s.Transport),
			Tools:           s.Tools,
			Deferred:        s.Deferred,
			Error:           s.Error,
			Stderr:          s.Stderr,
			Source:          Source{File: s.Source.File, Level: string(s.Source.Level), Provider: s.Source.Provider},
			Shared:          s.Shared,
			Refs:            s.Refs,
			PID:             s.PID,
			RestartAttempts: s.RestartAttempts,
			Policy:          s.Policy,
			Warnings:        s.Warnings,
			SessionReinits:  s.SessionReinits,
			StreamResumes:   s.StreamResumes,
		}
		if !s.ConnectedSince.IsZero() {
			at := max(s.ConnectedSince.Sub(origin).Milliseconds(), 0)
			st.ConnectedAtMs = &at
		}
		out.Servers = append(out.Servers, st)
	}
	return out, nil, nil
}

func (d *driver) reload(ctx context.Context, params json.RawMessage) (any, func(), error) {
	if err := decodeParams(params, &Empty{}); err != nil {
		return nil, nil, err
	}
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	if err := rt.Reload(ctx); err != nil {
		return nil, nil, rerr(CodeFailed, "reload: %v", err)
	}
	return Empty{}, nil, nil
}

func (d *driver) serverDisconnect(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p ServerParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	if !configured(rt, p.Server) {
		return nil, nil, rerr(CodeUnknownServer, "no enabled server %q", p.Server)
	}
	if err := rt.DisconnectServer(ctx, p.Server); err != nil {
		return nil, nil, rerr(CodeFailed, "server.disconnect: %v", err)
	}
	return Empty{}, nil, nil
}

// ---- clock ----

func (d *driver) clockState() (clock.Clock, *clocktest.Fake, time.Time, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt == nil {
		return nil, nil, time.Time{}, rerr(CodeNotStarted, "start has not succeeded")
	}
	return d.clk, d.fake, d.origin, nil
}

func (d *driver) clockAdvance(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p AdvanceParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	if p.Ms < 0 {
		return nil, nil, rerr(CodeBadRequest, "ms must be >= 0")
	}
	clk, fake, origin, err := d.clockState()
	if err != nil {
		return nil, nil, err
	}
	if fake == nil {
		return nil, nil, rerr(CodeUnsupported, "clock.advance needs start with clock %q", ClockVirtual)
	}
	fake.Advance(ms(p.Ms))
	return ClockResult{NowMs: clk.Since(origin).Milliseconds()}, nil, nil
}

func (d *driver) clockNow(ctx context.Context, params json.RawMessage) (any, func(), error) {
	if err := decodeParams(params, &Empty{}); err != nil {
		return nil, nil, err
	}
	clk, _, origin, err := d.clockState()
	if err != nil {
		return nil, nil, err
	}
	return ClockResult{NowMs: clk.Since(origin).Milliseconds()}, nil, nil
}

func (d *driver) clockPending(ctx context.Context, params json.RawMessage) (any, func(), error) {
	if err := decodeParams(params, &Empty{}); err != nil {
		return nil, nil, err
	}
	_, fake, _, err := d.clockState()
	if err != nil {
		return nil, nil, err
	}
	if fake == nil {
		return nil, nil, rerr(CodeUnsupported, "clock.pending needs start with clock %q", ClockVirtual)
	}
	pending := fake.Pending()
	out := PendingResult{TimersMs: make([]int64, len(pending))}
	for i, p := range pending {
		// Rounded up, so advancing by the value fires the timer.
		out.TimersMs[i] = int64(math.Ceil(float64(max(p, 0)) / float64(time.Millisecond)))
	}
	return out, nil, nil
}
