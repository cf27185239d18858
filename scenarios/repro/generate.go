package repro

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/runtime/backoff"
	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/event"
)

// Class is what a recorded call, or a failure between calls, was observed
// to do.
type Class string

// The classes Generate reproduces.
const (
	// ClassOK is a call that answered.
	ClassOK Class = "ok"
	// ClassToolError is a call answered with an isError result.
	ClassToolError Class = "tool-error"
	// ClassError is a call that failed otherwise (a JSON-RPC error).
	ClassError Class = "error"
	// ClassHangRestart is a call that timed out, whose probe failed, and
	// whose server was restarted (the wedged server, seed 001 scenario 71).
	ClassHangRestart Class = "hang-restart"
	// ClassTimeoutHealthy is a call that timed out while the probe found
	// the server healthy (ping answered; in the stateless era, which has
	// no ping, tools/list): nothing restarts (seed 001 scenario 72c).
	ClassTimeoutHealthy Class = "timeout-healthy"
	// ClassPingDropped is a call that timed out on a server whose ping
	// went unanswered while tools/list answered (field failure 5).
	ClassPingDropped Class = "ping-dropped"
	// ClassExitMidCall is a call cut short by its server's exit; the
	// server was restarted (seed 001 scenario 74).
	ClassExitMidCall Class = "exit-mid-call"
	// ClassIdleExit is no call: a server that went away while no call was
	// in flight (an exit, a dropped connection), noticed and restarted
	// (seed 001 scenario 74, field failure 2).
	ClassIdleExit Class = "idle-exit"
	// ClassUnknown is anything else; it is left out of the scenario.
	ClassUnknown Class = "unknown"
)

// Classify says what a recorded call did, from the runtime's events.
func Classify(tr *Trace, c Call) Class {
	var timeout *event.Event
	for i, e := range tr.Events {
		if e.Kind == event.ToolTimeout && attr(e, "call") == c.ID {
			timeout = &tr.Events[i]
			break
		}
	}
	if timeout == nil {
		switch {
		case c.Code == "mcp_connection_lost":
			return ClassExitMidCall
		case c.Outcome == "ok":
			return ClassOK
		case c.Outcome == "tool-error":
			return ClassToolError
		case c.Outcome == "error" && c.Code == "":
			return ClassError
		}
		return ClassUnknown
	}
	pinged, pingFailed := false, false
	for _, e := range tr.Events {
		if e.Seq <= timeout.Seq || e.Server != c.Server {
			continue
		}
		switch {
		case e.Kind == event.ProbeStarted && attr(e, "method") == "ping":
			pinged = true
		case e.Kind == event.ProbeFinished && attr(e, "healthy") == "true":
			switch {
			case attr(e, "method") == "ping":
				return ClassTimeoutHealthy
			case pingFailed:
				return ClassPingDropped
			case !pinged:
				// A probe without ping (the stateless era has none)
				// found the server healthy.
				return ClassTimeoutHealthy
			}
			return ClassUnknown
		case e.Kind == event.ProbeFinished && attr(e, "method") == "ping":
			pingFailed = true
		case e.Kind == event.RestartScheduled && attr(e, "reason") == "probe-failure":
			return ClassHangRestart
		case e.Kind == event.ToolCallStarted:
			return ClassUnknown
		}
	}
	return ClassUnknown
}

func attr(e event.Event, k string) string {
	v, _ := e.Get(k)
	return v
}

// Failure is one failure the trace shows: a call that did not answer, a
// restart of a server, a server that never connected. Every failure of a
// trace is either reproduced by a step of the scenario or named with the
// reason it is not.
type Failure struct {
	// Server is the server it happened to.
	Server string
	// What describes it, e.g. "call c2 (mcp_fx_echo) timed out, its probe
	// failed and fx was restarted".
	What string
	// Step names the scenario step that reproduces it (e.g. "c2", "e1"); ""
	// when it is not reproduced.
	Step string
	// Why says why it is not reproduced, or how the replay differs.
	Why string
}

// Reproduced reports whether a step of the scenario reproduces f.
func (f Failure) Reproduced() bool { return f.Why == "" }

// Result is a generated scenario.
type Result struct {
	// Script is the txtar file.
	Script []byte
	// Classes lists, per call id, what it was classified as.
	Classes map[string]Class
	// Calls is how many recorded calls the scenario replays.
	Calls int
	// Failures lists every failure of the trace, in the order they
	// happened, with the step that reproduces it or why none does.
	Failures []Failure
	// Notes says, for people, what the scenario does not reproduce: every
	// failure not reproduced and every call not replayed. The scenario's
	// header repeats them.
	Notes []string
}

// Partial reports whether the scenario leaves out something of the trace:
// a failure it does not reproduce, or a call it does not replay.
func (r *Result) Partial() bool { return len(r.Notes) > 0 }

// Reproduced counts the failures a step of the scenario reproduces.
func (r *Result) Reproduced() int {
	n := 0
	for _, f := range r.Failures {
		if f.Reproduced() {
			n++
		}
	}
	return n
}

