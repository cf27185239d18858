package driver

// The API for writing a driver in Go: Handlers, what only the
// implementation knows, and the helpers its handlers use. Conn (conn.go)
// does the rest of the protocol around them.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"
)

// Handlers is the implementation-specific part of a driver: what hello
// announces and one function per method. Conn.Serve does everything the
// protocol prescribes around them (docs/DRIVER.md sections 1 to 5), so a
// handler sees only requests it has to carry out: the capability of the
// method is announced, the params are decoded and valid against the
// method's schema (unknown fields, wrong types, missing fields and values
// out of range were answered bad_request), and start has succeeded.
//
// A handler reports a protocol error by returning a *RemoteError (see
// Errorf); any other error is answered with the code "failed", or
// "shutting_down" once shutdown has begun. Every request except hello,
// start and shutdown runs on its own goroutine, so handlers run
// concurrently, and a handler may block (on the implementation's clock,
// for instance) while clock requests are answered. The context a handler
// gets ends when shutdown begins.
//
// tool.cancel, release and clock.now need no handler: Conn keeps the calls
// and acquires it accepted, and reads the clock through Now.
type Handlers struct {
	// Implementation names the MCP client behind the driver.
	Implementation Implementation
	// Capabilities, Profiles and Eras are what hello announces. Serve
	// refuses to run with an announcement the client would refuse
	// (unknown names, a profile without its capabilities, no era) or with
	// a capability whose handler is nil. Methods of capabilities not
	// announced are answered "unsupported" without calling a handler.
	Capabilities []Capability
	Profiles     []Profile
	Eras         []Era

	// Now reads the implementation's clock as an offset from start: it
	// answers clock.now and clock.advance, and Conn.Emit stamps at_ms with
	// it. Nil means real time since start was received. Required with
	// virtual-clock.
	Now func() time.Duration

	// Start creates the implementation's runtime from the configuration
	// (required). It is called once start's params were checked, including
	// that clock "virtual" needs virtual-clock, and only while no start
	// has succeeded; start is handled before the next request is read.
	// Problems in the configuration are events (config.*), not errors.
	Start func(ctx context.Context, p *StartParams) error
	// SessionOpen opens session p.Session and returns its start report
	// (required). Nil lists and a nil Errors map are sent empty.
	SessionOpen func(ctx context.Context, p *SessionParams) (StartReport, error)
	// SessionClose closes session p.Session (required).
	SessionClose func(ctx context.Context, p *SessionParams) error
	// ToolsList returns the tools session p.Session exposes (required). A
	// tool without an InputSchema is sent with {"type":"object"}.
	ToolsList func(ctx context.Context, p *SessionParams) ([]Tool, error)
	// ToolCall accepts a tool call (required): it checks what refuses the
	// request (unknown_session, say) and returns the function that runs
	// the call, without running it. Serve then refuses a callId used
	// before (duplicate_id), answers {"accepted": true}, runs the CallFunc
	// on its own goroutine and writes its call_result line. An unknown tool
	// is an outcome of the CallFunc (OutcomeUnknownTool), not an error of
	// ToolCall.
	ToolCall func(ctx context.Context, p *ToolCallParams) (CallFunc, error)
	// Acquire accepts an acquire (capability acquire) the way ToolCall
	// accepts a call: it checks the server (unknown_server) and returns
	// the function that acquires it. release is answered by Serve, which
	// calls the release function the AcquireFunc returned, or cancels an
	// acquire still pending.
	Acquire func(ctx context.Context, p *AcquireParams) (AcquireFunc, error)
	// Status returns every configured server (capability status); Serve
	// sorts them by name.
	Status func(ctx context.Context) ([]ServerStatus, error)
	// Reload rediscovers the configuration and reconnects (capability
	// reload).
	Reload func(ctx context.Context) error
	// ServerDisconnect stops server p.Server on purpose (capability
	// disconnect).
	ServerDisconnect func(ctx context.Context, p *ServerParams) error
	// ClockAdvance moves the virtual clock forward by d, firing the timers
	// it passes (capability virtual-clock). After a start with clock
	// "real", Serve answers clock.advance "unsupported" itself.
	ClockAdvance func(ctx context.Context, d time.Duration) error
	// ClockPending returns the time left until each pending timer of the
	// virtual clock fires, soonest first (capability virtual-clock); Serve
	// rounds them up to whole milliseconds.
	ClockPending func(ctx context.Context) ([]time.Duration, error)
	// TimersPending returns the time left until each pending timer of the
	// implementation fires on the real clock, soonest first (capability
	// pending-timers); Serve rounds them up to whole milliseconds.
	TimersPending func(ctx context.Context) ([]time.Duration, error)
	// Shutdown closes the runtime (optional): every session and server,
	// leaving no server process behind. Serve calls it once, at shutdown,
	// at EOF on the requests or when Serve's context ends, after the
	// contexts of handlers, calls and acquires were cancelled, the calls
	// and acquires in flight ended (or ShutdownTimeout passed) and held
	// acquires were released. ctx ends after ShutdownTimeout. The shutdown
	// response is written once it returned and every call and acquire has
	// its result line.
	Shutdown func(ctx context.Context)
}

// CallFunc runs one accepted tool call. ctx is cancelled when the harness
// cancels the call (tool.cancel, with the cause ErrCancelled) or the
// driver shuts down. It returns the result as the agent sees it and, when
// the call failed (rather than the tool answering with isError), an error:
// a *RemoteError whose code is an outcome code (Errorf(OutcomeToolTimeout,
// ...)), or any other error, which is reported as "aborted" when ctx was
// cancelled and "failed" otherwise. With an error, the call_result has
// isError true and, for "aborted", aborted true and no text. A Tool left
// empty is the called name; nil Signals are sent as [].
type CallFunc func(ctx context.Context) (CallOutcome, error)

