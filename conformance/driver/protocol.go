package driver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
)

// ProtocolVersion is the version of the protocol this package speaks: the
// client sends it in hello and the reference driver answers with it. A
// driver answers hello with the version it implements; the client accepts
// this version and every earlier one (AcceptedProtocolVersions), each with
// its own rules, and rejects any other.
const ProtocolVersion = "mcplife-driver/4"

// ProtocolVersion3 is the previous version of the protocol. Version 4 added
// the profile conventions: the requirements that check mcplife's own host
// conventions (exposed tool names, the "MCP error:" prefix, the approval
// default, boundary markers, truncation, injection signals) left the core,
// registration and security profiles for it, so a driver claims them
// separately. A driver of an earlier version is judged on them under the
// profile they belonged to before (conformance.Requirement.Formerly).
const ProtocolVersion3 = "mcplife-driver/3"

// ProtocolVersion2 is an earlier version of the protocol. Version 3 added
// the capability pending-timers and its method timers.pending: a driver on
// the real clock may list its implementation's pending timers, so the
// harness decides a failing wait from evidence in real time too.
const ProtocolVersion2 = "mcplife-driver/2"

// ProtocolVersion1 is the first version of the protocol. Version 2 added
// the eras field of hello; a driver of version 1 announces no eras and is
// taken to speak the legacy era only (HelloResult.SpokenEras). The client
// still accepts it, and the reference driver answers it to a harness that
// asks for it.
const ProtocolVersion1 = "mcplife-driver/1"

// AcceptedProtocolVersions returns the versions the client accepts in a
// driver's hello, newest first.
func AcceptedProtocolVersions() []string {
	return []string{ProtocolVersion, ProtocolVersion3, ProtocolVersion2, ProtocolVersion1}
}

// Era names a generation of the MCP protocol. The vocabulary is closed
// within a protocol version, like capabilities and profiles.
type Era string

// The eras.
const (
	// EraLegacy is the handshake era: initialize and
	// notifications/initialized, protocol versions up to 2025-11-25.
	EraLegacy Era = "legacy"
	// EraModern is the stateless era of revision 2026-07-28: no handshake
	// (the version travels in each request's _meta), server/discover, no
	// protocol sessions, no ping.
	EraModern Era = "modern"
)

// EraInfo documents one era.
type EraInfo struct {
	Name Era
	// Versions are the MCP protocol versions of the era.
	Versions string
	Meaning  string
}

// Eras returns the era vocabulary in documentation order.
func Eras() []EraInfo {
	return []EraInfo{
		{EraLegacy, "2025-11-25 and older", "the handshake era: a connection begins with initialize and notifications/initialized; ping, logging/setLevel, protocol sessions (Mcp-Session-Id) and Last-Event-ID resumption exist"},
		{EraModern, "2026-07-28", "the stateless era: no handshake (the version and client capabilities travel in each request's _meta), server/discover, no ping, no logging/setLevel, no protocol sessions, no resumption"},
	}
}

// The methods, in documentation order.
const (
	MethodHello            = "hello"
	MethodStart            = "start"
	MethodSessionOpen      = "session.open"
	MethodSessionClose     = "session.close"
	MethodToolsList        = "tools.list"
	MethodToolCall         = "tool.call"
	MethodToolCancel       = "tool.cancel"
	MethodAcquire          = "acquire"
	MethodRelease          = "release"
	MethodStatus           = "status"
	MethodReload           = "reload"
	MethodServerDisconnect = "server.disconnect"
	MethodClockAdvance     = "clock.advance"
	MethodClockNow         = "clock.now"
	MethodClockPending     = "clock.pending"
	MethodTimersPending    = "timers.pending"
	MethodShutdown         = "shutdown"
)

// MethodInfo documents one method.
type MethodInfo struct {
	Name string
	// Capability, when not "", is the capability a driver must announce to
	// support the method; without it the driver answers "unsupported".
	Capability Capability
	// Summary says what the method does.
	Summary string
}