// restartLoop is one run of a server's restart loop in the trace: from the
// restart.scheduled that started it to its restart.succeeded or
// restart.gave_up (or the end of the trace).
type restartLoop struct {
	server, reason string
	first          uint64       // seq of its first restart.scheduled
	closed         *event.Event // the transport.closed before it (transport-exit)
	delays         []int64      // delay_ms of each restart.scheduled
	failed         int          // restart.failed events
	errors         []string     // their errors
	succeeded      bool
	gaveUp         bool
	used           bool
}

// findLoops splits the restart events of the trace into loops.
func findLoops(tr *Trace) []*restartLoop {
	var out []*restartLoop
	cur := map[string]*restartLoop{}
	closed := map[string]*event.Event{}
	for i, e := range tr.Events {
		s := e.Server
		switch e.Kind {
		case event.TransportClosed:
			closed[s] = &tr.Events[i]
		case event.RestartScheduled:
			l := cur[s]
			if l == nil {
				l = &restartLoop{server: s, reason: attr(e, "reason"), first: e.Seq}
				if l.reason == "transport-exit" {
					l.closed = closed[s]
				}
				closed[s] = nil
				cur[s] = l
				out = append(out, l)
			}
			l.delays = append(l.delays, attrInt(e, "delay_ms"))
		case event.RestartFailed:
			if l := cur[s]; l != nil {
				l.failed++
				l.errors = append(l.errors, attr(e, "error"))
			}
		case event.RestartSucceeded:
			if l := cur[s]; l != nil {
				l.succeeded = true
				cur[s] = nil
			}
		case event.RestartGaveUp:
			if l := cur[s]; l != nil {
				l.gaveUp = true
				cur[s] = nil
			} else {
				out = append(out, &restartLoop{server: s, reason: "gave-up", first: e.Seq, gaveUp: true})
			}
		}
	}
	return out
}

func attrInt(e event.Event, k string) int64 {
	switch v := e.Attrs[k].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	case float64:
		return int64(v)
	}
	return 0
}

// fixtureServer is how one recorded server is reproduced.
type fixtureServer struct {
	name      string
	transport string // stdio, http or sse
	// era is the protocol era the server was recorded in (EraLegacy or
	// EraModern), which its fixture speaks; protocol the recorded version
	// ("" when the trace names none: the handshake era is assumed).
	era, protocol string
	alias         string // fixture-serve's NAME for a remote server ($ALIAS_URL)
	timeout       time.Duration
	mode          Class // the fault class that decides the knobs, "" for none
	launches      int   // fixture launches the scenario makes
	attempts      int   // restart attempts the scenario makes
	step          int   // backoff step of the scenario's restart policy
	stableAt      time.Duration
	complete      bool // every failure of the server is reproduced
	// hung: a hang-restart of the server was replayed; what follows on
	// it differs between a client that recovers it (health-probe and
	// restart-policies) and one that does not (blackBox).
	hung bool
}

func (s *fixtureServer) remote() bool { return s.transport == "http" || s.transport == "sse" }

// probes are the steps of the runtime's health probe in the server's era:
// ping, then tools/list; the stateless revision has no ping.
func (s *fixtureServer) probes() []string {
	if s.era == EraModern {
		return []string{"tools/list"}
	}
	return []string{"ping", "tools/list"}
}

// knobs returns the fixture knobs reproducing the server's fault class.
func (s *fixtureServer) knobs() map[string]string {
	k := map[string]string{"MCP_FIXTURE_JOURNAL": "${WORK}/" + s.name + ".journal", "MCP_FIXTURE_ERA": s.era}
	if s.remote() {
		k["MCP_FIXTURE_TRANSPORT"] = s.transport
	}
	switch s.mode {
	case ClassHangRestart:
		k["MCP_FIXTURE_MODE"] = "restart"
		k["MCP_FIXTURE_BLOCK_EVENT_LOOP"] = "1"
		k["MCP_FIXTURE_HANG_MS"] = "600000"
		k["MCP_FIXTURE_STATE_FILE"] = "${WORK}/" + s.name + ".state"
	case ClassTimeoutHealthy:
		k["MCP_FIXTURE_MODE"] = "restart"
		k["MCP_FIXTURE_SKIP_EXIT"] = "1"
		k["MCP_FIXTURE_HANG_MS"] = "600000"
	case ClassPingDropped:
		k["MCP_FIXTURE_MODE"] = "restart"
		k["MCP_FIXTURE_SKIP_EXIT"] = "1"
		k["MCP_FIXTURE_HANG_MS"] = "600000"
		k["MCP_FIXTURE_PING"] = "drop"
	case ClassExitMidCall:
		k["MCP_FIXTURE_MODE"] = "restart"
		k["MCP_FIXTURE_EXIT_DELAY_MS"] = "50"
		k["MCP_FIXTURE_HANG_MS"] = "600000"
		k["MCP_FIXTURE_STATE_FILE"] = "${WORK}/" + s.name + ".state"
	}
	return k
}

