package scenarios

import (
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
)

// Command is one scenario command: its name, usage and description (the
// source of the generated documentation) and its implementation.
type Command struct {
	Name string
	// Usage is the synopsis, e.g. "advance DURATION".
	Usage string
	// Description says what the command does.
	Description string
	// Group orders the documentation: implementation, time, checks,
	// fixture.
	Group string
	// Check tells that the command is a check: a scenario must run at least
	// one check that passes.
	Check bool
	// Needs lists the capabilities the driver must announce for the
	// command to work; scenarios using it guard with [!cap:NAME] skip.
	Needs []driver.Capability
	// Snapshot tells a check of the state at this instant, which waits
	// for nothing: right after `advance` it checks an exact instant, which
	// only the virtual clock has (UsesVirtualTime).
	Snapshot bool

	negatable bool
	run       func(s *state, neg bool, args []string)
}

// Condition is one scenario condition, used as [NAME] or [!NAME] before a
// command.
type Condition struct {
	Name        string
	Usage       string
	Description string
}

// Commands returns the scenario commands in documentation order.
func Commands() []Command {
	out := registry()
	for i := range out {
		out[i].run = nil
	}
	return out
}

// UsesVirtualTime returns why a scenario script (the archive comment of a
// txtar file, or the whole text) needs the virtual clock, and whether it
// does: the first command whose Needs include virtual-clock (now, pending,
// await-timer, cmp-trace: they check exact virtual offsets and timers), or
// "advance then CHECK" for a snapshot check (a command marked Snapshot:
// count, count-journal, running, tools, status, cancel) that follows an
// advance before any check that waits (await, result, ...): on the real
// clock advance waits its duration, scaled, in real time, so what a
// snapshot right after it sees depends on how the machine kept up with
// timers due about then; on the virtual clock it is an exact instant. The
// advance-then-snapshot reason is preferred, as the usual one, and so is
// "advance D" for an advance longer than MaxRealAdvance. Any other
// scenario runs on whichever clock the driver has (start picks the virtual
// one when the driver announces it). Lines conditioned [cap:virtual-clock]
// do not count.
func UsesVirtualTime(script []byte) (string, bool) {
	byName := map[string]Command{}
	for _, c := range registry() {
		byName[c.Name] = c
	}
	first, afterAdvance := "", false
	for _, line := range strings.Split(string(script), "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(strings.TrimSpace(line), " --") {
			break
		}
		c, ok := byName[ScriptCommand(line)]
		if !ok || strings.Contains(line, "[cap:"+string(driver.CapVirtualClock)+"]") {
			// A line run only on the virtual clock does not tie the
			// scenario to it.
			continue
		}
		switch {
		case slices.Contains(c.Needs, driver.CapVirtualClock):
			if first == "" {
				first = c.Name
			}
		case c.Name == "advance":
			afterAdvance = true
			f := strings.Fields(line)
			if d, err := time.ParseDuration(f[len(f)-1]); err == nil && d > MaxRealAdvance {
				return "advance " + f[len(f)-1], true
			}
		case c.Snapshot && afterAdvance:
			return "advance then " + c.Name, true
		case c.Check:
			afterAdvance = false
		}
	}
	return first, first != ""
}

// MaxRealAdvance is the longest advance a scenario may make and still run
// on the real clock: a longer one (e.g. advance 1h, to show that nothing
// polls) would wait minutes of real time even time-scaled; such a scenario
// needs the virtual clock ("uses advance 1h").
const MaxRealAdvance = time.Minute

// virtualTimeList renders the commands whose Needs include virtual-clock.
func virtualTimeList() string {
	var names []string
	for _, c := range registry() {
		if slices.Contains(c.Needs, driver.CapVirtualClock) {
			names = append(names, "`"+c.Name+"`")
		}
	}
	return strings.Join(names, ", ")
}

// snapshotList renders the commands marked Snapshot.
func snapshotList() string {
	var names []string
	for _, c := range registry() {
		if c.Snapshot {
			names = append(names, "`"+c.Name+"`")
		}
	}
	return strings.Join(names, ", ")
}

