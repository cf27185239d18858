package event

// The vocabulary of the optional idle health probe and of a retry the host
// asks for (issue 31): a wedged server that nobody calls is found by probing
// it on an interval (host.Options.IdleProbeInterval, off by default), and a
// host that knows a server is back (harness doctor -watch's retry key or
// SIGUSR1) can end a backoff wait at once (host.Runtime.RetryNow).
// docs/LIFECYCLE.md ("Server states": "Idle health probe", "Retry now")
// states the rules.
const (
	ProbeIdleScheduled Kind = "probe.idle_scheduled"
	ProbeIdleStarted   Kind = "probe.idle_started"
	RestartRetryNow    Kind = "restart.retry_now"
)

// idleKinds documents the idle probe vocabulary, in documentation order.
func idleKinds() []KindInfo {
	return []KindInfo{
		{ProbeIdleScheduled, "the idle health probe (off unless the host sets an interval) armed its next round: once delay_ms has passed, every connected server with no tool call in flight and no probe running is probed", "delay_ms"},
		{ProbeIdleStarted, "an idle health probe of a connected server with no tool call in flight began; probe.started and probe.finished follow, and a failed probe restarts the server (reason idle-probe-failure)", ""},
		{RestartRetryNow, "the host asked to retry the server now (Runtime.RetryNow): the restart loop's backoff wait ends at once and attempt starts", "attempt"},
	}
}