// serveLine is the fixture-serve command of a remote server.
func (s *fixtureServer) serveLine() string {
	k := s.knobs()
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(k)) {
		parts = append(parts, n+"="+k[n])
	}
	return fmt.Sprintf("fixture-serve %s %s", s.alias, strings.Join(parts, " "))
}

// The scenario's timing: the driver's defaults (docs/DRIVER.md).
const (
	probeTimeout    = 3 * time.Second // each probe step
	stopGrace       = 2 * time.Second // stdin closed, then SIGTERM
	stabilityWindow = 60 * time.Second
)

// item is one step of the scenario, at the place its anchor event has in
// the trace.
type item struct {
	anchor uint64
	order  int // position among the calls, for calls without events
	call   *Call
	index  int // the call's position in the trace (c<index+1>)
	loop   *restartLoop
}

// gen builds one scenario.
type gen struct {
	tr      *Trace
	res     *Result
	servers map[string]*fixtureServer
	body    []string
	caps    map[string]bool
	now     time.Duration // virtual time the scenario has advanced
	summary []string
	events  int
	// prefix conditions the lines added while it is set (add).
	prefix string
	// blackBox: a hang is replayed; the scenario also judges a client
	// without health-probe and restart-policies (render).
	blackBox bool
}

// The conditions of a replayed hang: its recovery needs health-probe and
// restart-policies (lifecycle); a client with neither is held to the
// black-box expectation instead (the hung call ends, with an error at its
// tool timeout or answered after a recovery the client does not announce;
// a later call on the server ends, with an answer or an error, never a
// hang). render skips a
// client with one of the two only.
const (
	lifecycle = "[cap:health-probe] "
	blackBox  = "[!cap:health-probe] "
)

// add adds lines to the scenario body, each conditioned by g.prefix
// (comments and blank lines as they are).
func (g *gen) add(lines ...string) {
	for _, l := range lines {
		if g.prefix != "" && l != "" && !strings.HasPrefix(l, "#") {
			l = g.prefix + l
		}
		g.body = append(g.body, l)
	}
}

// advance moves the scenario's clock past a wait of the trace. The line
// runs on the virtual clock only: on the real clock (a driver without
// virtual-clock) the implementation's timer fires by itself, and the next
// await waits for what follows in real time, so the scenario replays on
// either clock.
func (g *gen) advance(d time.Duration) {
	if d > 0 {
		g.add("[cap:virtual-clock] advance " + dur(d))
		g.now += d
	}
}

// fail records a failure; why is "" when step reproduces it.
func (g *gen) fail(server, what, step, why string) {
	g.res.Failures = append(g.res.Failures, Failure{Server: server, What: what, Step: step, Why: why})
	if why != "" {
		g.res.Notes = append(g.res.Notes, fmt.Sprintf("%s: %s", what, why))
		if s := g.servers[server]; s != nil {
			s.complete = false
		}
	}
}

