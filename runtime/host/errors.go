package host

import (
	"errors"
	"fmt"
)

// Sentinel errors; every error the runtime returns for a server wraps one of
// them and can be matched with errors.Is.
var (
	// ErrRestartFailed: the last restart attempt failed; another is scheduled.
	ErrRestartFailed = errors.New("restart failed")
	// ErrRestartInProgress: a restart attempt is running.
	ErrRestartInProgress = errors.New("restart in progress")
	// ErrUnavailable: the server is not connected and retries in background.
	ErrUnavailable = errors.New("server unavailable")
	// ErrConnectionLost: the connection ended while the call was in flight.
	ErrConnectionLost = errors.New("connection lost")
	// ErrToolTimeout: the call hit its tool timeout.
	ErrToolTimeout = errors.New("tool call timed out")
	// ErrUnknownTool: no tool of that name is registered in the session.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrBlocked: the server is blocked by the trust gate.
	ErrBlocked = errors.New("server blocked")
	// ErrDisconnected: the server was disconnected on purpose.
	ErrDisconnected = errors.New("server disconnected")
	// ErrClosed: the runtime or session is closed.
	ErrClosed = errors.New("closed")
	// ErrAborted: the caller cancelled the call.
	ErrAborted = errors.New("tool call aborted")
	// ErrFailed: the server failed and its restart policy gave up.
	ErrFailed = errors.New("server failed")
)

// The error codes callers see, as in seed 001.
const (
	CodeRestartFailed     = "mcp_restart_failed"
	CodeRestartInProgress = "mcp_restart_in_progress"
	CodeUnavailable       = "mcp_unavailable"
	CodeConnectionLost    = "mcp_connection_lost"
	CodeToolTimeout       = "mcp_tool_timeout"
	CodeBlocked           = "mcp_blocked"
	CodeFailed            = "mcp_server_failed"
)

// ServerError is an error about one server, carrying a stable code. Its
// message has the seed's form "<code>:<server>: <detail>".
type ServerError struct {
	Code   string
	Server string
	Kind   error // one of the sentinels
	Cause  error // may be nil
	Detail string
}

func (e *ServerError) Error() string {
	detail := e.Detail
	if detail == "" && e.Cause != nil {
		detail = e.Cause.Error()
	}
	if detail == "" {
		detail = e.Kind.Error()
	}
	return fmt.Sprintf("%s:%s: %s", e.Code, e.Server, detail)
}

// Unwrap returns the sentinel and the cause.
func (e *ServerError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// ErrorCode returns the code, for the bridge's result mapping.
func (e *ServerError) ErrorCode() string { return e.Code }

func restartFailed(server string, cause error) error {
	return &ServerError{Code: CodeRestartFailed, Server: server, Kind: ErrRestartFailed, Cause: cause}
}

func restartInProgress(server string) error {
	return &ServerError{Code: CodeRestartInProgress, Server: server, Kind: ErrRestartInProgress, Detail: "restart still running"}
}
