package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// remoteSessions is the session strategy of a remote server (sessions.go):
// a session can expire (404) and is re-initialized, a credential can be
// rejected (needs-auth), the server can ask to be left alone
// (Retry-After), and a request the server never saw is sent again on the
// new session. Its fields are guarded by server.mu.
type remoteSessions struct {
	s          *server
	reinits    int           // sessions re-initialized after an expiry
	resumes    int           // dropped streams resumed
	lastReinit time.Time     // when the last re-initialization started
	retryAfter time.Duration // Retry-After the next restart delay honours
	oauth      *oauthClient  // the OAuth flow of an auth block with a grant (oauth.go)
}

// ErrAuthRequired: the server rejected the credential and it could not be
// refreshed; the server waits for the user (a Reload) and is not restarted.
var ErrAuthRequired = errors.New("server needs authorization")

// CodeAuthRequired is the error code of calls to a server that needs
// authorization.
const CodeAuthRequired = "mcp_auth_required"

// StateNeedsAuth is the state of a server whose credential was rejected and
// could not be refreshed.
const StateNeedsAuth State = "needs-auth"

// retryAfterError is a connect failure after the server asked to be left
// alone for after (Retry-After, capped).
type retryAfterError struct {
	after time.Duration
	err   error
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// connectErr names what the HTTP layer saw behind a failed connect.
func (r *remoteSessions) connectErr(rc *remoteConn, err error) error {
	s := r.s
	if rc == nil {
		return err
	}
	err = withReadFailure(err, rc.boundFailure())
	if authErr := rc.authRequired(); authErr != nil {
		return &ServerError{Code: CodeAuthRequired, Server: s.name, Kind: ErrAuthRequired, Cause: fmt.Errorf("%w (%v)", authErr, err)}
	}
	if ra := rc.lastRetryAfter(); ra > 0 {
		return &retryAfterError{after: ra, err: err}
	}
	return err
}

// noteFailureLocked records what a failed attempt means for a remote
// server; it reports whether it set the state.
func (r *remoteSessions) noteFailureLocked(err error) bool {
	s := r.s
	var ra *retryAfterError
	if errors.As(err, &ra) {
		r.retryAfter = ra.after
	}
	if errors.Is(err, ErrAuthRequired) {
		s.setStateLocked(StateNeedsAuth)
		return true
	}
	return false
}

// takeRetryAfterLocked returns the Retry-After the next restart delay must
// honour, once.
func (r *remoteSessions) takeRetryAfterLocked() time.Duration {
	ra := r.retryAfter
	r.retryAfter = 0
	return ra
}

// lost handles the end of a remote connection whose HTTP layer saw a
// rejected credential or an expired session; it reports whether it did.
func (r *remoteSessions) lost(c *connection, cause error) bool {
	s := r.s
	if c.remote == nil {
		return false
	}
	rc := c.remote
	if authErr := rc.authRequired(); authErr != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		defer c.markLost()
		if s.conn != c || s.closed {
			return true
		}
		s.conn = nil
		s.lastErr = &ServerError{Code: CodeAuthRequired, Server: s.name, Kind: ErrAuthRequired, Cause: authErr}
		s.lastErrAt = s.rt.clock.Now()
		s.emit(event.TransportClosed, event.String("transport", string(s.cfg.EffectiveType())), event.Err(cause))
		s.startGraceLocked()
		s.setStateLocked(StateNeedsAuth)
		return true
	}
	if !rc.sessionExpired() && !errors.Is(cause, mcp.ErrSessionMissing) {
		return false
	}
	s.mu.Lock()
	if s.conn != c || s.closed {
		s.mu.Unlock()
		c.markLost()
		return true
	}
	s.conn = nil
	s.lastErr = fmt.Errorf("%w: %w", ErrConnectionLost, cause)
	s.lastErrAt = s.rt.clock.Now()
	s.emit(event.TransportClosed, event.String("transport", string(s.cfg.EffectiveType())), event.Err(cause))
	s.startGraceLocked()
	again := !r.lastReinit.IsZero() && s.rt.clock.Since(r.lastReinit) < s.rt.opts.StabilityWindow
	if again || s.restarting {
		s.setStateLocked(StateFailed)
		s.mu.Unlock()
		s.emit(event.RemoteSessionReinitFailed, event.String("error", "the session expired again within the stability window"))
		c.markLost()
		// The 404 ended the connection: restart.* reason transport-exit.
		s.triggerRestart("transport-exit", nil)
		return true
	}
	r.lastReinit = s.rt.clock.Now()
	s.restarting = true
	s.setStateLocked(StateRestarting)
	s.mu.Unlock()
	s.rt.goRun(func() { r.reinitialize(c) })
	return true
}