// Methods returns every method of the protocol in documentation order.
func Methods() []MethodInfo {
	return []MethodInfo{
		{MethodHello, "", "exchange protocol versions; learn the implementation, its capabilities and profiles"},
		{MethodStart, "", "create the runtime from a configuration; config diagnostics arrive as events"},
		{MethodSessionOpen, "", "open a named session; returns at the startup gate with a start report"},
		{MethodSessionClose, "", "close a session, releasing its servers"},
		{MethodToolsList, "", "list the tools a session exposes"},
		{MethodToolCall, "", "start a tool call; the outcome arrives as a call_result line"},
		{MethodToolCancel, "", "abort a running tool call (the caller's own cancellation)"},
		{MethodAcquire, CapAcquire, "acquire a shared server; the outcome arrives as an acquire_result line"},
		{MethodRelease, CapAcquire, "release a server acquired with acquire"},
		{MethodStatus, CapStatus, "report the status of every configured server"},
		{MethodReload, CapReload, "disconnect everything, rediscover the configs and reconnect"},
		{MethodServerDisconnect, CapDisconnect, "stop a server on purpose; it stays down until reload"},
		{MethodClockAdvance, CapVirtualClock, "advance the virtual clock, firing the timers it passes"},
		{MethodClockNow, "", "the current offset of the implementation's clock"},
		{MethodClockPending, CapVirtualClock, "the pending timers of the virtual clock"},
		{MethodTimersPending, CapPendingTimers, "the implementation's pending timers on the real clock (mcplife-driver/3)"},
		{MethodShutdown, "", "close everything, answer, and exit 0"},
	}
}

// Capability names a promise a driver makes about its implementation. The
// vocabulary is closed within a protocol version: a driver must not announce
// anything else, and the client rejects a hello that does.
type Capability string

// The capabilities.
const (
	CapVirtualClock     Capability = "virtual-clock"
	CapSharedPool       Capability = "shared-pool"
	CapStartupGate      Capability = "startup-gate"
	CapDeferredCache    Capability = "deferred-cache"
	CapLateRegistration Capability = "late-registration"
	CapRestartPolicies  Capability = "restart-policies"
	CapHealthProbe      Capability = "health-probe"
	CapIdleExit         Capability = "idle-exit"
	CapGraceWindow      Capability = "grace-window"
	CapTrustGate        Capability = "trust-gate"
	CapConfigDiscovery  Capability = "config-discovery"
	CapListChanged      Capability = "list-changed"
	CapAcquire          Capability = "acquire"
	CapReload           Capability = "reload"
	CapDisconnect       Capability = "disconnect"
	CapStatus           Capability = "status"
	CapJournalPID       Capability = "journal-pid"
	CapRemoteRecovery   Capability = "remote-recovery"
	CapHostHandlers     Capability = "host-handlers"
	CapPendingTimers    Capability = "pending-timers"
)

// CapabilitySince returns the protocol version that added capability c, or
// "" for a capability of the first version: a driver of an earlier version
// must not announce it.
func CapabilitySince(c Capability) string {
	if c == CapPendingTimers {
		return ProtocolVersion3
	}
	return ""
}

// ProfileSince returns the protocol version that added profile p, or ""
// for a profile of the first version: a driver of an earlier version must
// not claim it.
func ProfileSince(p Profile) string {
	if p == ProfileConventions {
		return ProtocolVersion
	}
	return ""
}

// Knows reports whether profile p is in the vocabulary of the protocol
// version the driver answered hello with.
func (h *HelloResult) Knows(p Profile) bool {
	since := ProfileSince(p)
	return since == "" || versionNumber(h.Protocol) >= versionNumber(since)
}

// versionNumber returns N of "mcplife-driver/N", or 0.
func versionNumber(v string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(v, "mcplife-driver/"))
	if err != nil {
		return 0
	}
	return n
}

// CapabilityInfo documents one capability.
type CapabilityInfo struct {
	Name     Capability
	Promises string
}

