package event

import (
	"fmt"
	"slices"
	"strings"
)

// AttrType is the JSON type of an event attribute's value.
type AttrType string

// The attribute types. Lists travel as one comma-joined string; durations
// as integer milliseconds under keys ending in "_ms".
const (
	TypeString AttrType = "string"
	TypeInt    AttrType = "integer"
	TypeBool   AttrType = "boolean"
	TypeMillis AttrType = "integer (ms)"
	TypeList   AttrType = "string (comma-joined list)"
)

// AttrInfo documents one attribute of one Kind.
type AttrInfo struct {
	Name string
	Type AttrType
	// Values is the closed set of values, when the attribute is enumerated.
	Values []string
	// Formats lists the shapes of values outside Values, as
	// "literal <placeholder>": a value matches a format when it starts with
	// the literal text before the first "<". A format without literal
	// text ("<message>") matches anything.
	Formats []string
	// Meaning says what the value is.
	Meaning string
}

// Enumerated values shared by several kinds. The host package's tests check
// them against the constants they mirror (transports, restart policies, stop
// steps, cache reasons, error codes, injection signals).
func transports() []string { return []string{"stdio", "http", "sse"} }
func policies() []string   { return []string{"relentless", "once", "bounded", "never"} }
func restartWhy() []string {
	return []string{"init-failure", "transport-exit", "probe-failure", "idle-probe-failure"}
}
func stopReasons() []string {
	return []string{"disconnect", "reload", "runtime closed", "session closed", "idle"}
}
func errorCodes() []string {
	return []string{"", "mcp_restart_failed", "mcp_restart_in_progress", "mcp_unavailable", "mcp_connection_lost", "mcp_tool_timeout", "mcp_blocked", "mcp_server_failed", "mcp_auth_required"}
}
func signalNames() []string {
	return []string{"ignore-previous", "disregard-previous", "fake-system-role", "chatml-system", "bracket-system", "new-instructions", "claimed-authorization", "mode-switch"}
}
func stopSteps() []string {
	return []string{"stdin-closed", "SIGTERM", "SIGKILL", "session-close", "sockets-closed"}
}
func callOutcomes() []string { return []string{"ok", "tool_error", "error", "aborted"} }

// TransportValues returns the values of the "transport" attribute.
func TransportValues() []string { return transports() }

// PolicyValues returns the values of the "policy" attribute.
func PolicyValues() []string { return policies() }

// StopStepValues returns the values of process.signaled's "step".
func StopStepValues() []string { return stopSteps() }

// CodeValues returns the values of tool.call_finished's "code".
func CodeValues() []string { return errorCodes() }

// SignalValues returns the values that tool.injection_signal's "signals"
// lists.
func SignalValues() []string { return signalNames() }