// Generate turns a trace into a scenario named name (its NNN-slug, for the
// header). Every call is mapped to a fixture tool: answered calls to echo,
// tool errors to fail, and the faults of each server (a hang recovered by a
// restart, a timeout with a healthy probe, a dropped ping, an exit mid-call)
// to the test tool under the knobs that reproduce it. A server that went
// away while idle is killed (stdio) or stopped (http, sse) at the same
// point, and its restart loop is replayed attempt by attempt on the
// scenario's clock. Every failure of the trace is listed in Failures with
// the step that reproduces it or why none does; what is left out is also in
// Notes and in the scenario's header.
func Generate(tr *Trace, name, source string) (*Result, error) {
	g := &gen{tr: tr, res: &Result{Classes: map[string]Class{}}, servers: map[string]*fixtureServer{}, caps: map[string]bool{}}
	var names []string
	for _, n := range slices.Sorted(maps.Keys(tr.Servers)) {
		s := tr.Servers[n]
		if !connected(tr, n) {
			g.fail(n, fmt.Sprintf("server %s never connected in the trace", n), "", "it is left out (the scenario starts only servers that connected)")
			continue
		}
		fs := &fixtureServer{name: n, transport: s.Transport, timeout: time.Duration(s.ToolTimeoutMS) * time.Millisecond, launches: 1, stableAt: -1, complete: true}
		if fs.transport == "" {
			fs.transport = "stdio"
		}
		fs.era, fs.protocol = tr.ServerEra(n)
		if !isVersion(fs.protocol) {
			// A trace may come from anyone: only a version goes into
			// the scenario's header.
			fs.protocol = ""
		}
		if fs.era == "" {
			fs.era = EraLegacy
		}
		if fs.remote() {
			fs.alias = alias(n, g.servers)
		}
		g.servers[n] = fs
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no server of the trace connected: nothing to replay")
	}

	loops := findLoops(tr)
	started := map[string]uint64{}
	for _, e := range tr.Events {
		if e.Kind == event.ToolCallStarted {
			if id := attr(e, "call"); started[id] == 0 {
				started[id] = e.Seq
			}
		}
	}
	var items []item
	last := uint64(0)
	for i := range tr.Calls {
		c := &tr.Calls[i]
		if seq := started[c.ID]; seq > 0 {
			last = seq
		}
		items = append(items, item{anchor: last, order: i, call: c, index: i})
	}
	// Each call that caused a restart takes its loop.
	callLoop := map[string]*restartLoop{}
	for _, it := range items {
		c := it.call
		cl := Classify(tr, *c)
		g.res.Classes[c.ID] = cl
		var reason string
		var after uint64
		switch cl {
		case ClassHangRestart:
			reason, after = "probe-failure", timeoutSeq(tr, c.ID)
		case ClassExitMidCall:
			reason, after = "transport-exit", started[c.ID]
		default:
			continue
		}
		for _, l := range loops {
			if !l.used && l.server == c.Server && l.reason == reason && l.first > after {
				l.used = true
				callLoop[c.ID] = l
				break
			}
		}
	}
	for _, l := range loops {
		if l.used || g.servers[l.server] == nil {
			continue // a server never connected: named above
		}
		anchor := l.first
		if l.closed != nil {
			anchor = l.closed.Seq
		}
		items = append(items, item{anchor: anchor, order: len(tr.Calls), loop: l})
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if a.anchor != b.anchor {
			if a.anchor < b.anchor {
				return -1
			}
			return 1
		}
		return a.order - b.order
	})

	for _, it := range items {
		if it.call != nil {
			g.call(it.index, *it.call, callLoop[it.call.ID])
		} else {
			g.idle(it.loop)
		}
	}
	g.add("")
	for _, n := range names {
		s := g.servers[n]
		rec := countEvents(tr, n, event.RestartAttempt)
		if rec != s.attempts && s.complete {
			s.complete = false
			g.res.Notes = append(g.res.Notes, fmt.Sprintf("server %s: %d restart attempts recorded, %d replayed", n, rec, s.attempts))
		}
		if !s.complete {
			continue // counts that differ from the trace would assert something else
		}
		cond := ""
		if s.hung {
			cond = lifecycle // the recovery's launches and attempts
		}
		g.add(fmt.Sprintf("%scount-journal %s.journal %d launch", cond, n, s.launches))
		g.add(fmt.Sprintf("%scount %d restart.attempt server=%s", cond, s.attempts, n))
	}
	return g.res, g.render(name, source, names)
}

// alias names a remote server for fixture-serve: its name in upper case,
// other characters as _, unique among the servers.
func alias(name string, taken map[string]*fixtureServer) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(name) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	a := b.String()
	if a == "" || (a[0] >= '0' && a[0] <= '9') {
		a = "S_" + a
	}
	used := func(x string) bool {
		for _, s := range taken {
			if s.alias == x {
				return true
			}
		}
		return false
	}
	for i, base := 2, a; used(a); i++ {
		a = fmt.Sprintf("%s_%d", base, i)
	}
	return a
}

func timeoutSeq(tr *Trace, id string) uint64 {
	for _, e := range tr.Events {
		if e.Kind == event.ToolTimeout && attr(e, "call") == id {
			return e.Seq
		}
	}
	return 0
}

