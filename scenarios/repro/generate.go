package repro

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/event"
)

// Class is what a recorded call was observed to do.
type Class string

// The classes of calls Generate reproduces.
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
	// ClassTimeoutHealthy is a call that timed out while ping still
	// answered: nothing restarts (seed 001 scenario 72c).
	ClassTimeoutHealthy Class = "timeout-healthy"
	// ClassPingDropped is a call that timed out on a server whose ping
	// went unanswered while tools/list answered (field failure 5).
	ClassPingDropped Class = "ping-dropped"
	// ClassExitMidCall is a call cut short by its server's exit; the
	// server was restarted (seed 001 scenario 74).
	ClassExitMidCall Class = "exit-mid-call"
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
	pingFailed := false
	for _, e := range tr.Events {
		if e.Seq <= timeout.Seq || e.Server != c.Server {
			continue
		}
		switch {
		case e.Kind == event.ProbeFinished && attr(e, "healthy") == "true":
			switch {
			case attr(e, "method") == "ping":
				return ClassTimeoutHealthy
			case pingFailed:
				return ClassPingDropped
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

// Result is a generated scenario.
type Result struct {
	// Script is the txtar file.
	Script []byte
	// Classes lists, per call id, what it was classified as.
	Classes map[string]Class
	// Notes says what the scenario does not reproduce.
	Notes []string
}

// fixtureServer is how one recorded server is reproduced.
type fixtureServer struct {
	name     string
	timeout  time.Duration
	mode     Class // the fault class that decides the knobs, "" for none
	launches int
	restarts int
}

// knobs returns the fixture knobs reproducing the server's fault class.
func (s *fixtureServer) knobs() map[string]string {
	k := map[string]string{"MCP_FIXTURE_JOURNAL": "${WORK}/" + s.name + ".journal"}
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

// Generate turns a trace into a scenario named name (its NNN-slug, for the
// header). Every call is mapped to a fixture tool: answered calls to echo,
// tool errors to fail, and the first fault of each server (a hang recovered
// by a restart, a timeout with a healthy probe, a dropped ping, an exit
// mid-call) to the test tool under the knobs that reproduce it. Later
// faults of another kind on the same server, and calls Classify cannot
// place, are left out and listed in Notes.
func Generate(tr *Trace, name, source string) (*Result, error) {
	res := &Result{Classes: map[string]Class{}}
	servers := map[string]*fixtureServer{}
	var names []string
	for n, s := range tr.Servers {
		if !connected(tr, n) {
			res.Notes = append(res.Notes, fmt.Sprintf("server %s never connected in the trace; it is left out", n))
			continue
		}
		servers[n] = &fixtureServer{name: n, timeout: time.Duration(s.ToolTimeoutMS) * time.Millisecond, launches: 1}
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("no server of the trace connected: nothing to replay")
	}

	var body []string
	caps := map[string]bool{"virtual-clock": true}
	add := func(lines ...string) { body = append(body, lines...) }
	var summary []string
	for i, c := range tr.Calls {
		s := servers[c.Server]
		id := fmt.Sprintf("c%d", i+1)
		cl := Classify(tr, c)
		res.Classes[c.ID] = cl
		if s == nil {
			res.Notes = append(res.Notes, fmt.Sprintf("call %s (%s) is on server %s, which is not replayed", c.ID, c.Exposed, c.Server))
			continue
		}
		if isFault(cl) {
			if s.mode != "" && s.mode != cl {
				res.Notes = append(res.Notes, fmt.Sprintf("call %s on %s: %s after %s on the same server is not reproduced (one fault kind per server)", c.ID, c.Server, cl, s.mode))
				continue
			}
			if s.mode == cl && (cl == ClassHangRestart || cl == ClassExitMidCall) {
				res.Notes = append(res.Notes, fmt.Sprintf("call %s on %s: a second %s is not reproduced (the fixture recovers once)", c.ID, c.Server, cl))
				continue
			}
			s.mode = cl
		}
		tool := func(t string) string { return bridge.ToolName(c.Server, t) }
		text := fmt.Sprintf(`'{"text":"%s"}'`, id)
		add("", fmt.Sprintf("# %s: %s (recorded: %s %s, outcome %s%s)", id, cl, c.Exposed, oneLine(string(c.Args)), c.Outcome, codeSuffix(c.Code)))
		summary = append(summary, fmt.Sprintf("%s %s", c.Server, cl))
		switch cl {
		case ClassOK:
			add(fmt.Sprintf("call s1 %s %s %s", id, tool("echo"), text),
				fmt.Sprintf("result %s outcome=ok text~%s", id, id))
		case ClassToolError:
			add(fmt.Sprintf(`call s1 %s %s '{"message":"%s"}'`, id, tool("fail"), id),
				fmt.Sprintf("result %s outcome=tool-error text~%s", id, id))
		case ClassError:
			add(fmt.Sprintf(`call s1 %s %s '{"message":"%s","rpc":true}'`, id, tool("fail"), id),
				fmt.Sprintf("result %s outcome=error", id))
		case ClassHangRestart:
			caps["health-probe"], caps["restart-policies"] = true, true
			add(fmt.Sprintf("call s1 %s %s %s", id, tool("test"), text),
				fmt.Sprintf("await-journal %s.journal hang-start blocking=true", c.Server),
				"advance "+dur(s.toolTimeout()),
				fmt.Sprintf("await tool.timeout server=%s", c.Server),
				fmt.Sprintf("await probe.started server=%s method=ping", c.Server),
				"advance 3s",
				fmt.Sprintf("await probe.started server=%s method=tools/list", c.Server),
				"advance 3s",
				fmt.Sprintf("await probe.finished server=%s method=tools/list healthy=false", c.Server),
				fmt.Sprintf("await process.signaled server=%s step=stdin-closed", c.Server),
				"advance 2s",
				fmt.Sprintf("await restart.scheduled server=%s reason=probe-failure attempt=1 delay_ms=0", c.Server),
				fmt.Sprintf("result %s outcome=ok text~recovered:%s", id, id),
				fmt.Sprintf("await restart.succeeded server=%s reason=probe-failure attempt=1", c.Server))
			s.launches++
			s.restarts++
			if c.Outcome != "ok" {
				res.Notes = append(res.Notes, fmt.Sprintf("call %s: recorded outcome %s%s, the scenario expects the retried call to answer after the restart", c.ID, c.Outcome, codeSuffix(c.Code)))
			}
		case ClassTimeoutHealthy:
			caps["health-probe"] = true
			add(fmt.Sprintf("call s1 %s %s %s", id, tool("test"), text),
				fmt.Sprintf("await-journal %s.journal hang-start blocking=false", c.Server),
				"advance "+dur(s.toolTimeout()),
				fmt.Sprintf("await probe.finished server=%s method=ping healthy=true", c.Server),
				fmt.Sprintf("result %s outcome=error error=mcp_tool_timeout", id))
		case ClassPingDropped:
			caps["health-probe"] = true
			add(fmt.Sprintf("call s1 %s %s %s", id, tool("test"), text),
				fmt.Sprintf("await-journal %s.journal hang-start blocking=false", c.Server),
				"advance "+dur(s.toolTimeout()),
				fmt.Sprintf("await probe.started server=%s method=ping", c.Server),
				fmt.Sprintf("await-journal %s.journal ping action=dropped", c.Server),
				"advance 3s",
				fmt.Sprintf("await probe.finished server=%s method=tools/list healthy=true", c.Server),
				fmt.Sprintf("result %s outcome=error error=mcp_tool_timeout", id))
		case ClassExitMidCall:
			caps["restart-policies"] = true
			add(fmt.Sprintf("call s1 %s %s %s", id, tool("test"), text),
				fmt.Sprintf("result %s outcome=error error=mcp_connection_lost", id),
				fmt.Sprintf("await transport.closed server=%s", c.Server),
				fmt.Sprintf("await restart.succeeded server=%s reason=transport-exit attempt=1", c.Server))
			s.launches++
			s.restarts++
		default:
			body = body[:len(body)-1]
			summary = summary[:len(summary)-1]
			res.Notes = append(res.Notes, fmt.Sprintf("call %s (%s, outcome %s%s) is not reproduced: its lifecycle matches no known pattern", c.ID, c.Exposed, c.Outcome, codeSuffix(c.Code)))
		}
	}
	add("")
	for _, n := range names {
		s := servers[n]
		add(fmt.Sprintf("count-journal %s.journal %d launch", n, s.launches))
		if caps["restart-policies"] {
			add(fmt.Sprintf("count %d restart.attempt server=%s", s.restarts, n))
		}
		if rec := countEvents(tr, n, event.RestartAttempt); rec != s.restarts {
			res.Notes = append(res.Notes, fmt.Sprintf("server %s: %d restart attempts recorded, %d reproduced", n, rec, s.restarts))
		}
	}

	cfg := map[string]any{}
	for _, n := range names {
		s := servers[n]
		entry := map[string]any{"command": "mcp-fixture", "env": s.knobs()}
		if s.timeout > 0 {
			entry["toolTimeout"] = s.timeout.Milliseconds()
		}
		cfg[n] = entry
	}
	servJSON, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}

	var b strings.Builder
	what := "the recorded session"
	if len(summary) > 0 {
		what = strings.Join(uniq(summary), ", ")
	}
	fmt.Fprintf(&b, "# A recorded session replays against the fixture: %s.\n#\n", what)
	fmt.Fprintf(&b, "# Generated by harness repro from %s (%s", source, tr.Format)
	if tr.Recorded != "" {
		fmt.Fprintf(&b, ", recorded %s", tr.Recorded)
	}
	b.WriteString(").\n")
	b.WriteString("# Each recorded call is replayed on a fixture server of the same name:\n")
	b.WriteString("# answered calls on echo, tool errors on fail, and the observed fault on\n")
	b.WriteString("# the test tool under the knobs that reproduce it, in virtual time.\n")
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "# Not reproduced: %s.\n", n)
	}
	fmt.Fprintf(&b, "#\n# Guards: the recorded trace %s (%s).\n\n", source, name)
	for _, c := range []string{"virtual-clock", "health-probe", "restart-policies"} {
		if caps[c] {
			fmt.Fprintf(&b, "[!cap:%s] skip 'needs %s'\n", c, c)
		}
	}
	b.WriteString("\nstart -inline servers.json\n")
	fmt.Fprintf(&b, "open s1 ready=%s\n", strings.Join(names, ","))
	for _, l := range body {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n-- servers.json --\n")
	b.Write(servJSON)
	b.WriteString("\n")
	res.Script = []byte(b.String())
	return res, nil
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

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
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
