// Package event defines the lifecycle event vocabulary of the runtime and a
// Recorder that keeps, streams and awaits events.
//
// Every lifecycle step emits an Event with a stable dotted Kind. Scenarios and
// the conformance suite assert on events (and on the fixture's journal), never
// on log text or wall-clock timings.
package event

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Kind is the stable dotted name of a lifecycle step.
type Kind string

// The event vocabulary. docs/TESTING.md lists it; a test fails when the list
// there and Kinds differ.
const (
	// Configuration.
	ConfigLoaded     Kind = "config.loaded"
	ConfigError      Kind = "config.error"
	ConfigWarning    Kind = "config.warning"
	ConfigShadowed   Kind = "config.shadowed"
	ConfigUnresolved Kind = "config.unresolved"

	// Server lifecycle.
	ServerConnecting   Kind = "server.connecting"
	ServerConnected    Kind = "server.connected"
	ServerFailed       Kind = "server.failed"
	ServerDisconnected Kind = "server.disconnected"
	ServerDisabled     Kind = "server.disabled"
	ServerBlocked      Kind = "server.blocked"

	// Processes and transports.
	ProcessStarted  Kind = "process.started"
	ProcessSignaled Kind = "process.signaled"
	ProcessExited   Kind = "process.exited"
	TransportClosed Kind = "transport.closed"
	// Hostile stdout (issue 15).
	TransportNoise      Kind = "transport.noise"
	TransportOversized  Kind = "transport.oversized"
	TransportStrayReply Kind = "transport.stray_reply"

	// Startup gate.
	GateOpened Kind = "gate.opened"
	GateClosed Kind = "gate.closed"

	// Tool cache.
	CacheHit         Kind = "cache.hit"
	CacheMiss        Kind = "cache.miss"
	CacheWritten     Kind = "cache.written"
	CacheInvalidated Kind = "cache.invalidated"

	// Tool registration.
	ToolsRegistered          Kind = "tools.registered"
	ToolsUnregistered        Kind = "tools.unregistered"
	ToolsUnregisterScheduled Kind = "tools.unregister_scheduled"
	ToolsUnregisterCancelled Kind = "tools.unregister_cancelled"
	ToolsChanged             Kind = "tools.changed"
	ToolsRefreshKept         Kind = "tools.refresh_kept"
	ToolsCollision           Kind = "tools.collision"
	ToolsLimited             Kind = "tools.limited"
	ToolsChangeFlood         Kind = "tools.change_flood"

	// Tool calls.
	ToolDeferred        Kind = "tool.deferred"
	ToolCallStarted     Kind = "tool.call_started"
	ToolCallFinished    Kind = "tool.call_finished"
	ToolTimeout         Kind = "tool.timeout"
	ToolTruncated       Kind = "tool.truncated"
	ToolInjectionSignal Kind = "tool.injection_signal"

	// Host-side handlers of server requests.
	ElicitationAnswered Kind = "elicitation.answered"

	// Health probe.
	ProbeStarted         Kind = "probe.started"
	ProbeFinished        Kind = "probe.finished"
	ProbePingUnsupported Kind = "probe.ping_unsupported"

	// Restarts.
	RestartScheduled Kind = "restart.scheduled"
	RestartAttempt   Kind = "restart.attempt"
	RestartFailed    Kind = "restart.failed"
	RestartSucceeded Kind = "restart.succeeded"
	RestartGaveUp    Kind = "restart.gave_up"

	// Shared pool.
	PoolAcquired    Kind = "pool.acquired"
	PoolReleased    Kind = "pool.released"
	PoolUnavailable Kind = "pool.unavailable"
	PoolIdleStop    Kind = "pool.idle_stop"

	// Sessions and the runtime.
	SessionOpened  Kind = "session.opened"
	SessionClosed  Kind = "session.closed"
	ReloadStarted  Kind = "reload.started"
	ReloadFinished Kind = "reload.finished"
	RuntimeClosed  Kind = "runtime.closed"
)

// KindInfo documents one Kind.
type KindInfo struct {
	Kind    Kind
	Meaning string
	Attrs   string // the attributes it carries, comma-separated
}

