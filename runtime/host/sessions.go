package host

import (
	"context"
	"time"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionStrategy is how a server keeps its MCP session, where a stdio
// server and a remote one differ. A stdio session lives and dies with its
// process: nothing is left to do when it ends but restart. A remote
// session can expire (404) and be re-initialized at once, its credential
// can be rejected (needs-auth), its server can ask to be left alone
// (Retry-After), and a request the server never saw can be sent again. A
// server holds one strategy (server.sessions), chosen by its transport in
// newServer, instead of asking its transport along the lifecycle.
type sessionStrategy interface {
	// newConn returns the HTTP-layer state of a new connection, nil over
	// stdio.
	newConn(r *config.Resolved) *remoteConn
	// markCall returns the context a tool call runs with and the mark that
	// later tells what the transport saw of it (nil over stdio).
	markCall(ctx context.Context) (context.Context, *requestMark)
	// retryCall decides what a call that failed without a timeout gets:
	// a new result, or an error of its own; ok is false when neither.
	retryCall(ctx context.Context, m *requestMark, name string, args any, ci *callInfo, err error) (_ *mcp.CallToolResult, _ error, ok bool)
	// retryProbe sends a probe's failed request (method) again, with send,
	// where c's session was replaced, or returns err.
	retryProbe(c *connection, method string, timeout time.Duration, err error, send func(*connection) error) error
	// connectErr names what the transport saw behind a failed connect.
	connectErr(rc *remoteConn, err error) error
	// noteFailureLocked records what a failed attempt means and reports
	// whether it set the server's state.
	noteFailureLocked(err error) bool
	// retryAfterLocked is the least delay the server asked for before the
	// next attempt; takeRetryAfterLocked also forgets it.
	retryAfterLocked() time.Duration
	takeRetryAfterLocked() time.Duration
	// lost handles the end of c when the transport has more to say than
	// "it ended"; it reports whether it did.
	lost(c *connection, cause error) bool
	// counts returns the sessions re-initialized and the streams resumed.
	counts() (reinits, resumes int)
}

// sessionsFor returns the session strategy of s's transport.
func sessionsFor(s *server) sessionStrategy {
	if s.cfg.EffectiveType() == config.Stdio {
		return stdioSessions{}
	}
	return &remoteSessions{s: s}
}

// stdioSessions is the session strategy of a stdio server: a session ends
// with its process, and the restart policy alone decides what follows.
type stdioSessions struct{}

func (stdioSessions) newConn(*config.Resolved) *remoteConn { return nil }

func (stdioSessions) markCall(ctx context.Context) (context.Context, *requestMark) { return ctx, nil }

func (stdioSessions) retryCall(context.Context, *requestMark, string, any, *callInfo, error) (*mcp.CallToolResult, error, bool) {
	return nil, nil, false
}

func (stdioSessions) retryProbe(_ *connection, _ string, _ time.Duration, err error, _ func(*connection) error) error {
	return err
}

func (stdioSessions) connectErr(_ *remoteConn, err error) error { return err }

func (stdioSessions) noteFailureLocked(error) bool { return false }

func (stdioSessions) retryAfterLocked() time.Duration { return 0 }

func (stdioSessions) takeRetryAfterLocked() time.Duration { return 0 }

func (stdioSessions) lost(*connection, error) bool { return false }

func (stdioSessions) counts() (int, int) { return 0, 0 }