// Capabilities returns the capability vocabulary in documentation order.
func Capabilities() []CapabilityInfo {
	return []CapabilityInfo{
		{CapVirtualClock, "start accepts clock \"virtual\": every timer of the implementation (startup gate, timeouts, probes, backoff, grace and idle windows) runs on a clock that moves only with clock.advance, and clock.pending lists the pending timers. Events announcing a wait are emitted only after its timer is armed."},
		{CapSharedPool, "servers are shared by the sessions of one runtime: one connection (one process) per shared server, pool.acquired and pool.released carry the reference count, and a server with \"shared\": false gets a private connection per session."},
		{CapStartupGate, "session.open returns when every server settled or options.startupGateMs passed, whichever is first, with gate.opened and gate.closed events and a report of ready, failed, deferred and late servers."},
		{CapDeferredCache, "with a cacheDir, the tool definitions of a server still connecting at the gate are served from the tool cache (cache.* and tool.deferred events); calling a deferred tool waits for the connection."},
		{CapLateRegistration, "with options.lateRegistration, session.open does not wait for servers without a cache entry; their tools register when they arrive (tools.registered)."},
		{CapRestartPolicies, "per-server restart policies (\"restart\": relentless, once, bounded, never; \"restartDelays\") with restart.* events, and a crash-loop breaker: the backoff resets only after options.stabilityWindowMs of uptime."},
		{CapHealthProbe, "a tool timeout runs a health probe (ping, falling back to tools/list; probe.* events bounded by options.probeTimeoutMs) and restarts the server only when the probe fails."},
		{CapIdleExit, "with options.idleTimeoutMs, a shared server no session references is stopped after that long (pool.idle_stop)."},
		{CapGraceWindow, "a dropped connection keeps its tools registered for options.unregisterGraceMs (tools.unregister_scheduled); a reconnect inside the window cancels the removal (tools.unregister_cancelled)."},
		{CapTrustGate, "project-level stdio servers are blocked (server.blocked, status \"blocked\") and project-level \"!cmd\" values are not run unless start.trusted is true."},
		{CapConfigDiscovery, "config files are discovered in the documented locations under start.workspace and start.home, configFiles and inline servers rank above them, skipProjectConfig drops project-level ones; config.* events report diagnostics."},
		{CapListChanged, "notifications/tools/list_changed from a server refreshes its tools in every session (tools.changed, tools.registered)."},
		{CapAcquire, "the acquire and release methods."},
		{CapReload, "the reload method."},
		{CapDisconnect, "the server.disconnect method."},
		{CapStatus, "the status method."},
		{CapJournalPID, "process.started and process.exited events and status carry the real OS pid of each stdio server process, so the harness can match them with the fixture's journal and check that no process is left behind."},
		{CapRemoteRecovery, "remote (http) servers recover from what fails in the field, with remote.* events: a session the server forgot (404) is re-initialized once and an unseen call retried; a dropped response stream is resumed with Last-Event-ID after its `retry:`; a rejected credential is refreshed once through start.credentialsFile, then the server is in state needs-auth; Retry-After is honoured within the restart policy's longest delay."},
		{CapHostHandlers, "the host-side handlers a server may use, each off unless its config entry enables it: \"progress\": true sends a progress token with each tool call and reports notifications/progress as tool.progress; \"sampling\": true answers sampling/createMessage with model \"mcplife-driver\" and the text `echo: <text of the last message>` (sampling.answered), refused otherwise; \"roots\" advertises those roots and answers roots/list (roots.listed); \"resources\" and \"prompts\": true list them after connect and on list_changed (resources.listed, prompts.listed)."},
		{CapPendingTimers, "(mcplife-driver/3) on the real clock, timers.pending lists every pending timer of the implementation, the driver's own included: each one set and not yet fired or cleared, as the time left until it fires. A timer it cannot see (one of the language's internals) is listed as due now, so the harness never takes an implementation with such a timer for idle. The harness then decides a wait that can no longer succeed as it does with the virtual clock: nothing in flight, nothing changing, and no timer due before the wait's bound."},
	}
}

// Profile names a group of conformance tests. A driver announces the
// profiles it claims to pass; each requires a set of capabilities.
type Profile string

// The profiles.
const (
	ProfileCore             Profile = "core"
	ProfileStartupGate      Profile = "startup-gate"
	ProfileSharedRestart    Profile = "shared-restart"
	ProfileBoundedReconnect Profile = "bounded-reconnect"
	ProfileRegistration     Profile = "registration"
	ProfileSecurity         Profile = "security"
	ProfileRemote           Profile = "remote"
	// ProfileConventions (mcplife-driver/4) is mcplife's host conventions:
	// what the reference host hands the agent beyond MCP itself.
	ProfileConventions Profile = "conventions"
)

// ProfileInfo documents one profile.
type ProfileInfo struct {
	Name     Profile
	Requires []Capability
	Covers   string
}

