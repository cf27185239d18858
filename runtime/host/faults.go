package host

// The deliberate defects known to the mcplife_faults build (see
// faults_on.go). Each names one broken behaviour.
const (
	faultNoProbe          = "no-probe"            // restart on every tool timeout without probing
	faultGiveUpAfter3     = "give-up-after-3"     // relentless restarts stop after three attempts
	faultResetOnSuccess   = "reset-on-success"    // the backoff step returns to zero on any success
	faultNoSingleFlight   = "no-single-flight"    // every acquire launches its own server
	faultNoIdleWatch      = "no-idle-watch"       // an exit is not noticed until the next call
	faultUntrustedStdio   = "untrusted-stdio"     // project stdio servers run in untrusted workspaces
	faultTruncAfterWrap   = "truncate-after-wrap" // truncation cuts the wrapped text (loses the closing marker)
	faultNoGrace          = "no-grace"            // tools are unregistered at once when a connection drops
	faultNoFailFast       = "no-fail-fast"        // calls in flight wait for their timeout after the server died
	faultGateWaitsForAll  = "gate-waits-for-all"  // the startup gate ignores its timeout
	faultAbortProbes      = "abort-probes"        // a caller's cancellation runs the probe
	faultNameCapOffByOne  = "name-cap-off-by-one" // an exposed name of exactly 64 characters is capped too
	faultTruncOffByOne    = "truncate-off-by-one" // results are cut one character before the limit
	faultCacheIgnoresKey  = "cache-ignores-hash"  // cached tools apply whatever the server's config hash
	faultDoubleRestart    = "double-restart"      // a second restart trigger starts a second restart loop
	faultNoSessionReinit  = "no-session-reinit"   // a 404 for the session is an ordinary transport exit
	faultNoStreamResume   = "no-stream-resume"    // a dropped response stream is not resumed
	faultNoAuthRefresh    = "no-auth-refresh"     // a 401/403 is final, the credential is never refreshed
	faultIgnoreRetryAfter = "ignore-retry-after"  // 429/503 with Retry-After are passed through at once

	// Defects of the core profile (issue 11). Those of the config, bridge
	// and proc packages are read there (internal/faultenv).
	faultApprovalDefaultOff    = "approval-default-off"       // config: requiresApproval defaults to false
	faultCancelNotSent         = "cancel-not-sent"            // a cancelled call is not cancelled on the server
	faultCommandAndURL         = "command-and-url-accepted"   // config: an entry with command and url is run as stdio
	faultEnabledIgnored        = "enabled-ignored"            // config: "enabled": false is ignored
	faultPropertylessDropped   = "propertyless-tools-dropped" // bridge: a tool whose input schema has no properties is dropped
	faultFirstPageOnly         = "first-page-only"            // tools/list pagination is not followed
	faultHandshakeWaits        = "handshake-failure-waits"    // a handshake that failed (the child exited) is reported at the connect timeout
	faultStdoutUnfiltered      = "stdout-unfiltered"          // proc: stdout goes unfiltered to the JSON-RPC decoder
	faultNoLineLimit           = "no-line-limit"              // a stdout line is buffered whatever its length
	faultNoListChangedDebounce = "no-list-changed-debounce"   // every tools/list_changed lists the tools again at once
	faultStderrUndrained       = "stderr-undrained"           // proc: stderr is read only after the process exited
	faultRunsNotCollapsed      = "name-runs-not-collapsed"    // bridge: each invalid character of a name becomes its own "_"
	faultServerPrefixKept      = "server-prefix-kept"         // bridge: a redundant <server>_ tool-name prefix is kept
	faultSortedByRawName       = "tools-sorted-by-raw-name"   // bridge: tools are sorted by raw name, not exposed name
	faultStructuredOnly        = "structured-content-only"    // bridge: result text comes from structuredContent only
	faultIsErrorDropped        = "is-error-dropped"           // a result's isError flag is dropped
	faultRPCErrorRestarts      = "rpc-error-restarts"         // a JSON-RPC error of tools/call restarts the server
	faultUnknownToolGuessed    = "unknown-tool-guessed"       // an unknown mcp_<server>_<tool> name is sent to that server

	// Defects for the other profiles' requirements (issue 11, teethb).
	faultSchemaUnpatched        = "schema-unpatched"          // object schemas without properties pass through (runtime/bridge)
	faultSessionFailsWithServer = "session-fails-with-server" // one failed server fails session start
	faultStatusNoPID            = "status-no-pid"             // status omits the pid of a connected stdio server
	faultNoStderrTail           = "no-stderr-tail"            // a failed start's error leaves out the stderr tail
	faultSignalPIDOnly          = "signal-pid-only"           // stop signals the server's pid, never its process group (runtime/proc)
	faultNoSIGKILL              = "no-sigkill"                // stop escalates to SIGTERM but never to SIGKILL (runtime/proc)
	faultGateHeldByFailed       = "gate-held-by-failed"       // a failed server holds the startup gate until its timeout
	faultGateDropsPending       = "gate-drops-pending"        // without late registration the gate still returns at its timeout
	faultIdleTimeoutIgnored     = "idle-timeout-ignored"      // unreferenced shared servers run until shutdown
	faultPrivatePooled          = "private-pooled"            // "shared": false servers are pooled like shared ones
	faultRestartDelaysIgnored   = "restart-delays-ignored"    // "restartDelays" is ignored for the policy's defaults
	faultBoundedGivesUpEarly    = "bounded-gives-up-early"    // the bounded policy gives up one attempt early
	faultCollisionBothListed    = "collision-both-listed"     // colliding exposed names are all listed (runtime/bridge)
	faultDisconnectRestarts     = "disconnect-restarts"       // server.disconnect restarts the server like a reconnect
	faultEmptyRefreshReplaces   = "empty-refresh-replaces"    // an empty tools refresh replaces the previous tools
	faultReloadStaleConfig      = "reload-stale-config"       // reload reuses the configuration read at start
	faultEnvInherited           = "env-inherited"             // stdio servers inherit the whole environment (runtime/config)
	faultProjectURLExpandsEnv   = "project-url-expands-env"   // project urls expand ${VAR} from the environment (runtime/config)
	faultInjectionBlocks        = "injection-blocks"          // a result with injection signals is replaced by an error
	faultShadowLastWins         = "shadow-last-wins"          // the lowest-ranked definition of a name wins (runtime/config)
	faultSkipAfterPrecedence    = "skip-after-precedence"     // skipProjectConfig drops project servers after they shadowed (runtime/config)
	faultUntrustedCommands      = "untrusted-commands"        // project "!command" values run in untrusted workspaces (runtime/config)
	faultTrustIgnored           = "trust-ignored"             // a trusted workspace still blocks project stdio servers (runtime/config)
	faultErrorsUnwrapped        = "errors-unwrapped"          // error results reach the agent without boundary markers (runtime/bridge)
	faultMarkersKept            = "markers-kept"              // boundary markers inside a result are not neutralized (runtime/bridge)
	faultRemoteInitFinal        = "remote-init-final"         // a remote server whose first connect fails is never retried
	faultStrayReplyFatal        = "stray-reply-fatal"         // a reply that matches no request in flight ends the connection

	// Defects that prove requirements added for mutation survivors.
	faultZeroTimeoutDefault    = "tool-timeout-zero-default" // "toolTimeout": 0 falls back to the default tool timeout
	faultProgressIgnored       = "progress-ignored"          // "progress": true is ignored: calls carry no progress token
	faultPlannedCloseLost      = "planned-close-lost"        // a call cut off by a restart's close fails with mcp_connection_lost
	faultExpandDefault         = "expand-default-ignored"    // ${VAR:-default} is expanded like ${VAR} (runtime/config)
	faultConfigErrUnplaced     = "config-error-unplaced"     // a config entry's error leaves out its file and server (runtime/config)
	faultConnectTimeoutIgnored = "connect-timeout-ignored"   // a server's "timeout" is ignored for the default connect timeout
	faultCallerWaitsForLoop    = "caller-waits-for-loop"     // a timed-out call waits for the whole restart loop, not its first attempt
	faultJSONCRejected         = "jsonc-rejected"            // config files with comments or trailing commas are malformed JSON (runtime/config)
	faultHashRawText           = "hash-raw-text"             // the tool cache is keyed on the config text as written, not its canonical JSON (runtime/config)
	faultMalformedFileFatal    = "malformed-file-fatal"      // one malformed config file ends discovery for every file (runtime/config)
	faultAcquireNotCounted     = "acquire-not-counted"       // a successful acquire holds no reference on the server
	faultURLWithoutTypeStdio   = "url-without-type-stdio"    // a server with a url and no type is taken for stdio (runtime/config)
	faultURLUnchecked          = "url-unchecked"             // a remote server\'s url is not checked at config time (runtime/config)
	faultEnvNamesLiteral       = "env-names-literal"         // an env value naming a set variable stays literal (runtime/config)
	faultSamplingForAll        = "sampling-for-all"          // sampling is offered to every server, whatever its "sampling"
	faultRootsForAll           = "roots-for-all"             // the roots capability is offered to every server, whatever its "roots"
	faultListsIgnored          = "lists-ignored"             // "resources" and "prompts" are never listed after connect
)