// call replays one recorded call.
func (g *gen) call(i int, c Call, l *restartLoop) {
	s := g.servers[c.Server]
	id := fmt.Sprintf("c%d", i+1)
	cl := g.res.Classes[c.ID]
	what := fmt.Sprintf("call %s (%s): %s, outcome %s%s", c.ID, textsafe.Line(c.Exposed), cl, c.Outcome, codeSuffix(c.Code))
	failure := c.Outcome != "ok" || isFault(cl)
	if s == nil {
		note := fmt.Sprintf("is on server %s, which is not replayed", c.Server)
		if failure {
			g.fail(c.Server, what, "", note)
		} else {
			g.res.Notes = append(g.res.Notes, what+": "+note)
		}
		return
	}
	if isFault(cl) {
		switch {
		case s.mode != "" && s.mode != cl:
			g.fail(c.Server, what, "", fmt.Sprintf("%s after %s on the same server is not reproduced (one fault kind per server)", cl, s.mode))
			return
		case s.mode == cl && (cl == ClassHangRestart || cl == ClassExitMidCall):
			g.fail(c.Server, what, "", fmt.Sprintf("a second %s on one server is not reproduced (the fixture recovers once)", cl))
			return
		}
		s.mode = cl
	}
	tool := func(t string) string { return bridge.ToolName(c.Server, t) }
	text := fmt.Sprintf(`'{"text":"%s"}'`, id)
	mark := "m" + id
	switch cl {
	case ClassOK, ClassToolError, ClassError, ClassHangRestart, ClassTimeoutHealthy, ClassPingDropped, ClassExitMidCall:
	default:
		why := "its lifecycle matches no known pattern"
		if failure {
			g.fail(c.Server, what, "", why)
		} else {
			g.res.Notes = append(g.res.Notes, what+": not replayed: "+why)
		}
		return
	}
	g.res.Calls++
	g.add("", fmt.Sprintf("# %s: %s (recorded: %s %s, outcome %s%s)", id, cl, c.Exposed, oneLine(string(c.Args)), c.Outcome, codeSuffix(c.Code)))
	g.summary = append(g.summary, fmt.Sprintf("%s %s", c.Server, cl))
	switch cl {
	case ClassOK:
		g.add(fmt.Sprintf("call s1 %s %s %s", id, tool("echo"), text))
		g.result(s, id, fmt.Sprintf("result %s outcome=ok text~%s", id, id))
	case ClassToolError:
		g.add(fmt.Sprintf(`call s1 %s %s '{"message":"%s"}'`, id, tool("fail"), id))
		g.result(s, id, fmt.Sprintf("result %s outcome=tool-error text~%s", id, id))
	case ClassError:
		g.add(fmt.Sprintf(`call s1 %s %s '{"message":"%s","rpc":true}'`, id, tool("fail"), id))
		g.result(s, id, fmt.Sprintf("result %s outcome=error", id))
	case ClassHangRestart:
		g.blackBox, s.hung = true, true
		g.add("mark "+mark,
			fmt.Sprintf("call s1 %s %s %s", id, tool("test"), text),
			fmt.Sprintf("await-journal %s.journal hang-start blocking=true", c.Server))
		g.advance(s.toolTimeout())
		// Without health-probe and restart-policies: the hung call ends,
		// with an error at its tool timeout (or with the answer, from a
		// client that recovers the server without announcing it), and a
		// later call on the server ends too (an answer or a clear error,
		// never a hang).
		after := id + "b"
		g.prefix = blackBox
		g.add(fmt.Sprintf("result %s outcome~^(ok|error)$", id),
			fmt.Sprintf("call s1 %s %s '{\"text\":\"%s\"}'", after, tool("echo"), after),
			"[cap:virtual-clock] advance "+dur(s.toolTimeout()),
			fmt.Sprintf("result %s outcome~^(ok|error)$", after))
		// With them: the recorded recovery.
		g.prefix = lifecycle
		defer func() { g.prefix = "" }()
		restartPolicies := g.caps["restart-policies"]
		defer func() { g.caps["restart-policies"] = restartPolicies }()
		g.add(fmt.Sprintf("await -after %s tool.timeout server=%s", mark, c.Server))
		for _, method := range s.probes() {
			g.add(fmt.Sprintf("await -after %s probe.started server=%s method=%s", mark, c.Server, method))
			g.advance(probeTimeout)
		}
		g.add(fmt.Sprintf("await -after %s probe.finished server=%s method=tools/list healthy=false", mark, c.Server))
		if s.remote() {
			// The runtime cannot stop a remote process: the wedged
			// fixture is stopped (SIGTERM moves it to phase exited).
			g.add(fmt.Sprintf("fixture-stop %s SIGTERM", s.alias))
		} else {
			g.add(fmt.Sprintf("await -after %s process.signaled server=%s step=stdin-closed", mark, c.Server))
			g.advance(stopGrace)
		}
		diffs, fails := g.replayLoop(s, l, mark)
		g.add(g.callResult(id, c, "recovered:"+id, fails, &diffs))
		g.fail(c.Server, what, id, strings.Join(diffs, "; "))
	case ClassTimeoutHealthy:
		g.caps["health-probe"] = true
		g.add("mark "+mark,
			fmt.Sprintf("call s1 %s %s %s", id, tool("test"), text),
			fmt.Sprintf("await-journal %s.journal hang-start blocking=false", c.Server))
		g.advance(s.toolTimeout())
		g.add(fmt.Sprintf("await -after %s probe.finished server=%s method=%s healthy=true", mark, c.Server, s.probes()[0]),
			fmt.Sprintf("result %s outcome=error error=mcp_tool_timeout", id))
		g.fail(c.Server, what, id, "")
	case ClassPingDropped:
		g.caps["health-probe"] = true
		g.add("mark "+mark,
			fmt.Sprintf("call s1 %s %s %s", id, tool("test"), text),
			fmt.Sprintf("await-journal %s.journal hang-start blocking=false", c.Server))
		g.advance(s.toolTimeout())
		g.add(fmt.Sprintf("await -after %s probe.started server=%s method=ping", mark, c.Server),
			fmt.Sprintf("await-journal %s.journal ping action=dropped", c.Server))
		g.advance(probeTimeout)
		g.add(fmt.Sprintf("await -after %s probe.finished server=%s method=tools/list healthy=true", mark, c.Server),
			fmt.Sprintf("result %s outcome=error error=mcp_tool_timeout", id))
		g.fail(c.Server, what, id, "")
	case ClassExitMidCall:
		g.caps["restart-policies"] = true
		g.add("mark "+mark,
			fmt.Sprintf("call s1 %s %s %s", id, tool("test"), text),
			fmt.Sprintf("result %s outcome=error error=mcp_connection_lost", id),
			fmt.Sprintf("await -after %s transport.closed server=%s", mark, c.Server))
		diffs, _ := g.replayLoop(s, l, mark)
		g.fail(c.Server, what, id, strings.Join(diffs, "; "))
	}
	if !isFault(cl) && c.Outcome != "ok" {
		g.fail(c.Server, what, id, "")
	}
}