// Profiles returns the profile vocabulary in documentation order.
func Profiles() []ProfileInfo {
	return []ProfileInfo{
		{ProfileCore, []Capability{CapStatus, CapJournalPID},
			"connect stdio servers, list and call tools, map results and errors, cancel calls, close sessions and shut down without leaving a process behind"},
		{ProfileStartupGate, []Capability{CapVirtualClock, CapStartupGate, CapDeferredCache, CapLateRegistration},
			"bounded session start: gate timing, deferred tools from the cache, late registration"},
		{ProfileSharedRestart, []Capability{CapVirtualClock, CapSharedPool, CapRestartPolicies, CapHealthProbe, CapAcquire, CapIdleExit},
			"one shared process per server, tool timeouts with health probes, restarts and their backoff, acquire, idle exit"},
		{ProfileBoundedReconnect, []Capability{CapVirtualClock, CapRestartPolicies, CapGraceWindow},
			"bounded restart policies, the crash-loop breaker, the unregister grace window"},
		{ProfileRegistration, []Capability{CapListChanged, CapGraceWindow, CapReload, CapDisconnect},
			"tool (un)registration on list_changed, disconnect and reload"},
		{ProfileSecurity, []Capability{CapTrustGate, CapConfigDiscovery},
			"the trust gate, config discovery and shadowing, secrets kept out of project-level servers, stdout lines bounded by maxMessageBytes with sanitized reports"},
		{ProfileRemote, []Capability{CapVirtualClock, CapRestartPolicies, CapStatus, CapRemoteRecovery},
			"remote servers in the field: session expiry (404), stream resumption (Last-Event-ID), credential refresh and needs-auth, Retry-After, refused connections"},
		{ProfileConventions, []Capability{},
			"(mcplife-driver/4) mcplife's host conventions, which a robust client may do otherwise: exposed names (mcp_, sanitized, capped at 64 characters, sorted, collisions resolved), the \"MCP error:\" prefix, requiresApproval by default, an empty \"properties\" added to object schemas, boundary markers, truncation at maxResultChars and injection signals"},
	}
}

// ErrorCode is the stable code of an error response.
type ErrorCode string

// The error codes of responses. What each one means is written once, in
// ErrorCodes, which docs/DRIVER.md renders.
const (
	CodeBadRequest     ErrorCode = "bad_request"
	CodeUnknownMethod  ErrorCode = "unknown_method"
	CodeUnsupported    ErrorCode = "unsupported"
	CodeNotStarted     ErrorCode = "not_started"
	CodeAlreadyStarted ErrorCode = "already_started"
	CodeUnknownSession ErrorCode = "unknown_session"
	CodeSessionExists  ErrorCode = "session_exists"
	CodeUnknownServer  ErrorCode = "unknown_server"
	CodeUnknownID      ErrorCode = "unknown_id"
	CodeDuplicateID    ErrorCode = "duplicate_id"
	CodeShuttingDown   ErrorCode = "shutting_down"
	CodeFailed         ErrorCode = "failed"
)

// ErrorCodeInfo documents one error code.
type ErrorCodeInfo struct {
	Code    ErrorCode
	Meaning string
}

// ErrorCodes returns the error codes of responses in documentation order,
// each with its meaning: the one place the meanings are written.
func ErrorCodes() []ErrorCodeInfo {
	return []ErrorCodeInfo{
		{CodeBadRequest, "the line is not a JSON request object, or the params do not match the method's schema or are out of range"},
		{CodeUnknownMethod, "no such method"},
		{CodeUnsupported, "the method or option needs a capability the driver does not announce (e.g. clock.advance after start with clock \"real\")"},
		{CodeNotStarted, "the method needs a runtime and start has not succeeded"},
		{CodeAlreadyStarted, "start was already called"},
		{CodeUnknownSession, "no open session of that name"},
		{CodeSessionExists, "a session of that name is open or opening"},
		{CodeUnknownServer, "no configured, enabled server of that name"},
		{CodeUnknownID, "no tool call or acquire with that id"},
		{CodeDuplicateID, "the callId or acquireId was used before"},
		{CodeShuttingDown, "the driver is shutting down"},
		{CodeFailed, "the implementation reported an error; the message says which"},
	}
}

// OutcomeCode is the stable code of a failed tool call or acquire, carried
// by the error object of a call_result or acquire_result line.
type OutcomeCode string