// commonAttrs documents each attribute name as most kinds use it.
func commonAttrs() map[string]AttrInfo {
	list := []AttrInfo{
		{Name: "file", Type: TypeString, Meaning: "absolute path of the config file (\"\" for an inline server)"},
		{Name: "provider", Type: TypeString, Values: []string{"mcplife", "claude", "cursor", "vscode", "mcp.json", "inline"}, Meaning: "the config file format"},
		{Name: "level", Type: TypeString, Values: []string{"project", "user", "inline"}, Meaning: "the config level of the source"},
		{Name: "servers", Type: TypeInt, Meaning: "number of servers"},
		{Name: "line", Type: TypeInt, Meaning: "1-based line in the file; 0 when unknown"},
		{Name: "column", Type: TypeInt, Meaning: "1-based column in the file; 0 when unknown"},
		{Name: "field", Type: TypeString, Meaning: "the field at fault, as a path: \"command\", \"env.KEY\", \"restartDelays[1]\", \"name\"; \"\" for the whole entry"},
		{Name: "message", Type: TypeString, Meaning: "what is wrong, for people"},
		{Name: "key", Type: TypeString, Meaning: "the header or env name"},
		{Name: "winner", Type: TypeString, Meaning: "the file of the definition that won"},
		{Name: "transport", Type: TypeString, Values: transports(), Meaning: "the server's transport"},
		{Name: "attempt", Type: TypeInt, Meaning: "0 for the first connect, then 1, 2, … for restart attempts"},
		{Name: "timeout_ms", Type: TypeMillis, Meaning: "the timeout just armed; 0 means none"},
		{Name: "tools", Type: TypeInt, Meaning: "number of tools"},
		{Name: "protocol", Type: TypeString, Meaning: "the negotiated MCP protocol version, e.g. \"2025-11-25\""},
		{Name: "error", Type: TypeString, Meaning: "the error message; \"\" when there is none"},
		{Name: "stderr", Type: TypeString, Meaning: "the tail of the server's stderr; \"\" when there is none"},
		{Name: "pid", Type: TypeInt, Meaning: "OS process id of the stdio server; 0 for a remote server"},
		{Name: "command", Type: TypeString, Meaning: "the command as configured"},
		{Name: "ready", Type: TypeInt, Meaning: "servers connected at the gate"},
		{Name: "failed", Type: TypeInt, Meaning: "servers that failed before the gate"},
		{Name: "late", Type: TypeInt, Meaning: "servers still connecting at the gate, without cached tools"},
		{Name: "elapsed_ms", Type: TypeMillis, Meaning: "time from gate.opened to gate.closed"},
		{Name: "names", Type: TypeList, Meaning: "the exposed tool names, sorted"},
		{Name: "grace_ms", Type: TypeMillis, Meaning: "the grace window just armed"},
		{Name: "debounce_ms", Type: TypeMillis, Meaning: "the debounce delay just armed"},
		{Name: "name", Type: TypeString, Meaning: "the exposed tool name both tools map to"},
		{Name: "loser", Type: TypeString, Meaning: "the hidden tool, as \"<server>/<raw tool name>\""},
		{Name: "tool", Type: TypeString, Meaning: "the exposed tool name (mcp_<server>_<tool>)"},
		{Name: "call", Type: TypeString, Meaning: "the call id: the harness's callId where the implementation can carry it, else its own"},
		{Name: "outcome", Type: TypeString, Values: callOutcomes(), Meaning: "ok: a normal result; tool_error: the server answered isError; error: the call failed (code says why); aborted: the caller cancelled it"},
		{Name: "code", Type: TypeString, Values: errorCodes(), Meaning: "the runtime error code of a failed call; \"\" otherwise"},
		{Name: "limit", Type: TypeInt, Meaning: "maxResultChars in effect"},
		{Name: "original", Type: TypeInt, Meaning: "length of the body before truncation, in characters"},
		{Name: "signals", Type: TypeList, Values: signalNames(), Meaning: "the injection signals found, each from the listed values"},
		{Name: "method", Type: TypeString, Values: []string{"ping", "tools/list"}, Meaning: "the probe request"},
		{Name: "healthy", Type: TypeBool, Meaning: "the probe succeeded"},
		{Name: "reason", Type: TypeString, Meaning: "why"},
		{Name: "delay_ms", Type: TypeMillis, Meaning: "the backoff delay just armed"},
		{Name: "next_delay_ms", Type: TypeMillis, Meaning: "the delay before the next attempt"},
		{Name: "policy", Type: TypeString, Values: policies(), Meaning: "the server's restart policy"},
		{Name: "attempts", Type: TypeInt, Meaning: "restart attempts made"},
		{Name: "refs", Type: TypeInt, Meaning: "sessions holding the server after this step"},
		{Name: "shared", Type: TypeBool, Meaning: "false for a private (\"shared\": false) server"},
		{Name: "idle_ms", Type: TypeMillis, Meaning: "the idle timeout that expired"},
		{Name: "status", Type: TypeInt, Meaning: "the HTTP status the remote server answered"},
		{Name: "last_event_id", Type: TypeString, Meaning: "the id of the last event received on the dropped stream"},
		{Name: "retry_ms", Type: TypeMillis, Meaning: "the stream's retry: before a resume (0 for `retry: 0`; the implementation's own delay, 1000 for the reference, when the server sent none)"},
		{Name: "retry_after_ms", Type: TypeMillis, Meaning: "the Retry-After the server asked for"},
		{Name: "credential", Type: TypeString, Meaning: "the credential id asked of the provider"},
		{Name: "document", Type: TypeString, Values: []string{"protected-resource", "authorization-server"}, Meaning: "the OAuth metadata document fetched"},
		{Name: "url", Type: TypeString, Meaning: "the URL fetched (no query)"},
		{Name: "client", Type: TypeString, Values: []string{"metadata-document", "pre-registered", "dynamic"}, Meaning: "how the OAuth client is identified: its id metadata document URL, a pre-registered id, or a dynamically registered one"},
		{Name: "scope", Type: TypeString, Meaning: "the OAuth scopes, space-separated; \"\" when none"},
		{Name: "grant", Type: TypeString, Values: []string{"authorization_code", "client_credentials", "refresh_token"}, Meaning: "the OAuth grant"},
		{Name: "expires_in_ms", Type: TypeMillis, Meaning: "the access token's lifetime as issued; 0 when the server gave none"},
		{Name: "refresh", Type: TypeBool, Meaning: "a refresh token came with the access token"},
		{Name: "mode", Type: TypeString, Values: []string{"form", "url"}, Meaning: "the elicitation request's mode"},
		{Name: "action", Type: TypeString, Values: []string{"accept", "decline", "cancel", "error"}, Meaning: "the answer the host gave"},
		{Name: "fields", Type: TypeString, Meaning: "the form fields answered, sorted, comma-separated"},
		{Name: "lines", Type: TypeInt, Meaning: "non-JSON lines dropped on this connection so far"},
		{Name: "bytes", Type: TypeInt, Meaning: "bytes of those lines"},
		{Name: "sample", Type: TypeString, Meaning: "the start of what the server sent (200 bytes at most, valid UTF-8, control characters replaced)"},
		{Name: "json", Type: TypeBool, Meaning: "the oversized input was a JSON-RPC message (false: a non-JSON line)"},
		{Name: "model", Type: TypeString, Meaning: "the model the sampling callback named in its answer; \"\" when none"},
		{Name: "messages", Type: TypeInt, Meaning: "messages in the sampling request"},
		{Name: "roots", Type: TypeInt, Meaning: "roots advertised to the server"},
		{Name: "progress", Type: TypeString, Meaning: "the progress value the server sent (a JSON number, as text)"},
		{Name: "total", Type: TypeString, Meaning: "the total the server sent (a JSON number, as text); \"\" when unknown"},
		{Name: "text", Type: TypeString, Meaning: "the server's progress message (200 bytes at most, valid UTF-8, control characters replaced); \"\" when none"},
		{Name: "resources", Type: TypeInt, Meaning: "resources kept for the server"},
		{Name: "prompts", Type: TypeInt, Meaning: "prompts kept for the server"},
		{Name: "truncated", Type: TypeBool, Meaning: "the listing stopped at the limit (maxTools); the first limit entries are kept"},
		{Name: "replies", Type: TypeInt, Meaning: "stray replies of this reason on this connection so far"},
		{Name: "id", Type: TypeString, Meaning: "a JSON-RPC id as JSON text (a number, or a quoted string of 200 bytes at most)"},
		{Name: "notifications", Type: TypeInt, Meaning: "list_changed notifications so far in this debounce window"},
	}
	out := make(map[string]AttrInfo, len(list))
	for _, a := range list {
		out[a.Name] = a
	}
	return out
}