// result adds the result check of call id on server s. After a replayed
// hang of s, the check holds for a client that recovered s; one without
// health-probe and restart-policies still has s wedged, so its call ends
// at the tool timeout: any outcome that ends it passes.
func (g *gen) result(s *fixtureServer, id, check string) {
	if !s.hung {
		g.add(check)
		return
	}
	g.add(lifecycle+check,
		blackBox+"[cap:virtual-clock] advance "+dur(s.toolTimeout()),
		blackBox+fmt.Sprintf("result %s outcome~^(ok|tool-error|error)$", id))
}

// callResult is the result check of a call whose server was restarted:
// the call answers okText when the scenario's first attempt runs at once
// and succeeds (the call is retried on it), and fails otherwise. A
// difference from the recorded outcome is added to diffs.
func (g *gen) callResult(id string, c Call, okText string, fails bool, diffs *[]string) string {
	if !fails {
		if c.Outcome != "ok" {
			*diffs = append(*diffs, fmt.Sprintf("the recorded call failed (%s%s); the scenario's is retried after the restart and answers", c.Outcome, codeSuffix(c.Code)))
		}
		return fmt.Sprintf("result %s outcome=ok text~%s", id, okText)
	}
	if c.Outcome == "ok" {
		*diffs = append(*diffs, "the recorded call answered after the restart; the scenario's fails with the restart's first attempt")
	}
	return fmt.Sprintf("result %s outcome=error", id)
}

// idle replays a restart loop no call caused: the server went away while
// idle (transport-exit), or another restart the scenario cannot cause.
func (g *gen) idle(l *restartLoop) {
	s := g.servers[l.server]
	g.events++
	id := fmt.Sprintf("e%d", g.events)
	what := fmt.Sprintf("server %s: %s", l.server, describeLoop(l))
	if l.reason != "transport-exit" {
		g.fail(l.server, what, "", fmt.Sprintf("a restart for %s with no call behind it is not reproduced", l.reason))
		return
	}
	g.caps["restart-policies"] = true
	mark := "m" + id
	cause := ""
	if l.closed != nil {
		cause = "; " + oneLine(attr(*l.closed, "error"))
		if st := exitStatus(g.tr, l); st != "" {
			cause = "; the process: " + oneLine(st)
		}
	}
	g.add("", fmt.Sprintf("# %s: %s went away while idle (recorded: %s%s)", id, l.server, describeLoop(l), cause))
	g.summary = append(g.summary, fmt.Sprintf("%s %s", l.server, ClassIdleExit))
	g.add("mark " + mark)
	if s.remote() {
		g.add(fmt.Sprintf("fixture-stop %s SIGKILL", s.alias))
	} else {
		g.add(fmt.Sprintf("signal %s.journal SIGKILL", l.server))
	}
	g.add(fmt.Sprintf("await -after %s transport.closed server=%s", mark, l.server))
	diffs, _ := g.replayLoop(s, l, mark)
	g.fail(l.server, what, id, strings.Join(diffs, "; "))
}

// exitStatus is the status of the process whose unplanned exit came with
// l's transport.closed (stdio), "" when the trace has none.
func exitStatus(tr *Trace, l *restartLoop) string {
	for _, e := range tr.Events {
		if e.Seq+5 >= l.closed.Seq && e.Server == l.server && e.Kind == event.ProcessExited && attr(e, "planned") == "false" {
			return attr(e, "status")
		}
	}
	return ""
}