// reinitialize replaces the expired session of c with a new one, at once and
// outside the restart policy; when that fails the policy takes over.
func (r *remoteSessions) reinitialize(c *connection) {
	s := r.s
	defer c.markLost()
	err := s.attempt(s.ctx, 0)
	s.mu.Lock()
	s.attempts++
	s.restarting = false
	tools := len(s.published)
	if err == nil {
		r.reinits++
	} else if !errors.Is(err, ErrAuthRequired) && !errors.Is(err, ErrBlocked) {
		s.state = StateFailed
	}
	s.notifyLocked()
	s.mu.Unlock()
	switch {
	case err == nil:
		s.emit(event.RemoteSessionReinitialized, event.Int("tools", tools))
		return
	case s.ctx.Err() != nil, errors.Is(err, ErrClosed), errors.Is(err, ErrAuthRequired), errors.Is(err, ErrBlocked):
		return
	}
	s.emit(event.RemoteSessionReinitFailed, event.Err(err))
	// The new session's connect failed: restart.* reason init-failure.
	s.triggerRestart("init-failure", nil)
}

// awaitNewSession waits until the loss of c has been handled and returns the
// connection that replaced it, or nil.
func (r *remoteSessions) awaitNewSession(ctx context.Context, c *connection) *connection {
	s := r.s
	select {
	case <-c.lost:
	case <-ctx.Done():
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && s.conn != c {
		return s.conn
	}
	return nil
}

// retryCall decides what a failed tools/call on a remote server gets:
// a call answered 404 for an expired session (the server never saw it) is
// sent once more on the new session; a call refused twice with 429/503, or
// answered 404 twice by a stateless server (remote_era.go), is reported as
// unavailable. ok is false when none applies.
func (r *remoteSessions) retryCall(ctx context.Context, m *requestMark, name string, args any, ci *callInfo, err error) (_ *mcp.CallToolResult, _ error, ok bool) {
	s := r.s
	m.mu.Lock()
	rc, unseen, throttled, notFound := m.rc, m.unseen404, m.throttled, m.notFound
	m.mu.Unlock()
	switch {
	case rc == nil:
		return nil, nil, false
	case notFound:
		return nil, r.statelessNotFound(err), true
	case rc.authRequired() != nil:
		return nil, &ServerError{Code: CodeAuthRequired, Server: s.name, Kind: ErrAuthRequired, Cause: rc.authRequired()}, true
	case throttled != 0:
		return nil, &ServerError{Code: CodeUnavailable, Server: s.name, Kind: ErrUnavailable, Cause: err,
			Detail: fmt.Sprintf("the server answered HTTP %d again after its Retry-After", throttled)}, true
	case !unseen || rc.conn == nil:
		return nil, nil, false
	}
	if nc := r.awaitNewSession(ctx, rc.conn); nc == nil {
		return nil, nil, false
	}
	s.emit(event.RemoteRequestRetried, event.String("method", "tools/call"), event.String("reason", "session-expired"))
	res, err, _ := s.callOnce(ctx, name, args, ci, false)
	return res, err, true
}

// retryProbe sends a probe's failed request (method) again, with send,
// on the session that replaced c's when c's session expired: the 404 ended
// c, so the runtime initializes a new session at once (lost), which the
// retry awaits for up to timeout on the clock. Otherwise it returns err.
func (r *remoteSessions) retryProbe(c *connection, method string, timeout time.Duration, err error, send func(*connection) error) error {
	s := r.s
	if c.remote == nil || !c.remote.sessionExpired() {
		return err
	}
	ctx, cancel := clock.WithTimeout(s.ctx, s.rt.clock, timeout, method)
	nc := r.awaitNewSession(ctx, c)
	cancel()
	if nc == nil {
		return err
	}
	s.emit(event.RemoteRequestRetried, event.String("method", method), event.String("reason", "session-expired"))
	return send(nc)
}

// retryAfterLocked returns the Retry-After the next restart delay must
// honour, leaving it in place.
func (r *remoteSessions) retryAfterLocked() time.Duration { return r.retryAfter }

// newConn returns the HTTP-layer state of a new connection.
func (r *remoteSessions) newConn(res *config.Resolved) *remoteConn {
	s := r.s
	rc := &remoteConn{srv: s, sessions: r, oauth: r.oauthFor(res.ClientSecret)}
	if a := s.cfg.Auth; a != nil && a.Type == "oauth" && a.CredentialID != "" {
		rc.credential = a.CredentialID
	}
	return rc
}

// markCall marks ctx so that the HTTP layer can tell whether the server saw
// the call's request (remote.go).
func (r *remoteSessions) markCall(ctx context.Context) (context.Context, *requestMark) {
	return withMark(ctx)
}

// counts returns the sessions re-initialized and the streams resumed.
func (r *remoteSessions) counts() (reinits, resumes int) { return r.reinits, r.resumes }
