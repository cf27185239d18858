// Package config discovers, validates and resolves MCP server configurations.
//
// Servers come from several files in priority order; the first definition of a
// name wins and later ones are reported as shadowed. Validation is per server:
// one bad entry is skipped with a Diagnostic naming its file, server and field,
// and every other server still loads.
package config

import (
	"encoding/json"
	"time"
)

// Transport names the wire transport of a server.
type Transport string

// The transports a server may use. An empty type means stdio.
const (
	Stdio Transport = "stdio"
	HTTP  Transport = "http"
	SSE   Transport = "sse"
)

// Level says whether a server was defined in a project (workspace) file or in
// a user-level file. Project-level servers are subject to the trust gate.
type Level string

// The config levels.
const (
	LevelProject Level = "project"
	LevelUser    Level = "user"
	LevelInline  Level = "inline" // given directly by the embedding host
)

// Source describes where a server definition came from.
type Source struct {
	File     string `json:"file"`     // absolute path of the file, or "" for inline
	Level    Level  `json:"level"`    // project, user or inline
	Provider string `json:"provider"` // "mcplife", "claude", "cursor", "vscode", "mcp.json", "inline"
}

// Auth is a server's authentication block.
type Auth struct {
	Type         string `json:"type"`                   // "oauth"
	CredentialID string `json:"credentialId,omitempty"` // key into a CredentialStore
}

// RestartPolicy names how a server is restarted after a failure.
type RestartPolicy string

// The restart policies. The zero value means the default: Relentless for
// shared servers and Once for private ones.
const (
	RestartDefault    RestartPolicy = ""
	RestartRelentless RestartPolicy = "relentless"
	RestartOnce       RestartPolicy = "once"
	RestartBounded    RestartPolicy = "bounded"
	RestartNever      RestartPolicy = "never"
)

// Probe names the health probe run after a tool timeout.
type Probe string

// The probes. The zero value means ProbePing: ping, then tools/list when ping fails.
const (
	ProbeDefault   Probe = ""
	ProbePing      Probe = "ping"       // ping, falling back to tools/list
	ProbeToolsList Probe = "tools-list" // tools/list only
)

// Server is one validated server definition. Field values are as written in
// the file after ${VAR} expansion of string fields; header and env values are
// resolved later, just before connecting (see Resolver).
type Server struct {
	Name    string            `json:"-"`
	Type    Transport         `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Auth    *Auth             `json:"auth,omitempty"`

	// Enabled is false only when the file says "enabled": false.
	Enabled bool `json:"-"`
	// Timeout is the connect timeout (initialize + tools/list); 0 means the
	// default (30 s). From "timeout" in milliseconds; "timeout": 0 in the file
	// disables it and is represented as NoTimeout. Discover applies the
	// MCPLIFE_MCP_TIMEOUT_MS override (TimeoutEnvVar) here. Use ConnectTimeout
	// for the effective value.
	Timeout time.Duration `json:"-"`
	// ToolTimeout bounds each tool call ("toolTimeout", ms); 0 means the
	// default; "toolTimeout": 0 in the file disables it (NoTimeout).
	ToolTimeout time.Duration `json:"-"`

	// Shared is false only when the file says "shared": false.
	Shared bool `json:"-"`
	// Restart is the restart policy ("restart"); RestartDefault picks by Shared.
	Restart RestartPolicy `json:"-"`
	// RestartDelays overrides the policy's delay list ("restartDelays", ms).
	RestartDelays []time.Duration `json:"-"`
	// Probe selects the health probe ("healthProbe": "ping" | "tools-list").
	Probe Probe `json:"-"`
	// ProtocolVersion pins the MCP protocol version; "" means the runtime default.
	ProtocolVersion string `json:"-"`
	// IncludeTools and ExcludeTools filter the exposed tools by raw MCP tool
	// name ("includeTools", "excludeTools"). Empty IncludeTools means all.
	IncludeTools []string `json:"-"`
	ExcludeTools []string `json:"-"`
	// MaxResultChars caps a tool result's text ("maxResultChars"); 0 means the
	// default (50,000).
	MaxResultChars int `json:"-"`
	// RequiresApproval marks the server's tools as needing user approval
	// ("requiresApproval"); true unless the file says false.
	RequiresApproval bool `json:"-"`

	Source Source `json:"-"`
	// Raw is the server's JSON object exactly as written in the file, before
	// any expansion. The tool cache hashes a canonical form of it, so rotating
	// a secret in the environment does not change the key.
	Raw json.RawMessage `json:"-"`
}

// NoTimeout is the Timeout or ToolTimeout value that disables a timeout.
const NoTimeout time.Duration = -1

// EffectiveType returns the server's transport, defaulting to stdio.
func (s *Server) EffectiveType() Transport {
	if s.Type == "" {
		return Stdio
	}
	return s.Type
}

// DefaultConnectTimeout is the connect timeout used when neither the
// environment override nor the server's "timeout" sets one.
const DefaultConnectTimeout = 30 * time.Second

// ConnectTimeout returns the effective connect timeout: Timeout when set, else
// DefaultConnectTimeout. It returns NoTimeout (a negative value) when the
// timeout is disabled, so callers apply a deadline only when the result is > 0.
func (s *Server) ConnectTimeout() time.Duration {
	switch {
	case s.Timeout < 0:
		return NoTimeout
	case s.Timeout == 0:
		return DefaultConnectTimeout
	default:
		return s.Timeout
	}
}