// Kinds returns the whole vocabulary in documentation order.
func Kinds() []KindInfo {
	return slices.Concat([]KindInfo{
		{ConfigLoaded, "a config source was read", "file, provider, level, servers"},
		{ConfigError, "a config file or server entry was rejected; the server is skipped", "file, line, column, field, message"},
		{ConfigWarning, "a config value was ignored or fell back to its default", "file, line, column, field, message"},
		{ConfigShadowed, "a server definition lost to a higher-priority source of the same name", "file, winner"},
		{ConfigUnresolved, "a header or env value could not be resolved and was dropped", "field, key, message"},

		{ServerConnecting, "a connect attempt began (initialize + tools/list); its timeout is armed", "transport, attempt, timeout_ms"},
		{ServerConnected, "the handshake (in the stateless 2026-07-28 era: server/discover) and tool listing succeeded and the connection is installed; protocol names the connection's era", "transport, attempt, tools, protocol"},
		eraKind(), // kind_era.go
		{ServerFailed, "a connect attempt failed", "transport, error, stderr"},
		{ServerDisconnected, "the server was disconnected on purpose", "reason"},
		{ServerDisabled, "the server is disabled in config and is not connected", "file"},
		{ServerBlocked, "the server is blocked (stdio from untrusted project config)", "reason"},

		{ProcessStarted, "a stdio server process was launched", "pid, command"},
		{ProcessSignaled, "a step of stopping a server was taken; its wait is armed: stdin-closed, SIGTERM, SIGKILL for a stdio process group; session-close, then sockets-closed after the grace, for a remote server (pid 0)", "pid, step"},
		{ProcessExited, "a stdio server process exited", "pid, status, planned"},
		{TransportClosed, "a connection ended without the runtime asking", "transport, error"},
		{TransportNoise, "a stdio server wrote a line that is not JSON-RPC to stdout; it was dropped and the connection goes on. Reported for the 1st, 2nd, 4th, 8th... dropped line of a connection; lines counts them all so far, sample is the line's start (200 bytes at most, made valid UTF-8, control characters replaced)", "lines, bytes, sample"},
		{TransportOversized, "a stdio server's stdout message (json true) or non-JSON line exceeded its limit (maxMessageBytes); the connection ends with that error", "limit, json, sample"},
		{TransportStrayReply, "a stdio or SSE server sent a reply whose id matches no request in flight (reason unknown: an id the client never sent or no longer remembers; duplicate: an id answered already); go-sdk drops it and the connection goes on. Reported for the 1st, 2nd, 4th, 8th... such reply of each reason on a connection; replies counts them so far, id is the reply's id as JSON text (200 bytes at most). A late reply to a cancelled request is no stray", "id, reason, replies"},

		{GateOpened, "a session started waiting on the startup gate", "servers, timeout_ms"},
		{GateClosed, "the startup gate closed; session start returns", "ready, failed, deferred, late, elapsed_ms"},

		{CacheHit, "cached tool definitions were found for a pending server", "tools"},
		{CacheMiss, "no usable cached tool list: at server start, no usable record in the tool cache; on a live connection of the 2026-07-28 era (reason ttl), the list it holds outlived the ttlMs its server sent with it and is listed again at this use (a session read its tools or called one; for the resources or prompts a server's config follows, the host read them, and the resources.listed or prompts.listed that follows names the list)", "reason"},
		{CacheWritten, "the tool cache record was rewritten", "tools"},
		{CacheInvalidated, "the tool cache record was removed, or a list was kept out of it: an empty tool list removes the record; a list its server scoped private (2026-07-28 cacheScope) is never stored and removes the record", "reason"},

		{ToolsRegistered, "a server's tools became callable in a session (or were replaced)", "tools, deferred, names"},
		{ToolsUnregistered, "a server's tools were removed from a session", "tools, reason"},
		{ToolsUnregisterScheduled, "a connection dropped; the tools stay for the grace window", "grace_ms"},
		{ToolsUnregisterCancelled, "the server came back inside the grace window", ""},
		{ToolsChanged, "the server sent notifications/tools/list_changed; the debounce timer is armed", "debounce_ms"},
		{ToolsRefreshKept, "a refresh returned no tools; the old list was kept", "tools"},
		{ToolsCollision, "two tools map to one exposed name; the winner is deterministic", "name, winner, loser"},
		{ToolsLimited, "tools a server listed were dropped by a limit. reason too-many: listing stopped after tools (at least limit+1) tools and the first limit are kept; name-too-long and schema-too-deep: tools is how many were dropped, sample the first one's name (200 bytes at most)", "reason, tools, limit, sample"},
		{ToolsChangeFlood, "a burst of tools/list_changed reached notifications (100, 1000, 10000...) in one debounce window; past the first 10, notifications emit no tools.changed and are absorbed into the window's one refresh", "notifications, debounce_ms"},

		{ToolDeferred, "a tool from the cache was exposed before its server connected", "tool"},
		{ToolCallStarted, "a tool call began", "call, tool"},
		{ToolCallFinished, "a tool call ended", "call, tool, outcome, code"},
		{ToolTimeout, "a tool call hit its timeout", "call, tool, timeout_ms"},
		{ToolTruncated, "a tool result was truncated to maxResultChars", "tool, limit, original"},
		{ToolInjectionSignal, "a tool result contains prompt-injection phrases (advisory)", "tool, signals"},

		{ElicitationAnswered, "the server asked the host for input (elicitation/create) and the server's elicitation handler answered: accept with the requested schema's defaults, or decline when a required field has no default", "mode, action, fields, reason"},
		{ProbeStarted, "a health probe step began after a tool timeout or in an idle probe (probe.idle_started); its timeout is armed", "method, timeout_ms"},
		{ProbeFinished, "a health probe ended", "healthy, method, error"},
		{ProbePingUnsupported, "the server answered ping with method-not-found; tools/list is used from now on", ""},

		{RestartScheduled, "a restart was decided", "reason, attempt, delay_ms, policy"},
		{RestartAttempt, "a restart attempt began", "reason, attempt"},
		{RestartFailed, "a restart attempt failed", "reason, attempt, error, next_delay_ms"},
		{RestartSucceeded, "a restart attempt succeeded", "reason, attempt"},
		{RestartGaveUp, "the restart policy gave up; the server stays failed", "attempts, policy"},

		{PoolAcquired, "a session acquired a server handle", "refs, shared"},
		{PoolReleased, "a session released a server handle", "refs"},
		{PoolUnavailable, "an acquire failed fast while the server retries in background", "error"},
		{PoolIdleStop, "an idle shared server was stopped after its idle timeout", "idle_ms"},

		{SessionOpened, "a session opened", ""},
		{SessionClosed, "a session closed", ""},
		{ReloadStarted, "a reload began", ""},
		{ReloadFinished, "a reload finished", "servers"},
		{RuntimeClosed, "the runtime closed; nothing is left running", ""},
	},
		// Remote servers: kind_remote.go.
		remoteKinds(),
		// Host-side handlers: kind_handlers.go.
		handlerKinds(),
		// The idle health probe and retries the host asks for: kind_idle.go.
		idleKinds())
}

// CheckDocumented reports an error when e's kind is not in the vocabulary,
// e carries an attribute its kind does not document, or an attribute's value
// has the wrong type or is outside its documented values (see Attributes);
// it reports every problem of e, in attribute order.
// Tests run it over every event they record, so the documented vocabulary
// stays true.
func CheckDocumented(e Event) error {
	for _, k := range Kinds() {
		if k.Kind != e.Kind {
			continue
		}
		// An attribute without a documented type is checked by name only;
		// the documentation test reports the missing type.
		attrs, _ := Attributes(k.Kind)
		var errs []error
		for _, name := range slices.Sorted(maps.Keys(e.Attrs)) {
			i := slices.IndexFunc(attrs, func(a AttrInfo) bool { return a.Name == name })
			if i < 0 {
				errs = append(errs, fmt.Errorf("event %s carries attribute %q, which the vocabulary does not document (documented: %s)", e.Kind, name, k.Attrs))
				continue
			}
			if err := attrs[i].check(e.Attrs[name]); err != nil {
				errs = append(errs, fmt.Errorf("event %s: %w", e.Kind, err))
			}
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("event kind %q is not in the vocabulary", e.Kind)
}