// kindAttrs documents attributes whose type, values or meaning differ for
// one kind from commonAttrs.
func kindAttrs() map[Kind][]AttrInfo {
	remoteMethod := []AttrInfo{{Name: "method", Type: TypeString, Meaning: "the JSON-RPC method of the request (initialize, tools/call, ...; GET for a stream)"}}
	return map[Kind][]AttrInfo{
		ToolsLimited: {{Name: "reason", Type: TypeString, Values: []string{"too-many", "name-too-long", "schema-too-deep"}, Meaning: "the limit that dropped tools"},
			{Name: "tools", Type: TypeInt, Meaning: "too-many: tools seen when listing stopped; otherwise tools dropped"},
			{Name: "limit", Type: TypeInt, Meaning: "the limit in effect"}},
		TransportStrayReply: {{Name: "reason", Type: TypeString, Values: []string{"unknown", "duplicate"},
			Meaning: "unknown: an id the client never sent (or no longer remembers); duplicate: an id answered already"}},
		TransportOversized:       {{Name: "limit", Type: TypeInt, Meaning: "maxMessageBytes in effect"}},
		RemoteSessionExpired:     remoteMethod,
		RemoteUnreachable:        remoteMethod,
		RemoteAuthRejected:       remoteMethod,
		RemoteRequestRetried:     remoteMethod,
		RemoteThrottled:          remoteMethod,
		RemoteStreamDropped:      remoteMethod,
		RemoteStreamResumed:      remoteMethod,
		RemoteStreamResumeFailed: remoteMethod,
		RemoteNotFound:           remoteMethod,
		RemoteStreamLost:         remoteMethod,
		RemoteRequestReissued:    remoteMethod,
		RemoteReissueFailed:      remoteMethod,
		RemoteListenLost: {{Name: "reason", Type: TypeString, Values: []string{"closed", "broken"},
			Meaning: "closed: the server answered the listen request before the stream ended (a graceful end); broken: the stream ended without that answer"},
			{Name: "delay_ms", Type: TypeMillis, Meaning: "the wait before the first re-open: none after a broken stream; after a graceful end the restart policy's first delay, at least 1 s"}},
		RemoteListenReopened:     {{Name: "attempt", Type: TypeInt, Meaning: "re-opens since the last stream that stayed open for the stability window, from 1"}},
		RemoteListenReopenFailed: {{Name: "attempt", Type: TypeInt, Meaning: "as in remote.listen_reopened"}},
		RemoteListenGaveUp:       {{Name: "attempts", Type: TypeInt, Meaning: "re-opens made in a row"}},
		SamplingAnswered: {{Name: "outcome", Type: TypeString, Values: []string{"ok", "refused", "error"},
			Meaning: "ok: the sampling callback answered; refused: sampling is off for the server or the host has no callback; error: the callback failed"}},
		ConfigError:    {{Name: "file", Type: TypeString, Meaning: "the config file (the project directory for a discovery-level failure)"}},
		ConfigShadowed: {{Name: "file", Type: TypeString, Meaning: "the file of the definition that lost"}},
		ServerDisconnected: {{Name: "reason", Type: TypeString, Values: []string{"disconnect"},
			Meaning: "disconnect: server.disconnect (or the embedding host) asked for it"}},
		ServerBlocked: {{Name: "reason", Type: TypeString, Meaning: "why the trust gate blocked the server, for people"}},
		ProcessSignaled: {{Name: "step", Type: TypeString, Values: stopSteps(),
			Meaning: "stdio: stdin-closed, then SIGTERM, then SIGKILL (to the process group); remote (pid 0): session-close, then sockets-closed"}},
		ProcessExited: {
			{Name: "status", Type: TypeString, Values: []string{"running"}, Formats: []string{"exit status <code>", "killed by <signal name, e.g. SIGKILL>", "<wait error>"},
				Meaning: "how the process ended; \"running\" when it was not reaped within the stop's bounds"},
			{Name: "planned", Type: TypeBool, Meaning: "true when the runtime stopped the server on purpose"},
		},
		GateOpened: {{Name: "servers", Type: TypeInt, Meaning: "servers the gate waits on"}},
		GateClosed: {{Name: "deferred", Type: TypeInt, Meaning: "servers still connecting at the gate, exposing cached tools"}},
		CacheMiss: {{Name: "reason", Type: TypeString, Values: []string{"absent", "expired", "version", "config-changed", "ttl"}, Formats: []string{"corrupt: <detail>"},
			Meaning: "why no cached list was used; ttl: older than the ttlMs its server sent with it (the config hash is checked first: a changed configuration is config-changed whatever the hint)"}},
		CacheInvalidated: {{Name: "reason", Type: TypeString, Values: []string{"empty tool list", "private scope"}, Meaning: "why the record was removed or the list not stored"}},
		ToolsRegistered:  {{Name: "deferred", Type: TypeBool, Meaning: "the tools come from the cache and the server is not connected yet"}},
		ToolsUnregistered: {{Name: "reason", Type: TypeString,
			Values:  append([]string{"connection lost", "grace window expired", "restart gave up"}, stopReasons()...),
			Meaning: "connection lost (no grace window), grace window expired, restart gave up, or the stop that removed them: server.disconnect, reload, shutdown (runtime closed), session.close of a private server, idle stop"}},
		ToolsCollision: {{Name: "winner", Type: TypeString, Meaning: "the visible tool, as \"<server>/<raw tool name>\"; the pair sorting first wins"}},
		RestartScheduled: {{Name: "reason", Type: TypeString, Values: restartWhy(),
			Meaning: "init-failure: the connect failed; transport-exit: the connection dropped; probe-failure: a health probe failed after a tool timeout; idle-probe-failure: an idle health probe (probe.idle_started) failed"}},
		RestartAttempt:   {{Name: "reason", Type: TypeString, Values: restartWhy(), Meaning: "as in restart.scheduled"}},
		RestartFailed:    {{Name: "reason", Type: TypeString, Values: restartWhy(), Meaning: "as in restart.scheduled"}},
		RestartSucceeded: {{Name: "reason", Type: TypeString, Values: restartWhy(), Meaning: "as in restart.scheduled"}},
		ReloadFinished:   {{Name: "servers", Type: TypeInt, Meaning: "servers configured after the reload"}},
		ConfigLoaded:     {{Name: "servers", Type: TypeInt, Meaning: "servers the source defines"}},
	}
}