// The outcome codes. The mcp_* codes are the runtime's own (see
// runtime/host). What each one means is written once, in OutcomeCodes,
// which docs/DRIVER.md renders.
const (
	OutcomeRestartFailed     OutcomeCode = "mcp_restart_failed"
	OutcomeRestartInProgress OutcomeCode = "mcp_restart_in_progress"
	OutcomeUnavailable       OutcomeCode = "mcp_unavailable"
	OutcomeConnectionLost    OutcomeCode = "mcp_connection_lost"
	OutcomeToolTimeout       OutcomeCode = "mcp_tool_timeout"
	OutcomeBlocked           OutcomeCode = "mcp_blocked"
	OutcomeServerFailed      OutcomeCode = "mcp_server_failed"
	OutcomeAborted           OutcomeCode = "aborted"
	OutcomeUnknownTool       OutcomeCode = "unknown_tool"
	OutcomeClosed            OutcomeCode = "closed"
	OutcomeFailed            OutcomeCode = "failed"
)

// OutcomeCodeInfo documents one outcome code.
type OutcomeCodeInfo struct {
	Code    OutcomeCode
	Meaning string
}

// OutcomeCodes returns the outcome codes in documentation order, each with
// its meaning: the one place the meanings are written.
func OutcomeCodes() []OutcomeCodeInfo {
	return []OutcomeCodeInfo{
		{OutcomeRestartFailed, "the server's last restart attempt failed; another is scheduled"},
		{OutcomeRestartInProgress, "a restart attempt is running (and options.restartWaitMs did not cover it)"},
		{OutcomeUnavailable, "the server is not connected (acquire timed out, or its first initialization failed) and retries in the background"},
		{OutcomeConnectionLost, "the connection ended while the call was in flight"},
		{OutcomeToolTimeout, "the call hit its tool timeout"},
		{OutcomeBlocked, "the server is blocked by the trust gate"},
		{OutcomeServerFailed, "the server failed and its restart policy gave up"},
		{OutcomeAborted, "the call was cancelled with tool.cancel (or by shutdown)"},
		{OutcomeUnknownTool, "the session exposes no tool of that name"},
		{OutcomeClosed, "the session or runtime was closed"},
		{OutcomeFailed, "any other failure (e.g. a JSON-RPC error from the server); the message says which"},
	}
}

// Line types of driver output.
const (
	TypeResponse      = "response"
	TypeEvent         = "event"
	TypeCallResult    = "call_result"
	TypeAcquireResult = "acquire_result"
)

// Clock modes of StartParams.Clock.
const (
	ClockVirtual = "virtual"
	ClockReal    = "real"
)

// Request is one line from the harness.
type Request struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Response is a response line. ID is nil only when the driver could not
// read the id of a malformed request. Exactly one of Result and Error is
// set.
type Response struct {
	Type   string          `json:"type"`
	ID     *int64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RemoteError    `json:"error,omitempty"`
}

// RemoteError is the error object of a response, call_result or
// acquire_result line. As a Go error it is what Client.Request returns for
// an error response.
type RemoteError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Method is the method of the failed request (not sent on the wire).
	Method string `json:"-"`
}

func (e *RemoteError) Error() string {
	if e.Method != "" {
		return fmt.Sprintf("driver: %s: %s: %s", e.Method, e.Code, e.Message)
	}
	return fmt.Sprintf("driver: %s: %s", e.Code, e.Message)
}

// EventLine carries one event of the implementation.
type EventLine struct {
	Type  string      `json:"type"`
	Event event.Event `json:"event"`
}

// CallResultLine carries the outcome of a tool.call.
type CallResultLine struct {
	Type   string       `json:"type"`
	CallID string       `json:"callId"`
	Result CallOutcome  `json:"result"`
	Error  *RemoteError `json:"error,omitempty"`
}

// AcquireResultLine carries the outcome of an acquire.
type AcquireResultLine struct {
	Type      string       `json:"type"`
	AcquireID string       `json:"acquireId"`
	OK        bool         `json:"ok"`
	Error     *RemoteError `json:"error,omitempty"`
}

// HelloParams are the params of hello.
type HelloParams struct {
	Protocol string `json:"protocol"`
}

// Implementation names the MCP client implementation behind a driver.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// HelloResult is the result of hello.
type HelloResult struct {
	Protocol       string         `json:"protocol"`
	Implementation Implementation `json:"implementation"`
	Capabilities   []Capability   `json:"capabilities"`
	Profiles       []Profile      `json:"profiles"`
	// Eras are the MCP protocol eras the implementation speaks (version 2;
	// required and not empty there, absent in version 1).
	Eras []Era `json:"eras,omitempty"`
}

