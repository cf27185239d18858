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
)

// FaultNames lists the defects a mcplife_faults build can inject.
func FaultNames() []string {
	return []string{faultNoProbe, faultGiveUpAfter3, faultResetOnSuccess, faultNoSingleFlight, faultNoIdleWatch,
		faultUntrustedStdio, faultTruncAfterWrap, faultNoGrace, faultNoFailFast, faultGateWaitsForAll,
		faultAbortProbes, faultNameCapOffByOne, faultTruncOffByOne, faultCacheIgnoresKey, faultDoubleRestart,
		faultNoSessionReinit, faultNoStreamResume, faultNoAuthRefresh, faultIgnoreRetryAfter}
}