// Attributes returns the documented attributes of kind k, in the order
// Kinds lists them, and an error naming any attribute without a documented
// type (such an attribute is returned with an empty Type, and its values
// are not checked; TestAttributesDocumented fails until it is documented).
func Attributes(k Kind) ([]AttrInfo, error) {
	var names []string
	for _, info := range Kinds() {
		if info.Kind == k {
			names = attrNames(info.Attrs)
			break
		}
	}
	common := commonAttrs()
	special := kindAttrs()[k]
	out := make([]AttrInfo, 0, len(names))
	var missing []string
	for _, n := range names {
		a, ok := common[n]
		if i := slices.IndexFunc(special, func(s AttrInfo) bool { return s.Name == n }); i >= 0 {
			a, ok = special[i], true
		}
		if !ok {
			missing = append(missing, n)
			a = AttrInfo{Name: n} // no type: only the name is checked
		}
		out = append(out, a)
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("event %s: attributes %s have no documented type (add them to commonAttrs or kindAttrs in runtime/event/attrs.go)", k, strings.Join(missing, ", "))
	}
	return out, nil
}

func attrNames(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// check reports whether v is a valid value of a.
func (a AttrInfo) check(v any) error {
	switch a.Type {
	case TypeString, TypeList:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("attribute %q must be a string, got %T", a.Name, v)
		}
		if a.Type == TypeList {
			if s == "" || len(a.Values) == 0 {
				return nil
			}
			for _, e := range strings.Split(s, ",") {
				if !slices.Contains(a.Values, e) {
					return fmt.Errorf("attribute %q lists %q, which is not one of %s", a.Name, e, strings.Join(a.Values, ", "))
				}
			}
			return nil
		}
		return a.checkValue(s)
	case TypeInt, TypeMillis:
		switch n := v.(type) {
		case int64, int:
			return nil
		case float64:
			if n == float64(int64(n)) {
				return nil
			}
		}
		return fmt.Errorf("attribute %q must be an integer, got %T %v", a.Name, v, v)
	case TypeBool:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("attribute %q must be a boolean, got %T", a.Name, v)
		}
	}
	return nil // TypeBool, or no documented type
}

