package host

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readyConn returns the live connection, waiting while the first connect is
// running (a deferred tool's call) and, when RestartWait is set, while a
// restart attempt runs. It fails fast with the seed's codes otherwise.
func (s *server) readyConn(ctx context.Context) (*connection, error) {
	var restartDeadline clock.Timer
	var restartExpired <-chan time.Time
	defer func() {
		if restartDeadline != nil {
			restartDeadline.Stop()
		}
	}()
	for {
		s.mu.Lock()
		ch := s.changed
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, &ServerError{Code: CodeUnavailable, Server: s.name, Kind: ErrClosed}
		case s.conn != nil:
			c := s.conn
			s.mu.Unlock()
			return c, nil
		case s.state == StateBlocked, s.state == StateNeedsAuth:
			err := s.lastErr
			s.mu.Unlock()
			return nil, err
		case s.state == StateDisconnected:
			s.mu.Unlock()
			return nil, &ServerError{Code: CodeUnavailable, Server: s.name, Kind: ErrDisconnected}
		case s.restarting && s.connecting:
			if s.rt.opts.RestartWait <= 0 {
				s.mu.Unlock()
				return nil, restartInProgress(s.name)
			}
			if restartDeadline == nil {
				restartDeadline = s.rt.clock.NewTimer(s.rt.opts.RestartWait)
				restartExpired = restartDeadline.C()
			}
		case s.restarting:
			// Sleeping between attempts: fail with the last cause.
			err := s.lastErr
			s.mu.Unlock()
			if err == nil {
				return nil, restartInProgress(s.name)
			}
			return nil, restartFailed(s.name, err)
		case s.connecting, s.state == StateConnecting && !s.initFailed:
			// First connect running or about to start: wait (bounded by
			// ctx).
		default:
			err := s.lastErr
			s.mu.Unlock()
			return nil, &ServerError{Code: CodeFailed, Server: s.name, Kind: ErrFailed, Cause: err}
		}
		s.mu.Unlock()
		select {
		case <-ch:
		case <-restartExpired:
			return nil, restartInProgress(s.name)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// callTool runs one tools/call under the server's tool timeout. On timeout it
// probes; an unhealthy server is restarted and, unless disabled, the call is
// retried once on the new connection.
//
// ci names the call in events; its tool.call_started is emitted once the
// call's watchdog is armed.
func (s *server) callTool(ctx context.Context, name string, args any, ci *callInfo) (*mcp.CallToolResult, error) {
	defer s.idleProbe.busy()() // idleprobe.go: no idle probe while a call runs
	ctx, mark := s.sessions.markCall(ctx)
	res, err, timedOutOn := s.callOnce(ctx, name, args, ci, true)
	switch {
	case err == nil:
		return res, nil
	case timedOutOn == nil:
		// Not a timeout: what the session strategy makes of it, or the
		// error as it is.
		if res, err, ok := s.sessions.retryCall(ctx, mark, name, args, ci, err); ok {
			return res, err
		}
		return res, err
	}
	if retry, err := s.afterTimeout(ctx, timedOutOn, err); !retry {
		return nil, err
	}
	res, err, _ = s.callOnce(ctx, name, args, ci, false)
	return res, err
}

// callOnce makes one attempt. When the call hit its tool timeout it returns
// the connection it timed out on, so the caller can probe it.
//
// The call runs in the caller's goroutine: the watchdog (the tool timeout)
// is a timer on the clock that cancels the request's context, and the
// connection's end cancels it too.
func (s *server) callOnce(ctx context.Context, name string, args any, ci *callInfo, first bool) (_ *mcp.CallToolResult, _ error, timedOutOn *connection) {
	timeout := s.toolTimeout()
	if d, ok := callTimeout(ctx); ok {
		timeout = d
	}
	reqCtx, cancelReq := context.WithCancelCause(ctx)
	defer cancelReq(nil)
	var timedOut atomic.Bool
	if timeout > 0 {
		wd := s.rt.clock.AfterFunc(timeout, func() {
			timedOut.Store(true)
			cancelReq(errWatchdog)
		})
		defer wd.Stop()
	}
	if first {
		ci.started(s.name)
	}
	timeoutErr := func(cause error) error {
		return &ServerError{Code: CodeToolTimeout, Server: s.name, Kind: ErrToolTimeout, Cause: cause,
			Detail: fmt.Sprintf("tool %q timed out after %s", name, timeout)}
	}
	aborted := func() error { return fmt.Errorf("%w: %w", ErrAborted, context.Cause(ctx)) }

	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		// Waiting for the connection (a deferred tool, or RestartWait)
		// counts against the timeout too.
		var err error
		conn, err = s.readyConn(reqCtx)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil, aborted(), nil
			case timedOut.Load():
				return nil, timeoutErr(err), nil
			}
			return nil, err, nil
		}
	}
	// The request has no deadline of its own: go-sdk sets none, and the
	// watchdog above is the only one, so it always decides first (seed
	// 001's padded request timeout exists to guarantee exactly that).
	stop := context.AfterFunc(conn.ctx, func() { cancelReq(context.Cause(conn.ctx)) })
	defer stop()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if token, done := s.progressToken(ci); token != "" {
		params.SetProgressToken(token)
		defer done()
	}
	res, err := conn.cs.CallTool(reqCtx, params)
	switch {
	case err == nil:
		return res, nil, nil
	case timedOut.Load():
		s.emit(event.ToolTimeout, event.String("call", ci.id), event.String("tool", ci.tool), event.Millis("timeout_ms", timeout))
		return nil, timeoutErr(nil), conn
	case ctx.Err() != nil:
		return nil, aborted(), nil
	case conn.ctx.Err() != nil || isConnectionError(err) || !isProtocolError(err):
		return nil, s.connectionLostError(conn, err), nil
	}
	return nil, err, nil
}

// errWatchdog is the cause when a call's tool timeout fired.
var errWatchdog = errors.New("tool timeout")

func (s *server) connectionLostError(c *connection, cause error) error {
	if c.ctx.Err() != nil {
		cause = context.Cause(c.ctx)
	}
	if errors.Is(cause, errPlannedClose) {
		return &ServerError{Code: CodeRestartInProgress, Server: s.name, Kind: ErrRestartInProgress, Cause: cause}
	}
	return &ServerError{Code: CodeConnectionLost, Server: s.name, Kind: ErrConnectionLost, Cause: cause}
}

func isConnectionError(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) || isEOF(err)
}

type callTimeoutKey struct{}

// WithCallTimeout returns a context that makes CallTool use d as the tool
// timeout of calls made with it, instead of the server's.
func WithCallTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, callTimeoutKey{}, d)
}

func callTimeout(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(callTimeoutKey{}).(time.Duration)
	return d, ok
}

// callInfo names a call in events: the session making it, the call's id and
// the exposed tool name.
type callInfo struct {
	sess     *Session
	id, tool string
}

// started emits tool.call_started.
func (ci *callInfo) started(server string) {
	ci.sess.emit(server, event.ToolCallStarted, event.String("call", ci.id), event.String("tool", ci.tool))
}

// WithCallID returns a context whose CallTool uses id to name the call in
// events (tool.call_started, tool.call_finished, tool.timeout), so a harness
// can match events to its own calls.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

type callIDKey struct{}

func callID(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(callIDKey{}).(string)
	return id, ok && id != ""
}

// isProtocolError reports whether err is an answer from the server (a
// JSON-RPC error) rather than a failure of the transport. Any other error of
// a call means the connection failed under it: over HTTP the SDK reports a
// server that went away in several ways, not only as ErrConnectionClosed.
func isProtocolError(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr)
}
