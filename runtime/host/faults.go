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
		faultIsErrorDropped, faultRPCErrorRestarts, faultUnknownToolGuessed}
}