func (a AttrInfo) checkValue(s string) error {
	if len(a.Values) == 0 && len(a.Formats) == 0 {
		return nil
	}
	if slices.Contains(a.Values, s) {
		return nil
	}
	for _, f := range a.Formats {
		lit, _, _ := strings.Cut(f, "<")
		if strings.HasPrefix(s, lit) {
			return nil
		}
	}
	return fmt.Errorf("attribute %q is %q, which is not one of the documented values (%s)", a.Name, s, strings.Join(append(quoteAll(a.Values), a.Formats...), ", "))
}

func quoteAll(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// AttributeSection renders the attributes of every kind as a Markdown
// table, for the generated section of docs/DRIVER.md.
func AttributeSection() (string, error) {
	var b strings.Builder
	b.WriteString("<!-- Rendered from runtime/event/kind.go and attrs.go; do not edit by hand. -->\n\n")
	b.WriteString("| Kind | Meaning | Attribute | Type | Values |\n|---|---|---|---|---|\n")
	var errs []string
	for _, k := range Kinds() {
		attrs, err := Attributes(k.Kind)
		if err != nil {
			errs = append(errs, err.Error())
		}
		if len(attrs) == 0 {
			fmt.Fprintf(&b, "| `%s` | %s | — | | |\n", k.Kind, cell(k.Meaning))
			continue
		}
		for i, a := range attrs {
			kind, meaning := "", ""
			if i == 0 {
				kind, meaning = "`"+string(k.Kind)+"`", cell(k.Meaning)
			}
			fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", kind, meaning, a.Name, a.Type, cell(a.valuesText()))
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return b.String(), nil
}

func (a AttrInfo) valuesText() string {
	var parts []string
	for _, v := range a.Values {
		parts = append(parts, "`"+fmt.Sprintf("%q", v)+"`")
	}
	for _, f := range a.Formats {
		parts = append(parts, "`"+f+"`")
	}
	s := a.Meaning
	if len(parts) > 0 {
		s = "one of " + strings.Join(parts, ", ") + " — " + s
	}
	return s
}

// cell escapes text for a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// DocSectionAttributes names the generated section of docs/DRIVER.md that
// holds AttributeSection.
const DocSectionAttributes = "event-attributes"