// SpokenEras returns the eras the implementation speaks, in vocabulary
// order: those announced, or EraLegacy alone for a driver of
// ProtocolVersion1, which cannot announce eras.
func (h *HelloResult) SpokenEras() []Era {
	if h.Protocol == ProtocolVersion1 {
		return []Era{EraLegacy}
	}
	var out []Era
	for _, e := range Eras() {
		if slices.Contains(h.Eras, e.Name) {
			out = append(out, e.Name)
		}
	}
	return out
}

// Speaks reports whether the implementation speaks era e (SpokenEras).
func (h *HelloResult) Speaks(e Era) bool { return slices.Contains(h.SpokenEras(), e) }

// Has reports whether the driver announced capability c.
func (h *HelloResult) Has(c Capability) bool { return h != nil && slices.Contains(h.Capabilities, c) }

// Claims reports whether the driver claims profile p.
func (h *HelloResult) Claims(p Profile) bool { return slices.Contains(h.Profiles, p) }

// ConfigFile is an explicit config file of StartParams.
type ConfigFile struct {
	Path     string `json:"path"`
	Level    string `json:"level"`              // "project" or "user"
	Provider string `json:"provider,omitempty"` // "" means "mcplife"
}

// StartOptions are the runtime options of start. A nil field means the
// implementation's default.
type StartOptions struct {
	// StartupGateMs bounds session.open; 0 means do not wait at all.
	StartupGateMs *int64 `json:"startupGateMs,omitempty"`
	// LateRegistration: servers pending at the gate without a cache entry
	// register their tools when they arrive.
	LateRegistration *bool `json:"lateRegistration,omitempty"`
	// ToolTimeoutMs is the default tool timeout; 0 means none.
	ToolTimeoutMs *int64 `json:"toolTimeoutMs,omitempty"`
	// ProbeTimeoutMs bounds each health probe step (> 0).
	ProbeTimeoutMs *int64 `json:"probeTimeoutMs,omitempty"`
	// UnregisterGraceMs keeps a dropped server's tools; 0 unregisters at once.
	UnregisterGraceMs *int64 `json:"unregisterGraceMs,omitempty"`
	// StabilityWindowMs is the uptime after which the backoff resets (> 0).
	StabilityWindowMs *int64 `json:"stabilityWindowMs,omitempty"`
	// AcquireTimeoutMs bounds the acquire of a cold server (> 0).
	AcquireTimeoutMs *int64 `json:"acquireTimeoutMs,omitempty"`
	// IdleTimeoutMs stops unreferenced shared servers; 0 keeps them.
	IdleTimeoutMs *int64 `json:"idleTimeoutMs,omitempty"`
	// RestartWaitMs lets a call wait for a running restart; 0 fails at once.
	RestartWaitMs *int64 `json:"restartWaitMs,omitempty"`
	// ConnectConcurrency caps concurrent connect attempts (> 0).
	ConnectConcurrency *int `json:"connectConcurrency,omitempty"`
	// NoRetryAfterRestart: a call whose timeout caused a restart is not
	// retried on the new connection.
	NoRetryAfterRestart *bool `json:"noRetryAfterRestart,omitempty"`
	// MaxResultChars is the default result cap (> 0).
	MaxResultChars *int `json:"maxResultChars,omitempty"`
}

// StartParams are the params of start.
type StartParams struct {
	Clock             string                     `json:"clock"`
	Workspace         string                     `json:"workspace,omitempty"`
	Home              string                     `json:"home,omitempty"`
	Trusted           bool                       `json:"trusted,omitempty"`
	CacheDir          string                     `json:"cacheDir,omitempty"`
	SkipProjectConfig bool                       `json:"skipProjectConfig,omitempty"`
	ConfigFiles       []ConfigFile               `json:"configFiles,omitempty"`
	Inline            map[string]json.RawMessage `json:"inline,omitempty"`
	// Env, when not nil, is the whole environment the implementation's
	// config layer sees instead of the driver's own.
	Env     map[string]string `json:"env,omitzero"`
	Options *StartOptions     `json:"options,omitempty"`
	// CredentialsFile is a JSON file mapping credential ids to
	// {"accessToken": "..."}, the credential provider of servers with an
	// oauth auth block; it is read again on every refresh.
	CredentialsFile string `json:"credentialsFile,omitempty"`
}