// ScriptCommand returns the command word of a script line: without its
// [conditions] and a leading "!"; "" for a blank line or a comment.
func ScriptCommand(line string) string {
	f := strings.Fields(line)
	if len(f) > 0 && strings.HasPrefix(f[0], "#") {
		return ""
	}
	for len(f) > 0 && strings.HasPrefix(f[0], "[") {
		f = f[1:]
	}
	if len(f) > 0 && f[0] == "!" {
		f = f[1:]
	}
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// Conditions returns the scenario conditions.
func Conditions() []Condition {
	return []Condition{
		{"cap", "[cap:NAME]", "The driver announces capability NAME (the vocabulary of docs/DRIVER.md; an unknown name is an error, not false). Scenarios start with `[!cap:NAME] skip 'needs NAME'` for every capability they rely on, so an implementation without it skips them with that reason. The virtual clock is such a capability only for a scenario that uses a command needing it (" + virtualTimeList() + ": they check exact virtual offsets and timers) or a snapshot check (" + snapshotList() + ") right after `advance`, before any check that waits (an exact instant), or an `advance` longer than a minute (`uses advance 1h`: time-scaled it would still wait minutes); a line conditioned `[cap:virtual-clock]` does not count. Such a scenario starts `[!cap:virtual-clock] skip 'needs virtual-clock (uses COMMAND)'` (or `(uses advance then CHECK)`); every other scenario runs on the real clock of a driver without it, time-scaled (see `advance`)."},
		{"profile", "[profile:NAME]", "The driver claims conformance profile NAME."},
		{"impl", "[impl:NAME]", "The implementation behind the driver is called NAME in its hello (the reference runtime is `mcplife`)."},
		{"strict", "[strict]", "Strict mode (MCPLIFE_STRICT=1, or `harness run -strict`). It guards the checks that the reference runtime is known to fail today, each under a comment naming the defect, so the catalog stays green while a defect is open and the check runs with one switch."},
		{"external", "[external]", "The driver runs as a separate process (`harness run -impl`, or the external half of the Go test) rather than in the harness process."},
		{"era", "[era:NAME]", "The run puts every fixture server in protocol era NAME (`legacy` or `modern`; `harness run -era`): the same script checks each era's own evidence, e.g. `[era:legacy] await probe.started server=fx method=ping` and `[era:modern] await probe.started server=fx method=tools/list`. A scenario of one era only says so in its header (`# Era:`) instead."},
	}
}

// Groups of commands, in documentation order.
const (
	groupImpl    = "Driving the implementation"
	groupTime    = "Virtual time"
	groupChecks  = "Checks"
	groupFixture = "Fixture processes and files"
)

// GroupOrder is the documentation order of command groups.
var GroupOrder = []string{groupImpl, groupTime, groupChecks, groupFixture}

// registry lists every command with its implementation.
func registry() []Command {
	return []Command{
		{
			Name:        "start",
			Group:       groupImpl,
			Usage:       "start [-clock virtual|real] [-inline FILE] [-config FILE[:LEVEL[:PROVIDER]]]... [-workspace DIR] [-home DIR] [-cache DIR] [-credentials FILE] [-trusted] [-skip-project] [-env NAME[=VALUE]]... [OPTION=VALUE...]",
			Description: "Starts the implementation under test through its driver (hello, then start). `-inline` names a JSON file of the archive mapping server names to server objects; `-config` adds an explicit config file (level `project` or `user`, default `user`; provider default `mcplife`). The config layer sees the script's initial environment ($WORK, PATH, HOME, ...) plus every `-env` variable (NAME alone takes the script's current value), so `${WORK}` works in config files. `-home` defaults to an empty `$WORK/.home`, so no real user config leaks in; there is no workspace unless `-workspace` names one. OPTION=VALUE pairs are start options of the driver protocol with JSON values, e.g. `toolTimeoutMs=1000 lateRegistration=true`. `-credentials` names a JSON file mapping credential ids to `{\"accessToken\": ...}`, the credential provider of servers with an oauth `auth` block (read again on every refresh, so a script can rotate a token by rewriting it). The clock is virtual when the driver announces `virtual-clock` and real otherwise; `-clock virtual` or `-clock real` forces one (virtual fails without the capability). A scenario that needs no exact virtual instant (see the `cap` condition) runs on either clock.",
			run:         cmdStart,
		},
		{
			Name:        "open",
			Group:       groupImpl,
			Usage:       "open [-timeout DURATION] SESSION [&] | open [-timeout DURATION] SESSION [KEY=VALUE|KEY~REGEXP...]",
			Description: "Opens a session (session.open) and prints its start report: `ready`, `failed`, `deferred`, `late` (sorted, comma-separated), `elapsed_ms` and `error.SERVER`. With a trailing `&` it returns at once and `collect open SESSION` waits for the report (session.open waits at the startup gate, so a scenario advances the clock meanwhile). KEY=VALUE (exact) and KEY~REGEXP expectations make it a check.",
			Check:       true,
			run:         cmdOpen,
		},
		{
			Name:        "close",
			Group:       groupImpl,
			Usage:       "close SESSION [&]",
			Description: "Closes a session (session.close). With `&` it returns at once; `collect close SESSION` waits for the answer.",
			run:         cmdClose,
		},
		{
			Name:        "tools",
			Group:       groupImpl,
			Usage:       "tools SESSION [count=N] [deferred=N] [has=NAME]... [lacks=NAME]... [names=LIST] [KEY~REGEXP]",
			Description: "Lists a session's tools (tools.list), one per line: exposed name, server, raw tool name, and `deferred` when defined from the cache. Expectations: `count` and `deferred` (numbers of tools), `has`/`lacks` (an exposed name is / is not listed), `names` (the sorted, comma-separated list); they make it a check.",
			Check:       true,
			Snapshot:    true,
			run:         cmdTools,
		},
		{
			Name:        "await-tools",
			Group:       groupChecks,
			Usage:       "await-tools [-timeout DURATION] SESSION [count=N] [deferred=N] [has=NAME]... [lacks=NAME]... [names=LIST] [KEY~REGEXP]",
			Description: "Waits (in real time, default 60s) until the session's tool list meets the expectations of `tools`, polling tools.list: a tool list is state that changes asynchronously (late registration, list_changed refreshes, restarts), so after awaiting the event that announces a change, use await-tools rather than tools.",
			Check:       true,
			run:         cmdAwaitTools,
		},
		{
			Name:        "call",
			Group:       groupImpl,
			Usage:       "call [-timeout-ms N] SESSION CALLID TOOL [ARGUMENTS-JSON]",
			Description: "Starts a tool call by exposed name in the background (tool.call) and returns once the driver accepted it; `result CALLID` collects the outcome. `-timeout-ms` overrides the tool timeout of this call (0: none). CALLID is the harness's name for the call.",
			run:         cmdCall,
		},
		{
			Name:        "result",
			Group:       groupImpl,
			Usage:       "result [-timeout DURATION] CALLID [KEY=VALUE|KEY~REGEXP|KEY!=VALUE|KEY!~REGEXP...]",
			Description: "Waits (in real time, default 60s) for the outcome of a call and prints it: `outcome` (ok, tool-error, error or aborted), `code` (the runtime error code the result carries, e.g. mcp_tool_timeout), `error` and `message` (the outcome code and message of a failed call), `text`, `isError`, `aborted`, `truncated`, `originalChars`, `signals`, `server` and `tool`. Expectations make it a check; a failed expectation prints the outcome and the trace tail.",
			Check:       true,
			run:         cmdResult,
		},
		{
			Name:        "cancel",
			Group:       groupImpl,
			Usage:       "cancel CALLID [running=true|false]",
			Description: "Cancels a call as its caller would (tool.cancel) and prints whether it was still running; with `running=` it is a check.",
			Check:       true,
			Snapshot:    true,
			run:         cmdCancel,
		},
		{
			Name:        "acquire",
			Group:       groupImpl,
			Usage:       "acquire ACQUIREID SERVER",
			Description: "Starts acquiring a shared server (acquire) and returns once the driver accepted it; `acquired ACQUIREID` collects the outcome.",
			Needs:       []driver.Capability{driver.CapAcquire},
			run:         cmdAcquire,
		},
		{
			Name:        "acquired",
			Group:       groupImpl,
			Usage:       "acquired [-timeout DURATION] ACQUIREID [ok=true|false] [code=CODE] [message~REGEXP]",
			Description: "Waits for the outcome of an acquire and prints `ok`, `code` and `message`; expectations make it a check.",
			Check:       true,
			Needs:       []driver.Capability{driver.CapAcquire},
			run:         cmdAcquired,
		},
		{
			Name:        "release",
			Group:       groupImpl,
			Usage:       "release ACQUIREID",
			Description: "Releases an acquired server, or cancels a pending acquire (release).",
			Needs:       []driver.Capability{driver.CapAcquire},
			run:         cmdRelease,
		},
		{
			Name:        "status",
			Group:       groupImpl,
			Usage:       "status [SERVER [KEY=VALUE|KEY~REGEXP|KEY!=VALUE|KEY!~REGEXP...]]",
			Description: "Prints the status of every server, or of one (status): `state`, `transport`, `tools`, `deferred`, `error`, `stderr`, `shared`, `refs`, `pid`, `connected`, `connectedAtMs`, `restartAttempts`, `policy`, `source.file`, `source.level`, `source.provider`, `warnings`, `sessionReinits`, `streamResumes`. A server the status does not list has `state=absent`. Expectations on one server make it a check.",
			Check:       true,
			Snapshot:    true,
			Needs:       []driver.Capability{driver.CapStatus},
			run:         cmdStatus,
		},
		{
			Name:        "await-status",
			Group:       groupChecks,
			Usage:       "await-status [-timeout DURATION] SERVER KEY=VALUE|KEY~REGEXP|KEY!=VALUE|KEY!~REGEXP...",
			Description: "Waits (in real time, default 60s) until the status of SERVER meets the expectations of `status`, polling it: some state changes run asynchronously after the timer that causes them fired (a backoff reset after the stability window), with no event to await.",
			Check:       true,
			Needs:       []driver.Capability{driver.CapStatus},
			run:         cmdAwaitStatus,
		},
		{
			Name:        "reload",
			Group:       groupImpl,
			Usage:       "reload [&]",
			Description: "Reloads: disconnects every server, rediscovers the configs and reconnects (reload). With `&`, `collect reload` waits for the answer.",
			Needs:       []driver.Capability{driver.CapReload},
			run:         cmdReload,
		},
		{
			Name:        "disconnect",
			Group:       groupImpl,
			Usage:       "disconnect SERVER [&]",
			Description: "Stops a server on purpose (server.disconnect); the answer comes once its process is gone, so for a server that ignores stdin EOF use `&`, advance the clock through the stop grace, then `collect disconnect SERVER`.",
			Needs:       []driver.Capability{driver.CapDisconnect},
			run:         cmdDisconnect,
		},
		{
			Name:        "collect",
			Group:       groupImpl,
			Usage:       "collect [-timeout DURATION] open|close|disconnect|reload [ARG] [KEY=VALUE|KEY~REGEXP...]",
			Description: "Waits for the answer of a request sent with `&` and prints it like the foreground command would; expectations (open's report keys) make it a check.",
			Check:       true,
			run:         cmdCollect,
		},
		{
			Name:        "running",
			Group:       groupChecks,
			Usage:       "running open|close|disconnect|reload [ARG]",
			Description: "Checks that a request sent with `&` has not been answered yet (e.g. a session start held at the startup gate).",
			Check:       true,
			Snapshot:    true,
			run:         cmdRunning,
		},
		{
			Name:        "signal",
			Group:       groupImpl,
			Usage:       "signal SERVER|JOURNAL SIGNAL",
			Description: "Sends SIGNAL (SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGSTOP, SIGCONT) to a server's process: the pid of SERVER from status (needs `status` and `journal-pid`), or of the latest launch recorded in JOURNAL (a path ending in `.journal`).",
			run:         cmdSignal,
		},
		{
			Name:        "shutdown",
			Group:       groupImpl,
			Usage:       "shutdown",
			Description: "Shuts the implementation down (shutdown, then the driver exits) and checks that no process any fixture journal recorded (launches and spawned children) is still alive. Every script ends with the same shutdown and process check; this command makes it explicit and lets checks follow it.",
			Check:       true,
			run:         cmdShutdown,
		},
		{
			Name:        "advance",
			Group:       groupTime,
			Usage:       "advance DURATION | advance -by ATTR KIND [KEY=VALUE...]",
			Description: "Advances the virtual clock (clock.advance) by a Go duration in whole milliseconds, e.g. `250ms`, `2s`, `1m`, and prints the new offset. With `-by ATTR`, by the milliseconds the latest event matching KIND [KEY=VALUE...] announces in its attribute ATTR (the event must have come: await it first), e.g. `advance -by debounce_ms tools.changed server=fx` passes the debounce the implementation armed, whatever its length, so a client is not held to the reference's own default; on the real clock that duration is waited unscaled, since it is the implementation's own. Timers it passes fire; their follow-ups run asynchronously, so await the next announcing event before advancing again. On the real clock (a driver without `virtual-clock`) it waits DURATION times the run's time scale (`harness run -time-scale`, default 0.25, as the conformance suite's real-time mode) in real time, and the durations the scenario configures are scaled alike: start options ending in `Ms`, the `timeout`, `toolTimeout` and `restartDelays` of `-inline` server objects, `call -timeout-ms`; an expectation on an event attribute that reports a configured duration and names it expects the scaled value (`delay_ms` and `next_delay_ms`: restartDelays; `timeout_ms`: the timeouts; `grace_ms`: unregisterGraceMs; `idle_ms`: idleTimeoutMs; e.g. `await restart.scheduled delay_ms=1000` for `\"restartDelays\": [1000]`), and open's `elapsed_ms` expectation is met within the conformance suite's real-time band of the scaled value (50 ms early, 1.5 s plus half of it late). Durations the scenario does not configure (the runtime's own defaults, fixture knobs) are not scaled. A snapshot check right after it (before a check that waits) needs the virtual clock: see UsesVirtualTime and the `cap` condition.",
			run:         cmdAdvance,
		},
		{
			Name:        "now",
			Group:       groupTime,
			Usage:       "now [DURATION]",
			Description: "Prints the implementation's virtual clock offset (clock.now); with DURATION it checks that the offset is exactly that (e.g. `now 0s`: nothing waited on the clock).",
			Check:       true,
			Needs:       []driver.Capability{driver.CapVirtualClock},
			run:         cmdNow,
		},
		{
			Name:        "pending",
			Group:       groupTime,
			Usage:       "pending [DURATION...]",
			Description: "Prints the time left until each pending timer of the virtual clock fires (clock.pending); with durations it checks that list exactly.",
			Check:       true,
			Needs:       []driver.Capability{driver.CapVirtualClock},
			run:         cmdPending,
		},
		{
			Name:        "await-timer",
			Group:       groupTime,
			Usage:       "await-timer [-timeout DURATION] DURATION | await-timer [-timeout DURATION] -by ATTR KIND [KEY=VALUE...]",
			Description: "Waits (in real time, default 60s) until a timer of the virtual clock is pending that fires in exactly DURATION (with `-by ATTR`, the milliseconds the latest matching event announces in ATTR, as for advance): the point the implementation reaches while a wait it armed has not fired yet. A negative check after `advance` (`running`, `count 0 ...`, `count-journal ... 0 ...`) goes right after it, so it is bounded by the implementation's own state, not by real time passing.",
			Check:       true,
			Needs:       []driver.Capability{driver.CapVirtualClock},
			run:         cmdAwaitTimer,
		},
		{
			Name:        "await",
			Group:       groupChecks,
			Usage:       "await [-timeout DURATION] [-after MARK] [-n N] KIND [server=NAME] [session=NAME] [ATTR=VALUE|ATTR~REGEXP|ATTR!=VALUE|ATTR!~REGEXP...]",
			Description: "Checks the events received so far, then waits (in real time, default 60s) for the N-th event (default 1) after MARK of kind KIND whose server, session and attributes meet the expectations (= equal, ~ regular expression, != and !~ their negations), and prints it. On timeout it fails naming what it waited for, with the tail of the trace and of every fixture journal.",
			Check:       true,
			run:         cmdAwait,
		},
		{
			Name:        "await-journal",
			Group:       groupChecks,
			Usage:       "await-journal [-timeout DURATION] [-n N] JOURNAL KIND [FIELD=VALUE|FIELD~REGEXP...]",
			Description: "Waits (in real time, default 60s) until the fixture journal JOURNAL (relative to $WORK) holds N entries (default 1) of kind KIND whose fields meet the expectations, as for await (`launch=N` selects a launch): the server's own evidence that it got that far, e.g. `hang-start` before advancing past a tool timeout. On timeout it fails like await.",
			Check:       true,
			run:         cmdAwaitJournal,
		},
		{
			Name:        "count",
			Group:       groupChecks,
			Usage:       "count [-after MARK] N|>=N|<=N KIND [server=NAME] [session=NAME] [ATTR=VALUE|ATTR~REGEXP...]",
			Description: "Checks how many events received so far (after MARK) match. It does not wait: count after awaiting the event that settles what is counted.",
			Check:       true,
			Snapshot:    true,
			run:         cmdCount,
		},
		{
			Name:        "count-journal",
			Group:       groupChecks,
			Usage:       "count-journal JOURNAL N|>=N|<=N KIND [FIELD=VALUE|FIELD~REGEXP...]",
			Description: "Checks how many entries of the fixture journal JOURNAL match the pattern (kind and field expectations), e.g. `count-journal fx.journal 1 launch` for exactly one process launch, or `count-journal fx.journal 2 call-start args~recovered`.",
			Check:       true,
			Snapshot:    true,
			run:         cmdCountJournal,
		},
		{
			Name:        "mark",
			Group:       groupChecks,
			Usage:       "mark NAME",
			Description: "Remembers the latest event received, so that `await -after NAME`, `count -after NAME` and `cmp-trace -after NAME` only consider later events.",
			run:         cmdMark,
		},
		{
			Name:        "trace",
			Group:       groupChecks,
			Usage:       "trace [-kinds LIST] [-drop ATTRS] [-server NAME] [-session NAME] [-after MARK]",
			Description: "Prints the normalized trace: one line per event with its virtual offset, kind, server, session and sorted attributes, without pids, commands, error texts, exit statuses or call ids, and with $WORK for the work directory. `-kinds` is a comma-separated list of kinds or `family.*` patterns; `-drop` a comma-separated list of further attributes to leave out.",
			run:         cmdTrace,
		},
		{
			Name:        "cmp-trace",
			Group:       groupChecks,
			Usage:       "cmp-trace [-kinds LIST] [-drop ATTRS] [-server NAME] [-session NAME] [-after MARK] SECTION",
			Description: "Compares the normalized trace (filtered as for trace) with the golden file SECTION of the archive and fails with a diff. With `go test ./scenarios -update` or MCPLIFE_UPDATE_GOLDEN=1 it rewrites the section instead. Filter the kinds (and drop attributes) so that only what the scenario determines is compared. The golden lines carry virtual offsets, so it needs the virtual clock.",
			Check:       true,
			Needs:       []driver.Capability{driver.CapVirtualClock},
			run:         cmdCmpTrace,
		},
		{
			Name:        "journal",
			Group:       groupFixture,
			Usage:       "journal JOURNAL [KIND]",
			Description: "Prints the entries of a fixture journal (all, or of one kind) without pids and times.",
			run:         cmdJournal,
		},
		{
			Name:        "fixture-state",
			Group:       groupFixture,
			Usage:       "fixture-state FILE [phase=P] [failOnStart=BOOL] [remainingInitFails=N] [remainingRestartFails=N]",
			Description: "Prints the fixture state file FILE (MCP_FIXTURE_STATE_FILE) and rewrites the given fields, e.g. `failOnStart=false` to let a failing server start again.",
			run:         cmdFixtureState,
		},
		{
			Name:        "fixture-serve",
			Group:       groupFixture,
			Usage:       "fixture-serve NAME [KNOB=VALUE...]",
			Description: "Starts `mcp-fixture` as a remote (http or sse, MCP_FIXTURE_TRANSPORT, default http) server with the given knobs, waits until it listens, and sets $NAME_URL to its endpoint (`http://ADDR/mcp` or `http://ADDR/sse`). Run again for the same NAME after it exited, it listens on the same address, so the implementation can reconnect. The process is killed when the script ends.",
			run:         cmdFixtureServe,
		},
		{
			Name:        "hold",
			Group:       groupFixture,
			Usage:       "hold NAME",
			Description: "Creates the FIFO $WORK/NAME.hold. A server command wrapped as `sh -c '[ -p ${WORK}/NAME.hold ] && read _ < ${WORK}/NAME.hold; exec mcp-fixture'` then blocks before the fixture starts, until `release NAME`: the harness decides, without any timing, when a server can connect (for the startup gate, deferred tools and late registration). Without the FIFO the wrapper starts the fixture at once.",
			run:         cmdHold,
		},
		{
			Name:        "release-hold",
			Group:       groupFixture,
			Usage:       "release-hold NAME",
			Description: "Lets the server waiting on $WORK/NAME.hold start (it writes a line to the FIFO once the wrapper reads it) and removes the FIFO, so later launches start at once.",
			run:         cmdReleaseHold,
		},
		{
			Name:        "fixture-stop",
			Group:       groupFixture,
			Usage:       "fixture-stop NAME [SIGNAL]",
			Description: "Sends SIGNAL (default SIGTERM) to a fixture started with fixture-serve and waits until it has exited.",
			run:         cmdFixtureStop,
		},
	}
}
