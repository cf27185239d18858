package config

import (
	"fmt"
	"strings"
)

// FieldInfo documents one field of a server entry in a config file.
type FieldInfo struct {
	// Name is the JSON key ("auth.type" for a key nested in "auth").
	Name string
	// Type is the JSON type the field must have.
	Type string
	// Default is the value used when the field is absent (or null).
	Default string
	// Meaning says what the field does.
	Meaning string
	// OnBad is what a bad value does: "error" skips the server, "warning"
	// keeps it and uses the default.
	OnBad string
}

// The OnBad values of FieldInfo.
const (
	OnBadError   = "error"
	OnBadWarning = "warning"
)

// Fields returns every field of a server entry that Parse reads, in
// documentation order. A test checks the list against the keys parse.go
// reads, so it cannot drift.
func Fields() []FieldInfo {
	return []FieldInfo{
		{"type", "string", "`stdio`, or `http` when `url` is given without `command`", "the transport: `stdio` (a child process speaking JSON-RPC on stdin/stdout), `http` (streamable HTTP) or `sse` (the older HTTP+SSE transport)", OnBadError},
		{"command", "string", "— (required for stdio)", "the program to run; looked up in `PATH`; `${VAR}` expanded", OnBadError},
		{"args", "array of strings", "`[]`", "its arguments; `${VAR}` expanded", OnBadError},
		{"env", "object of strings", "`{}`", "variables added to the server's environment (names non-empty, without `=`); `${VAR}` expanded; a value starting with `!` is a shell command whose trimmed stdout is the value (project-level files: only when the workspace is trusted); a command that fails or prints nothing leaves the variable unset (config.unresolved, whose error ends with the first line of its stderr, cut at 200 bytes)", OnBadError},
		{"cwd", "string", "the runtime's working directory", "working directory of the process; `${VAR}` expanded", OnBadError},
		{"url", "string", "— (required for http and sse)", "absolute `http` or `https` URL of a remote server; not together with `command`; `${VAR}` expanded (project-level files: only from the entry's own `env`)", OnBadError},
		{"headers", "object of strings", "`{}`", "HTTP headers sent to a remote server; values expanded like `url`, `!cmd` values like `env`", OnBadError},
		{"auth", "object", "none", "`{\"type\": \"oauth\", \"credentialId\": \"...\"}`: inject an OAuth bearer token from the host's credential store; with `grant`, the runtime also runs that OAuth flow itself when the server answers 401/403", OnBadError},
		{"auth.type", "string", "— (required in `auth`)", "must be `\"oauth\"`", OnBadError},
		{"auth.credentialId", "string", "none (no token injected; a warning unless `grant` is set)", "the key of the token in the credential store", OnBadError},
		{"auth.grant", "string", "none (only the credential store's token)", "the OAuth flow the runtime runs on 401/403 (go-sdk's handlers): `authorization_code` (PKCE, after protected-resource and authorization-server metadata discovery; needs the host's authorize callback) or `client_credentials`", OnBadError},
		{"auth.clientId", "string", "none", "a pre-registered client id (required for `client_credentials`)", OnBadError},
		{"auth.clientSecret", "string", "none (a public client)", "where the pre-registered client's secret comes from: an environment variable name (`NAME` or `${NAME}`) or a `!command` (project-level files: only when the workspace is trusted); a literal secret is an error; needs `clientId`", OnBadError},
		{"auth.clientMetadataUrl", "string", "none", "`authorization_code`: the client id metadata document URL (https, with a path), used when the authorization server supports it", OnBadError},
		{"auth.dynamicRegistration", "boolean", "`true`", "`authorization_code`: register the client dynamically (RFC 7591) when the authorization server offers it; tried after `clientMetadataUrl` and `clientId`", OnBadError},
		{"auth.redirectUri", "string", "the host's (`Options.OAuthRedirectURL`)", "`authorization_code`: the redirect URI the host's authorize callback receives the code on", OnBadError},
		{"auth.offlineAccess", "boolean", "`false`", "`authorization_code`: ask for a refresh token (request `offline_access` when the authorization server lists it; announce the `refresh_token` grant when registering)", OnBadError},
		{"enabled", "boolean", "`true`", "`false` keeps the server configured but never connected (`server.disabled`, status `disabled`)", OnBadWarning},
		{"shared", "boolean", "`true`", "`true`: one connection serves every session of the runtime (the pool); `false`: each session gets a private connection, stopped when the session closes", OnBadWarning},
		{"requiresApproval", "boolean", "`true`", "the approval switch: whether the agent must ask the user before calling the server's tools (`tools.list` reports it per tool)", OnBadWarning},
		{"timeout", "number (ms) >= 0", "`30000`; `MCPLIFE_MCP_TIMEOUT_MS` overrides it for every server", "bound of a connect attempt (initialize + tools/list); `0` disables it", OnBadWarning},
		{"toolTimeout", "number (ms) >= 0", "the runtime's default (`options.toolTimeoutMs`)", "bound of each tool call of this server; `0` disables it", OnBadWarning},
		{"restart", "string", "`relentless` when shared, `once` when private", "the restart policy: `relentless`, `once`, `bounded` or `never` (delays below)", OnBadError},
		{"restartDelays", "non-empty array of numbers (ms) >= 0", "the policy's delays", "the backoff delays before each restart attempt, replacing the policy's", OnBadWarning},
		{"healthProbe", "string", "`ping`", "probe run after a tool timeout: `ping` (falling back to tools/list when ping fails) or `tools-list`", OnBadError},
		{"protocolVersion", "string", "the runtime's default", "the MCP protocol version to request in initialize", OnBadWarning},
		{"includeTools", "array of strings", "all tools", "expose only these raw MCP tool names", OnBadError},
		{"excludeTools", "array of strings", "none", "never expose these raw MCP tool names", OnBadError},
		{"maxResultChars", "whole number from 1 to 2147483647", "`50000` (or `options.maxResultChars`)", "cap on a tool result's text, in characters, before wrapping", OnBadWarning},
		{"maxMessageBytes", "whole number from 1024 to 1073741824", "`16777216` (16 MiB, or `options.maxMessageBytes`)", "stdio only: the longest line or JSON-RPC message the server may write on stdout; a longer one ends its connection (`transport.oversized`)", OnBadWarning},
		{"stderrLimit", "whole number from 256 to 1048576", "`8192` (8 KiB, or the runtime's `StderrLimit` option)", "stdio only: how many of the last bytes the server wrote on stderr are kept (a fixed-size ring) and shown in `server.failed` and the status; older bytes are discarded as they arrive", OnBadWarning},
		{"elicitation", "string", "`off`", "host-side elicitation handler: `off` (the client does not announce elicitation) or `defaults` (accept every form request with its schema's defaults, for a host without a UI)", OnBadWarning},
		{"sampling", "boolean", "`false`", "host-side sampling handler: `true` advertises sampling and hands each `sampling/createMessage` to the embedding host's sampling callback (`host.Options.Sampling`); without the callback, or when `false`, the capability is not advertised and a request is refused", OnBadWarning},
		{"roots", "array of strings", "none (no roots capability)", "the roots advertised to the server and answered on `roots/list`: `file://` URIs or paths; an absolute path becomes a `file://` URI, a relative one is resolved against the config file's directory (an inline server needs absolute ones); other URI schemes are rejected", OnBadError},
		{"progress", "boolean", "`false`", "`true` passes a progress token with each tool call and reports the server's `notifications/progress` as `tool.progress` events (and `host.Options.Progress`)", OnBadWarning},
		{"resources", "boolean", "`false`", "`true` lists the server's resources after connect and again on `notifications/resources/list_changed` (`resources.listed`), after a re-opened `subscriptions/listen` stream, and at a read past the list's `ttlMs` (2026-07-28); status and `host.Runtime.Resources` show them", OnBadWarning},
		{"prompts", "boolean", "`false`", "`true` lists the server's prompts after connect and again on `notifications/prompts/list_changed` (`prompts.listed`), after a re-opened `subscriptions/listen` stream, and at a read past the list's `ttlMs` (2026-07-28); status and `host.Runtime.Prompts` show them", OnBadWarning},
	}
}

// DocSectionFields names the generated section of docs/DRIVER.md that holds
// FieldSection.
const DocSectionFields = "config-fields"

// FieldSection renders Fields as a Markdown table for docs/DRIVER.md.
func FieldSection() string {
	var b strings.Builder
	b.WriteString("<!-- Rendered from runtime/config/fields.go (checked against parse.go); do not edit by hand. -->\n\n")
	b.WriteString("| Field | Type | Default | Meaning | Bad value |\n|---|---|---|---|---|\n")
	for _, f := range Fields() {
		bad := "error: the server is skipped"
		if f.OnBad == OnBadWarning {
			bad = "warning: the default is used"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.Name, f.Type, f.Default, strings.ReplaceAll(f.Meaning, "|", `\|`), bad)
	}
	return b.String()
}