// replayLoop replays the attempts of restart loop l of server s after the
// trigger the caller replayed: the failed attempts (a remote fixture stays
// stopped for them; a stdio fixture cannot fail them), then the attempt
// that succeeded (a remote fixture is served again first), each after the
// delay of the scenario's backoff step. It returns how the replay differs
// from the trace (nothing: the loop is reproduced) and whether the call
// that caused the loop fails in the scenario (its first attempt fails or
// does not run at once).
func (g *gen) replayLoop(s *fixtureServer, l *restartLoop, mark string) (diffs []string, callFails bool) {
	g.caps["restart-policies"] = true
	if l == nil {
		return []string{"the trace has no restart after it"}, false
	}
	// The stability window resets the backoff step once it has passed on
	// the scenario's clock.
	if s.stableAt >= 0 && g.now-s.stableAt >= stabilityWindow {
		s.step = 0
	}
	fails := l.failed
	if s.remote() && fails == 0 {
		// The stopped fixture cannot be served again before an attempt
		// that runs at once.
		fails = 1
		diffs = append(diffs, "the recorded first attempt connected at once; the scenario's first attempt fails, nothing listening until the fixture is served again")
	}
	if !s.remote() && fails > 0 {
		diffs = append(diffs, fmt.Sprintf("%d failed restart attempts are recorded; the fixture relaunches at the first", fails))
		fails = 0
	}
	var delays []int64
	next := func() (int, time.Duration) {
		d := relentless(s.step)
		delays = append(delays, d.Milliseconds())
		return s.attempts + 1, d
	}
	for i := 0; i < fails; i++ {
		a, d := next()
		g.add(fmt.Sprintf("await -after %s restart.scheduled server=%s attempt=%d delay_ms=%d", mark, s.name, a, d.Milliseconds()))
		g.advance(d)
		g.add(fmt.Sprintf("await -after %s restart.failed server=%s attempt=%d", mark, s.name, a))
		s.step++
		s.attempts++
	}
	callFails = fails > 0
	if l.succeeded || (!l.gaveUp && l.failed == 0) {
		if s.remote() {
			g.add(s.serveLine())
			s.launches++
		}
		a, d := next()
		if d > 0 {
			callFails = true
		}
		g.add(fmt.Sprintf("await -after %s restart.scheduled server=%s attempt=%d delay_ms=%d", mark, s.name, a, d.Milliseconds()))
		g.advance(d)
		g.add(fmt.Sprintf("await -after %s restart.succeeded server=%s attempt=%d", mark, s.name, a))
		s.step++
		s.attempts++
		if !s.remote() {
			s.launches++
		}
		s.stableAt = g.now
		if !l.succeeded {
			diffs = append(diffs, "the trace ends before the restart's outcome; the scenario's attempt succeeds")
		}
	} else if l.gaveUp {
		diffs = append(diffs, "the restart policy gave up in the trace; the scenario's servers restart relentlessly")
	} else {
		// The trace ends with the loop still waiting: so does the scenario.
		a, d := next()
		g.add(fmt.Sprintf("await -after %s restart.scheduled server=%s attempt=%d delay_ms=%d", mark, s.name, a, d.Milliseconds()))
	}
	if rec := l.delays; len(diffs) == 0 && !slices.Equal(rec, delays) {
		diffs = append(diffs, fmt.Sprintf("recorded backoff delays %v ms, replayed %v ms (the backoff step differs)", rec, delays))
	}
	return diffs, callFails
}

// relentless is the delay of backoff step k of the relentless policy (the
// default of shared servers).
func relentless(k int) time.Duration {
	d, _ := backoff.RelentlessPolicy().Delay(k)
	return d
}

func describeLoop(l *restartLoop) string {
	var b strings.Builder
	fmt.Fprintf(&b, "restart for %s", l.reason)
	if l.failed > 0 {
		fmt.Fprintf(&b, ", %d failed attempts", l.failed)
	}
	switch {
	case l.succeeded:
		b.WriteString(", recovered")
	case l.gaveUp:
		b.WriteString(", gave up")
	default:
		b.WriteString(", still retrying when the trace ends")
	}
	return b.String()
}

// render writes the scenario.
func (g *gen) render(name, source string, names []string) error {
	tr := g.tr
	cfg := map[string]any{}
	var remotes []string
	for _, n := range names {
		s := g.servers[n]
		var entry map[string]any
		if s.remote() {
			entry = map[string]any{"type": s.transport, "url": "${" + s.alias + "_URL}"}
			remotes = append(remotes, n)
		} else {
			entry = map[string]any{"command": "mcp-fixture", "env": s.knobs()}
		}
		if s.timeout > 0 {
			entry["toolTimeout"] = s.timeout.Milliseconds()
		}
		cfg[n] = entry
	}
	servJSON, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}

	var b strings.Builder
	what := "the recorded session"
	if len(g.summary) > 0 {
		what = strings.Join(uniq(g.summary), ", ")
	}
	fmt.Fprintf(&b, "# A recorded session replays against the fixture: %s.\n#\n", what)
	fmt.Fprintf(&b, "# Generated by harness repro from %s (%s", source, tr.Format)
	if tr.Recorded != "" {
		fmt.Fprintf(&b, ", recorded %s", tr.Recorded)
	}
	b.WriteString(").\n")
	b.WriteString("# Each recorded call is replayed on a fixture server of the same name:\n")
	b.WriteString("# answered calls on echo, tool errors on fail, and the observed fault on\n")
	b.WriteString("# the test tool under the knobs that reproduce it, in virtual time (on\n")
	b.WriteString("# a driver without virtual-clock, in real time: the advance lines are\n")
	b.WriteString("# skipped and the recorded timers fire by themselves); a server that\n")
	b.WriteString("# went away while idle is killed at the same point, and each restart is\n")
	b.WriteString("# replayed attempt by attempt.\n")
	if g.blackBox {
		b.WriteString("# A hang's recovery (lines [cap:health-probe]) needs health-probe and\n")
		b.WriteString("# restart-policies; a client with neither (lines [!cap:health-probe]) is\n")
		b.WriteString("# held to what a user sees: the hung call ends, with an error at its\n")
		b.WriteString("# tool timeout (or answered after a recovery), and a later call on that\n")
		b.WriteString("# server ends too, answered or with an error.\n")
	}
	for _, f := range tr.Faults {
		rule := oneLine(f.Rule)
		if f.Op == "clear" {
			rule = "every rule removed"
		}
		fmt.Fprintf(&b, "# Fault at %s on %s (%s): %s.\n", dur(time.Duration(f.AtMS)*time.Millisecond), textsafe.Line(f.Server), f.describe(), rule)
	}
	fmt.Fprintf(&b, "# Failures in the trace: %d, reproduced: %d.\n", len(g.res.Failures), g.res.Reproduced())
	for _, n := range g.res.Notes {
		fmt.Fprintf(&b, "# Not reproduced: %s.\n", textsafe.Line(strings.TrimSuffix(n, ".")))
	}
	if d := g.eraDirective(names); d != "" {
		b.WriteString("#\n" + d)
	}
	fmt.Fprintf(&b, "#\n# Guards: the recorded trace %s (%s).\n\n", source, name)
	for _, c := range []string{"health-probe", "restart-policies"} {
		if g.caps[c] {
			fmt.Fprintf(&b, "[!cap:%s] skip 'needs %s'\n", c, c)
		}
	}
	if g.blackBox {
		// A replayed hang judges a client with both capabilities on the
		// recorded recovery, and one with neither on the black-box
		// expectation; one with only one of them is skipped.
		if !g.caps["health-probe"] {
			b.WriteString("[!cap:health-probe] [cap:restart-policies] skip 'needs health-probe (with restart-policies, for the recorded recovery)'\n")
		}
		if !g.caps["restart-policies"] {
			b.WriteString("[cap:health-probe] [!cap:restart-policies] skip 'needs restart-policies (with health-probe, for the recorded recovery)'\n")
		}
	}
	b.WriteString("\n")
	var envs []string
	for _, n := range remotes {
		s := g.servers[n]
		b.WriteString(s.serveLine() + "\n")
		envs = append(envs, "-env "+s.alias+"_URL")
	}
	b.WriteString(strings.TrimSpace("start -inline servers.json "+strings.Join(envs, " ")) + "\n")
	fmt.Fprintf(&b, "open s1 ready=%s\n", strings.Join(names, ","))
	for _, l := range g.body {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n-- servers.json --\n")
	b.Write(servJSON)
	b.WriteString("\n")
	g.res.Script = []byte(b.String())
	return nil
}

