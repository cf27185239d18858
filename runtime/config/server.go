// Package config discovers, validates and resolves MCP server configurations.
//
// Servers come from several files in priority order; the first definition of a
// name wins and later ones are reported as shadowed. Validation is per server:
// one bad entry is skipped with a Diagnostic naming its file, server and field,
// and every other server still loads.
//
// # Sources
//
// Discover reads, in this order (first definition of a name wins; later
// definitions are listed in Result.Shadowed, never merged):
//
//	#   source                                     level     provider
//	1   Options.Inline, by name                    inline    inline
//	2   Options.Files, in the order given          (given)   (given, default mcplife)
//	3   <project>/.mcplife/mcp.json                project   mcplife
//	4   ~/.mcplife/mcp.json                        user      mcplife
//	5   <project>/.mcp.json                        project   claude
//	6   ~/.claude.json projects["<abs project>"]   user      claude
//	7   ~/.claude.json mcpServers                  user      claude
//	8   <project>/.cursor/mcp.json                 project   cursor
//	9   ~/.cursor/mcp.json                         user      cursor
//	10  <project>/.vscode/mcp.json                 project   vscode
//	11  <project>/mcp.json                         project   mcp.json
//
// Every file may keep its servers under "mcpServers" or "servers" (VS Code's
// key); with both, "mcpServers" comes first. Comments and trailing commas are
// tolerated (VS Code writes them). A path reached twice is read once, at its
// first position; when the project is the home directory a file that is both
// a project and a user source counts as user-level. A file that does not exist
// is skipped silently; an empty file defines nothing. A file is read only if
// it resolves (through symlinks) to a regular file of at most MaxFileBytes:
// a directory, device, FIFO or socket, or a larger file, is an error
// diagnostic for that file (ReadFile), and the other files still load.
//
// A duplicate key is an error, never resolved, since JSON readers disagree
// on which occurrence counts (an editor shows the first, encoding/json keeps
// the last): a key repeated anywhere within a server entry (two "command"s,
// two env.TOKEN) rejects that server; a name repeated within one server map
// rejects every definition of the name, and its first position claims the
// name; a repeated key on the way to a server map ("mcpServers" twice at the
// top level) loads nothing from that map. An invalid definition claims its
// name: it is skipped with an error and lower-priority definitions of the
// name stay shadowed, so a broken override never silently falls back. A winning
// definition with "enabled": false goes to Result.Disabled and is never
// connected. With Options.SkipProjectConfig, project-level files are parsed
// only to list their servers in Result.Dropped: they claim no names and their
// diagnostics are not reported.
//
// # Validation
//
// Errors skip the server (Severity "error", wrapping ErrInvalidConfig):
// a name that is not 1-100 characters of [a-zA-Z0-9_.-]; an entry that is not
// an object; "type" not a string or not stdio/http/sse; "command" together
// with "url"; stdio without "command"; http/sse without "url", or a url that
// is not an absolute http(s) URL after expansion; wrong types for command,
// args, env (and env names with '='), cwd, url, headers, auth, includeTools,
// excludeTools; "auth" whose type is not "oauth"; an "auth" grant that is
// not authorization_code/client_credentials, its fields without a grant, a
// client_credentials grant without clientId and clientSecret, a clientSecret
// that is not an environment variable name or !command, a clientMetadataUrl
// that is not https with a path, a redirectUri that is not absolute, an
// authorization_code grant with no way to register the client; "restart" not
// relentless/once/bounded/never; "healthProbe" not ping/tools-list. These change
// what runs, where it connects or which tools are exposed, so guessing is
// worse than skipping.
//
// Warnings keep the server and use the field's default: wrong types for
// "enabled" (true), "shared" (true), "requiresApproval" (true),
// "protocolVersion" (runtime default); "elicitation" not "off" or
// "defaults" (off); "timeout" and "toolTimeout" not a
// number >= 0 (default); "restartDelays" not a non-empty array of numbers
// >= 0 (the policy's delays); "maxResultChars" not a whole number > 0
// (default); "maxMessageBytes" not a whole number from 1024 to 1073741824
// (default); "stderrLimit" not a whole number from MinStderrLimit to
// MaxStderrLimit (default); an oauth "auth" without "credentialId" nor
// "grant" (no token injected); registration fields of a client_credentials
// grant (ignored).
// Every fallback is the safe value. A JSON null counts as an absent field.
// Unknown fields are ignored and kept in Server.Raw.
//
// When no "type" is given, a server with "url" and no "command" is http (as in
// Cursor's files); otherwise stdio is the default.
//
// # Expansion and resolution
//
// ${VAR} and ${VAR:-default} are expanded at discovery in command, args, env
// values, cwd, url and header values; unresolved references stay literal.
// For project-level servers the url and header values expand only from the
// server's own env block as written, never from the process environment, so a
// cloned repository cannot exfiltrate the user's secrets. Values starting with
// "!" are left for the Resolver, which runs them just before connecting and
// applies the workspace trust gate (see Resolver). Raw is never expanded, so
// ConfigHash does not change when a secret rotates.
//
// Timeouts: MCPLIFE_MCP_TIMEOUT_MS (through Options.Env) overrides every
// server's "timeout" (ms), which overrides DefaultConnectTimeout; 0 disables.
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