// SessionParams are the params of session.open, session.close and
// tools.list.
type SessionParams struct {
	Session string `json:"session"`
}

// StartReport is the result of session.open.
type StartReport struct {
	Ready    []string          `json:"ready"`
	Failed   []string          `json:"failed"`
	Deferred []string          `json:"deferred"`
	Late     []string          `json:"late"`
	Errors   map[string]string `json:"errors"`
	// ElapsedMs is how long session.open waited, on the implementation's
	// clock.
	ElapsedMs int64 `json:"elapsedMs"`
}

// SessionOpenResult is the result of session.open.
type SessionOpenResult struct {
	Report StartReport `json:"report"`
}

// Tool is one tool of tools.list.
type Tool struct {
	// Name is the exposed name the session calls it by.
	Name string `json:"name"`
	// Server is the configured server name.
	Server string `json:"server"`
	// Tool is the raw MCP tool name on the server.
	Tool             string `json:"tool"`
	Description      string `json:"description"`
	Deferred         bool   `json:"deferred"`
	RequiresApproval bool   `json:"requiresApproval"`
	// InputSchema is the schema as exposed to the agent.
	InputSchema json.RawMessage `json:"inputSchema"`
}

// ToolsListResult is the result of tools.list.
type ToolsListResult struct {
	Tools []Tool `json:"tools"`
}