// isVersion tells whether v has the form of an MCP protocol version,
// YYYY-MM-DD.
func isVersion(v string) bool {
	if len(v) != 10 {
		return false
	}
	for i, r := range v {
		if (i == 4 || i == 7) != (r == '-') || (r != '-' && (r < '0' || r > '9')) {
			return false
		}
	}
	return true
}

// eraDirective is the scenario's "# Era:" header lines: every fixture
// server speaks the era its server was recorded in (MCP_FIXTURE_ERA), so
// a scenario whose servers share one era runs in that era only; one with
// servers of both eras has none (it runs in both, each server in its own
// era).
func (g *gen) eraDirective(names []string) string {
	era := ""
	var versions []string
	for _, n := range names {
		s := g.servers[n]
		if era != "" && s.era != era {
			return ""
		}
		era = s.era
		if s.protocol != "" && !slices.Contains(versions, s.protocol) {
			versions = append(versions, s.protocol)
		}
	}
	protocol := "protocol " + strings.Join(versions, ", ")
	if len(versions) == 0 {
		protocol = "protocol 2026-07-28 or later"
	}
	if era == EraModern {
		return fmt.Sprintf("# Era: modern. The session was recorded in the stateless era\n# (%s), so the fixture speaks only that era\n# (MCP_FIXTURE_ERA=modern).\n", protocol)
	}
	if len(versions) == 0 {
		return "# Era: legacy. The trace names no protocol version: the handshake era\n# is assumed, so the fixture speaks only that era (MCP_FIXTURE_ERA=legacy).\n"
	}
	return fmt.Sprintf("# Era: legacy. The session was recorded in the handshake era\n# (%s), so the fixture speaks only that era\n# (MCP_FIXTURE_ERA=legacy).\n", protocol)
}

func (s *fixtureServer) toolTimeout() time.Duration {
	if s.timeout > 0 {
		return s.timeout
	}
	return 5 * time.Minute
}

func isFault(c Class) bool {
	switch c {
	case ClassHangRestart, ClassTimeoutHealthy, ClassPingDropped, ClassExitMidCall:
		return true
	}
	return false
}

func connected(tr *Trace, server string) bool {
	return countEvents(tr, server, event.ServerConnected) > 0
}

func countEvents(tr *Trace, server string, kind event.Kind) int {
	n := 0
	for _, e := range tr.Events {
		if e.Server == server && e.Kind == kind {
			n++
		}
	}
	return n
}

// dur renders a duration for the advance command.
func dur(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int64(d/time.Second))
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func codeSuffix(code string) string {
	if code == "" {
		return ""
	}
	return " " + code
}

// oneLine shortens text from a trace for a comment of the scenario, its
// control characters escaped (a trace may come from anyone).
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "..."
	}
	return textsafe.Line(s)
}

func uniq(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