// Auth is a server's authentication block. With Grant empty, the runtime
// only injects the token of CredentialID and refreshes it through the
// credential store; with a Grant it runs that OAuth flow itself (go-sdk's
// handlers) when the server answers 401 or 403.
type Auth struct {
	Type         string `json:"type"`                   // "oauth"
	CredentialID string `json:"credentialId,omitempty"` // key into a CredentialStore
	// Grant is the OAuth flow the runtime runs: GrantAuthorizationCode,
	// GrantClientCredentials, or "" (token injection only).
	Grant string `json:"grant,omitempty"`
	// ClientID is a pre-registered client id.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret names where the pre-registered client's secret comes
	// from: an environment variable name (or ${NAME}) or a "!command"; it is
	// resolved at connect time (Resolved.ClientSecret), never stored here.
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientMetadataURL is the client's id metadata document URL (an https
	// URL with a path), used when the authorization server supports it.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// DynamicRegistration allows dynamic client registration (RFC 7591)
	// when the authorization server offers it (default true).
	DynamicRegistration bool `json:"dynamicRegistration,omitempty"`
	// RedirectURI is the redirect URI of the authorization-code flow; ""
	// means the host's default (host.Options.OAuthRedirectURL).
	RedirectURI string `json:"redirectUri,omitempty"`
	// OfflineAccess asks for a refresh token: offline_access is requested
	// when the authorization server lists it, and dynamic registration
	// announces the refresh_token grant.
	OfflineAccess bool `json:"offlineAccess,omitempty"`
}

// The OAuth grants of Auth.Grant.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

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

// ElicitationMode names how the host answers a server's elicitation/create
// requests (questions the server asks the user in the middle of a call).
type ElicitationMode string

// The elicitation modes. The zero value means ElicitationOff.
const (
	// ElicitationOff advertises no elicitation capability; servers must not
	// ask, and a request that comes anyway is refused by the SDK.
	ElicitationOff ElicitationMode = "off"
	// ElicitationDefaults is for a host without a UI: it accepts every form
	// elicitation with the requested schema's default values, and declines
	// when a required field has no default (and any URL elicitation).
	ElicitationDefaults ElicitationMode = "defaults"
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
	// Elicitation selects the host-side elicitation handler ("elicitation":
	// "off" | "defaults"); "" means off.
	Elicitation ElicitationMode `json:"-"`
	// Sampling lets the server ask the host's model for a completion
	// (sampling/createMessage) through the runtime's sampling callback
	// ("sampling": true); off by default.
	Sampling bool `json:"-"`
	// Progress passes a progress token with each tool call and reports the
	// server's notifications/progress ("progress": true); off by default.
	Progress bool `json:"-"`
	// Resources and Prompts list the server's resources and prompts after
	// connect and on list_changed ("resources", "prompts"); off by default.
	Resources bool `json:"-"`
	Prompts   bool `json:"-"`
	// Roots are the roots advertised to the server ("roots": file URIs or
	// paths, relative ones resolved against the config file's directory);
	// nil advertises no roots capability.
	Roots []Root `json:"-"`
	// IncludeTools and ExcludeTools filter the exposed tools by raw MCP tool
	// name ("includeTools", "excludeTools"). Empty IncludeTools means all.
	IncludeTools []string `json:"-"`
	ExcludeTools []string `json:"-"`
	// MaxResultChars caps a tool result's text ("maxResultChars"); 0 means the
	// default (50,000).
	MaxResultChars int `json:"-"`
	// MaxMessageBytes bounds one stdout message or non-JSON line of a stdio
	// server ("maxMessageBytes"); 0 means the runtime's default (16 MiB).
	MaxMessageBytes int `json:"-"`
	// StderrLimit is how many bytes of a stdio server's stderr are kept as
	// its tail ("stderrLimit"); 0 means the runtime's default (8 KiB).
	StderrLimit int `json:"-"`
	// RequiresApproval marks the server's tools as needing user approval
	// ("requiresApproval"); true unless the file says false.
	RequiresApproval bool `json:"-"`

	Source Source `json:"-"`
	// Raw is the server's JSON object exactly as written in the file, before
	// any expansion (comments and trailing commas, if any, blanked to spaces). The tool cache hashes a canonical form of it, so rotating
	// a secret in the environment does not change the key.
	Raw json.RawMessage `json:"-"`
}

// The bounds of a server's "stderrLimit".
const (
	MinStderrLimit = 256
	MaxStderrLimit = 1 << 20
)

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