// ToolCallParams are the params of tool.call.
type ToolCallParams struct {
	Session   string          `json:"session"`
	CallID    string          `json:"callId"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// TimeoutMs overrides the tool timeout of this call; 0 means none.
	TimeoutMs *int64 `json:"timeoutMs,omitempty"`
}

// AcceptedResult is the result of tool.call and acquire: the outcome
// arrives later on its own line.
type AcceptedResult struct {
	Accepted bool `json:"accepted"`
}

// CancelParams are the params of tool.cancel.
type CancelParams struct {
	CallID string `json:"callId"`
}

// CancelResult is the result of tool.cancel.
type CancelResult struct {
	// Running says whether the call was still in flight.
	Running bool `json:"running"`
}

// CallOutcome is the result object of a call_result line: the tool result
// as the agent sees it.
type CallOutcome struct {
	Text          string   `json:"text"`
	IsError       bool     `json:"isError"`
	Aborted       bool     `json:"aborted"`
	Code          string   `json:"code"`
	Truncated     bool     `json:"truncated"`
	OriginalChars int      `json:"originalChars"`
	Signals       []string `json:"signals"`
	Server        string   `json:"server"`
	Tool          string   `json:"tool"`
}

// CallResult is a received call_result.
type CallResult struct {
	CallID string
	Result CallOutcome
	// Error is set when the call failed; Error.Code is an OutcomeCode.
	Error *RemoteError
}

// AcquireParams are the params of acquire.
type AcquireParams struct {
	AcquireID string `json:"acquireId"`
	Server    string `json:"server"`
}

// AcquireResult is a received acquire_result.
type AcquireResult struct {
	AcquireID string
	OK        bool
	Error     *RemoteError
}

// ReleaseParams are the params of release.
type ReleaseParams struct {
	AcquireID string `json:"acquireId"`
}

// ServerParams are the params of server.disconnect.
type ServerParams struct {
	Server string `json:"server"`
}

// Source says where a server's definition came from.
type Source struct {
	File     string `json:"file"`
	Level    string `json:"level"`
	Provider string `json:"provider"`
}

// ServerStatus is one server of the status result.
type ServerStatus struct {
	Name string `json:"name"`
	// State is connecting, connected, restarting, failed, disconnected,
	// disabled, blocked or needs-auth.
	State     string `json:"state"`
	Transport string `json:"transport"`
	Tools     int    `json:"tools"`
	Deferred  bool   `json:"deferred"`
	Error     string `json:"error,omitempty"`
	Stderr    string `json:"stderr,omitempty"`
	// ConnectedAtMs is when the current connection was made, as an offset
	// on the implementation's clock; absent when not connected.
	ConnectedAtMs   *int64   `json:"connectedAtMs,omitempty"`
	Source          Source   `json:"source"`
	Shared          bool     `json:"shared"`
	Refs            int      `json:"refs"`
	PID             int      `json:"pid,omitempty"`
	RestartAttempts int      `json:"restartAttempts"`
	Policy          string   `json:"policy,omitempty"`
	Warnings        []string `json:"warnings,omitempty"`
	// SessionReinits counts remote sessions re-initialized after a 404.
	SessionReinits int `json:"sessionReinits,omitempty"`
	// StreamResumes counts dropped response streams resumed.
	StreamResumes int `json:"streamResumes,omitempty"`
}

// The server states of ServerStatus.State.
var ServerStates = []string{"connecting", "connected", "restarting", "failed", "disconnected", "disabled", "blocked", "needs-auth"}

// StatusResult is the result of status.
type StatusResult struct {
	Servers []ServerStatus `json:"servers"`
}

// AdvanceParams are the params of clock.advance.
type AdvanceParams struct {
	Ms int64 `json:"ms"`
}

// ClockResult is the result of clock.advance and clock.now.
type ClockResult struct {
	NowMs int64 `json:"nowMs"`
}

// PendingResult is the result of clock.pending and timers.pending.
type PendingResult struct {
	// TimersMs is the time left until each pending timer fires, soonest
	// first.
	TimersMs []int64 `json:"timersMs"`
}

// durations returns TimersMs as durations.
func (r PendingResult) durations() []time.Duration {
	out := make([]time.Duration, len(r.TimersMs))
	for i, v := range r.TimersMs {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

// Empty is the result of methods that return nothing.
type Empty struct{}

// validate checks a HelloResult against the protocol: the version, and the
// closed vocabularies of capabilities and profiles.
func (h *HelloResult) validate() error {
	if !slices.Contains(AcceptedProtocolVersions(), h.Protocol) {
		return &VersionError{Got: h.Protocol, Implementation: h.Implementation}
	}
	switch {
	case h.Protocol == ProtocolVersion1 && len(h.Eras) > 0:
		return fmt.Errorf("driver: hello: eras is a field of %s and later, not of %s", ProtocolVersion2, ProtocolVersion1)
	case h.Protocol != ProtocolVersion1 && len(h.Eras) == 0:
		return fmt.Errorf("driver: hello: no eras (protocol %s requires the MCP protocol eras the implementation speaks)", h.Protocol)
	}
	knownEras := map[Era]bool{}
	for _, e := range Eras() {
		knownEras[e.Name] = true
	}
	for i, e := range h.Eras {
		if !knownEras[e] {
			return fmt.Errorf("driver: hello: unknown era %q (protocol %s)", e, h.Protocol)
		}
		if slices.Contains(h.Eras[:i], e) {
			return fmt.Errorf("driver: hello: era %q announced twice", e)
		}
	}
	known := map[Capability]bool{}
	for _, c := range Capabilities() {
		known[c.Name] = true
	}
	for _, c := range h.Capabilities {
		if !known[c] {
			return fmt.Errorf("driver: hello: unknown capability %q (protocol %s)", c, h.Protocol)
		}
		if since := CapabilitySince(c); since != "" && versionNumber(h.Protocol) < versionNumber(since) {
			return fmt.Errorf("driver: hello: capability %q is of %s, not of %s", c, since, h.Protocol)
		}
	}
	profiles := map[Profile]ProfileInfo{}
	for _, p := range Profiles() {
		profiles[p.Name] = p
	}
	for _, p := range h.Profiles {
		info, ok := profiles[p]
		if !ok {
			return fmt.Errorf("driver: hello: unknown profile %q (protocol %s)", p, h.Protocol)
		}
		if !h.Knows(p) {
			return fmt.Errorf("driver: hello: profile %q is of %s, not of %s", p, ProfileSince(p), h.Protocol)
		}
		for _, c := range info.Requires {
			if !h.Has(c) {
				return fmt.Errorf("driver: hello: profile %q requires capability %q, which the driver does not announce", p, c)
			}
		}
	}
	return nil
}

// VersionError reports a driver that speaks another protocol version.
type VersionError struct {
	Got            string
	Implementation Implementation
}

func (e *VersionError) Error() string {
	impl := e.Implementation.Name
	if impl == "" {
		impl = "the driver"
	}
	return fmt.Sprintf("driver: protocol version mismatch: %s speaks %q, this harness speaks %q (and accepts %q)", impl, e.Got, ProtocolVersion, AcceptedProtocolVersions()[1:])
}