// AcquireFunc acquires one shared server for an accepted acquire. ctx is
// cancelled by release (cause ErrCancelled) or shutdown. It returns the
// function that drops the reference (nil when there is nothing to drop),
// or an error, classified as for CallFunc. An acquire that succeeds after
// ctx was cancelled is released at once and reported "aborted".
type AcquireFunc func(ctx context.Context) (release func(), err error)

// ErrCancelled is the cause (context.Cause) of the context of a tool call
// cancelled by tool.cancel, or of an acquire cancelled by release.
var ErrCancelled = errors.New("cancelled by the harness")

// Errorf returns the error object of a response (code is an ErrorCode) or
// of a call_result or acquire_result (an OutcomeCode), with a message
// formatted as fmt.Sprintf does.
func Errorf[C ErrorCode | OutcomeCode](code C, format string, args ...any) *RemoteError {
	return &RemoteError{Code: string(code), Message: fmt.Sprintf(format, args...)}
}

// rerr returns a response error.
func rerr(code ErrorCode, format string, args ...any) *RemoteError {
	return Errorf(code, format, args...)
}

// ConnOptions configures a Conn.
type ConnOptions struct {
	// Logger receives the driver's logs; nil discards them. stdout carries
	// protocol lines only: a driver on stdio logs to stderr.
	Logger *slog.Logger
	// ShutdownTimeout bounds, in real time, how long shutdown waits for
	// the requests, calls and acquires in flight before it calls
	// Handlers.Shutdown, and the context of Handlers.Shutdown; zero means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// hello returns what the driver answers to a hello of protocol version
// asked: a harness of an earlier version gets an answer of its version,
// without what later versions added (version 1: eras; version 2:
// pending-timers; version 3: the conventions profile; docs/DRIVER.md
// section 11); every other harness gets ProtocolVersion.
func (h *Handlers) hello(asked string) *HelloResult {
	res := &HelloResult{
		Protocol:       ProtocolVersion,
		Implementation: h.Implementation,
		Capabilities:   nonNilSlice(h.Capabilities),
		Profiles:       nonNilSlice(h.Profiles),
		Eras:           nonNilSlice(h.Eras),
	}
	if asked == ProtocolVersion1 || asked == ProtocolVersion2 || asked == ProtocolVersion3 {
		res.Protocol = asked
		res.Capabilities = slices.DeleteFunc(slices.Clone(res.Capabilities), func(c Capability) bool {
			since := CapabilitySince(c)
			return since != "" && versionNumber(asked) < versionNumber(since)
		})
		res.Profiles = slices.DeleteFunc(slices.Clone(res.Profiles), func(p Profile) bool { return !res.Knows(p) })
	}
	if asked == ProtocolVersion1 {
		res.Eras = nil
	}
	return res
}

// handles reports whether the handler of method is set; methods Conn
// answers itself always are.
func (h *Handlers) handles(method string) bool {
	switch method {
	case MethodStart:
		return h.Start != nil
	case MethodSessionOpen:
		return h.SessionOpen != nil
	case MethodSessionClose:
		return h.SessionClose != nil
	case MethodToolsList:
		return h.ToolsList != nil
	case MethodToolCall:
		return h.ToolCall != nil
	case MethodAcquire:
		return h.Acquire != nil
	case MethodStatus:
		return h.Status != nil
	case MethodReload:
		return h.Reload != nil
	case MethodServerDisconnect:
		return h.ServerDisconnect != nil
	case MethodClockAdvance:
		return h.ClockAdvance != nil
	case MethodClockPending:
		return h.ClockPending != nil
	case MethodTimersPending:
		return h.TimersPending != nil
	}
	// hello, shutdown, tool.cancel, release, clock.now: Conn's own.
	return true
}

// check reports what makes h unusable: an announcement the client would
// refuse, or a method the driver must answer without its handler.
func (h *Handlers) check() error {
	if err := h.hello(ProtocolVersion).validate(); err != nil {
		return err
	}
	for _, m := range Methods() {
		if m.Capability != "" && !h.has(m.Capability) {
			continue
		}
		if !h.handles(m.Name) {
			why := "every driver answers it"
			if m.Capability != "" {
				why = fmt.Sprintf("capability %q is announced", m.Capability)
			}
			return fmt.Errorf("driver: no handler for %s, and %s", m.Name, why)
		}
	}
	if h.has(CapVirtualClock) && h.Now == nil {
		return fmt.Errorf("driver: no Now, and capability %q is announced (the implementation's clock is virtual)", CapVirtualClock)
	}
	return nil
}

// has reports whether h announces capability c.
func (h *Handlers) has(c Capability) bool { return slices.Contains(h.Capabilities, c) }

// nonNilSlice returns s, or an empty slice for nil (a JSON [] rather than
// null), always a copy.
func nonNilSlice[T any](s []T) []T {
	return append(make([]T, 0, len(s)), s...)
}

// LookupEnv looks key up in the environment the implementation's config
// layer sees: start.env when it was given (even {}: then nothing is set),
// else the driver's own. Its signature is os.LookupEnv's.
func (p *StartParams) LookupEnv(key string) (string, bool) {
	if p.Env == nil {
		return os.LookupEnv(key)
	}
	v, ok := p.Env[key]
	return v, ok
}

// Environ returns that environment as "key=value" strings: start.env
// sorted by key when it was given, else os.Environ().
func (p *StartParams) Environ() []string {
	if p.Env == nil {
		return os.Environ()
	}
	out := make([]string, 0, len(p.Env))
	for k, v := range p.Env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
