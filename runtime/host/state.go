package host

import (
	"time"

	"github.com/mcplife/mcplife/runtime/config"
)

// State is a server's lifecycle state as the status surface shows it.
type State string

// The states.
const (
	StateConnecting   State = "connecting"
	StateConnected    State = "connected"
	StateRestarting   State = "restarting" // a restart attempt is running or scheduled
	StateFailed       State = "failed"
	StateDisconnected State = "disconnected"
	StateDisabled     State = "disabled"
	StateBlocked      State = "blocked"
)

// ServerStatus describes one server for a status view.
type ServerStatus struct {
	Name      string           `json:"name"`
	State     State            `json:"state"`
	Transport config.Transport `json:"transport"`
	Tools     int              `json:"tools"`
	// Deferred is true while the tools come from the cache.
	Deferred bool `json:"deferred,omitempty"`
	// Error is the last failure, with the stderr tail of a stdio server.
	Error string `json:"error,omitempty"`
	// Stderr is the tail of the server's stderr.
	Stderr string `json:"stderr,omitempty"`
	// Protocol is the current connection's negotiated protocol version;
	// 2026-07-28 and later is the stateless era (no handshake).
	Protocol string `json:"protocol,omitempty"`
	// ConnectedSince is when the current connection was made.
	ConnectedSince time.Time     `json:"connectedSince,omitzero"`
	Source         config.Source `json:"source"`
	Shared         bool          `json:"shared"`
	Refs           int           `json:"refs"`
	PID            int           `json:"pid,omitempty"`
	// RestartAttempts counts restart attempts since the server was last stable.
	RestartAttempts int    `json:"restartAttempts,omitempty"`
	Policy          string `json:"policy,omitempty"`
	// Warnings lists problems that do not stop the server, e.g. tool name
	// collisions.
	Warnings []string `json:"warnings,omitempty"`
	// SessionReinits counts remote sessions re-initialized after the server
	// forgot them (404).
	SessionReinits int `json:"sessionReinits,omitempty"`
	// StreamResumes counts dropped response streams resumed with
	// Last-Event-ID.
	StreamResumes int `json:"streamResumes,omitempty"`
	// Roots, Resources and Prompts count the roots advertised to the
	// server and the resources and prompts last listed (servers that enable
	// "roots", "resources", "prompts").
	Roots     int `json:"roots,omitempty"`
	Resources int `json:"resources,omitempty"`
	Prompts   int `json:"prompts,omitempty"`
}