// FaultNames lists the defects a mcplife_faults build can inject.
func FaultNames() []string {
	return []string{faultNoProbe, faultGiveUpAfter3, faultResetOnSuccess, faultNoSingleFlight, faultNoIdleWatch,
		faultUntrustedStdio, faultTruncAfterWrap, faultNoGrace, faultNoFailFast, faultGateWaitsForAll,
		faultAbortProbes, faultNameCapOffByOne, faultTruncOffByOne, faultCacheIgnoresKey, faultDoubleRestart,
		faultNoSessionReinit, faultNoStreamResume, faultNoAuthRefresh, faultIgnoreRetryAfter,
		faultApprovalDefaultOff, faultCancelNotSent, faultCommandAndURL, faultEnabledIgnored, faultPropertylessDropped,
		faultFirstPageOnly, faultHandshakeWaits, faultStdoutUnfiltered, faultNoLineLimit, faultNoListChangedDebounce,
		faultStderrUndrained, faultRunsNotCollapsed, faultServerPrefixKept, faultSortedByRawName, faultStructuredOnly,
		faultIsErrorDropped, faultRPCErrorRestarts, faultUnknownToolGuessed,
		faultSchemaUnpatched, faultSessionFailsWithServer, faultStatusNoPID, faultNoStderrTail, faultSignalPIDOnly,
		faultNoSIGKILL, faultGateHeldByFailed, faultGateDropsPending, faultIdleTimeoutIgnored, faultPrivatePooled,
		faultRestartDelaysIgnored, faultBoundedGivesUpEarly, faultCollisionBothListed, faultDisconnectRestarts,
		faultEmptyRefreshReplaces, faultReloadStaleConfig, faultEnvInherited, faultProjectURLExpandsEnv,
		faultInjectionBlocks, faultShadowLastWins, faultSkipAfterPrecedence, faultUntrustedCommands, faultTrustIgnored,
		faultErrorsUnwrapped, faultMarkersKept, faultRemoteInitFinal, faultStrayReplyFatal,
		faultZeroTimeoutDefault, faultProgressIgnored, faultPlannedCloseLost, faultExpandDefault, faultConfigErrUnplaced, faultConnectTimeoutIgnored, faultCallerWaitsForLoop, faultJSONCRejected, faultHashRawText, faultMalformedFileFatal, faultAcquireNotCounted,
		faultURLWithoutTypeStdio, faultURLUnchecked, faultEnvNamesLiteral,
		faultSamplingForAll, faultRootsForAll, faultListsIgnored}
}
