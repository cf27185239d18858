package config

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Diagnostics and the writer's errors wrap them, so callers
// match with errors.Is.
var (
	// ErrInvalidConfig marks a server entry (or a writer argument) that breaks
	// a validation rule. Its text is the user-facing prefix of the writer's
	// errors: "Invalid server config: <field>: <problem>".
	ErrInvalidConfig = errors.New("Invalid server config") //nolint:staticcheck // user-facing text
	// ErrMalformedJSON marks a file that is not valid JSON.
	ErrMalformedJSON = errors.New("malformed JSON")
	// ErrDuplicateServer marks an add of a name that a file already defines.
	ErrDuplicateServer = errors.New("server already exists")
	// ErrServerNotFound marks an update, remove or enable of a name that a
	// file does not define.
	ErrServerNotFound = errors.New("server not found")
	// ErrUntrusted marks a value refused because it came from project-level
	// config in a workspace that is not trusted.
	ErrUntrusted = errors.New("workspace is not trusted")
	// ErrUnresolved marks a header or env value whose "!command" failed or
	// printed nothing; the value is dropped.
	ErrUnresolved = errors.New("value could not be resolved")
)

// Severity says whether a Diagnostic skipped something (SeverityError) or only
// fell back to a default (SeverityWarning).
type Severity string

// The severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Diagnostic reports one problem found while loading or resolving config. It
// is never fatal to other servers or other files.
type Diagnostic struct {
	Severity Severity
	// File is the config file, or "" for inline servers and for problems that
	// belong to no file (such as a bad MCPLIFE_MCP_TIMEOUT_MS).
	File string
	// Line and Column are 1-based (Column counts characters); 0 when unknown.
	Line, Column int
	// Server is the server name, or "" for file-level problems.
	Server string
	// Field is the path of the offending field inside the server entry, such
	// as "command", "args[1]", "env.TOKEN", "headers.Authorization",
	// "auth.credentialId"; or a top-level key such as "mcpServers".
	Field   string
	Message string
	// Err is the cause: one of the sentinels above, a *json.SyntaxError
	// wrapped with ErrMalformedJSON, or an I/O error.
	Err error
}

// Error formats the diagnostic as "file:line:col: server "x": field: message",
// leaving out the parts that are unknown.
func (d *Diagnostic) Error() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		if d.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", d.Line, d.Column)
		}
		b.WriteString(": ")
	}
	if d.Server != "" {
		fmt.Fprintf(&b, "server %q: ", d.Server)
	}
	if d.Field != "" {
		b.WriteString(d.Field)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// Unwrap returns the cause, so errors.Is(d, ErrInvalidConfig) and friends work.
func (d *Diagnostic) Unwrap() error { return d.Err }

// msgError is an error with a fixed user-facing message that still matches a
// sentinel with errors.Is.
type msgError struct {
	msg string
	err error
}

func (e *msgError) Error() string { return e.msg }
func (e *msgError) Unwrap() error { return e.err }
