package conformance

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/onsi/ginkgo/v2"
)

// The field profile (issue 27): what a user of any MCP client sees when a
// server crashes, hangs, exits or misbehaves. Every driver is judged on it
// with no claim and no capability beyond session.open, tools.list,
// tool.call and shutdown; the specs run on the real clock, find tools by
// their server and raw name (whatever the client calls them), and decide
// from call outcomes and their latency, the fixture's journals and the
// process table. Each verdict records what it measured (Measure), so the
// matrix shows how fast a client recovered, not only whether it did.

// fieldBound is the longest a user should wait, in real time, for a call
// to end once its server died or closed its output, and for a dead server
// to be replaced. The failures it separates are orders of magnitude apart:
// a client that notices the lost connection answers within milliseconds;
// one that does not waits out its request timeout (60 s in the TypeScript
// SDK, 30 minutes in field failure 3). The bound leaves a loaded machine
// two orders of magnitude of slack.
const fieldBound = 10 * time.Second

// fieldStart starts the implementation with the fixture servers of
// knobs (by name) and opens session "main".
func (h *H) fieldStart(servers map[string]Knobs) {
	ginkgo.GinkgoHelper()
	s := map[string]Server{}
	for name, k := range servers {
		s[name] = h.Fixture(name, k)
	}
	h.Start(Setup{Servers: s})
	h.Open("main")
}

// exposed returns the name session "main" exposes the raw tool of server
// under, whatever the client's naming convention.
func (h *H) exposed(server, tool string) string {
	ginkgo.GinkgoHelper()
	tools := h.Tools("main")
	i := slices.IndexFunc(tools, func(t driver.Tool) bool { return t.Server == server && t.Tool == tool })
	h.Verify(Response, i >= 0, fmt.Sprintf("server %s's tool %s is listed", server, tool), "%d tools listed", len(tools))
	return tools[i].Name
}

// timedCall calls tool and waits at most bound, in real time, for its
// outcome; took is how long the outcome took, or bound.
func (h *H) timedCall(tool string, args any, bound time.Duration) (r driver.CallResult, took time.Duration, ok bool) {
	ginkgo.GinkgoHelper()
	start := time.Now()
	id := h.Call("main", tool, args)
	r, ok = h.ResultWithin(id, bound)
	return r, time.Since(start), ok
}

// outcomeOf describes a call's outcome for measurements.
func outcomeOf(r driver.CallResult, ok bool) string {
	switch {
	case !ok:
		return "no outcome"
	case r.Error != nil:
		return "error " + string(r.Error.Code)
	case r.Result.IsError:
		return "tool error"
	}
	return "success"
}

// succeeded reports whether a call answered with text containing want.
func succeeded(r driver.CallResult, ok bool, want string) bool {
	return ok && r.Error == nil && !r.Result.IsError && strings.Contains(r.Result.Text, want)
}

// seconds renders a measured duration for people: "0.02 s", "12.4 s".
func seconds(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

var _ = Spec(Requirement{
	ID: "FIELD-CRASH-001", Level: Must, Profile: ProfileField, Area: "crash", Eras: Both,
	Statement: "An implementation MUST end a tool call in flight with a failure within 10 s when its stdio server is killed during the call, instead of waiting out a request timeout.",
	Source:    Source{"field failure 3", "A dead stdio server is detected within half a second, but calls already in flight hang until their 30-minute tool timeout. Needs: in-flight calls fail fast when the connection is lost."},
}, func(h *H) {
	h.fieldStart(map[string]Knobs{"fx": nil})
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	id := h.Call("main", h.exposed("fx", "sleep"), map[string]any{"ms": 600000})
	h.AwaitJournalFunc("fx", "the call reaching the server", func(j JournalEntries) bool { return len(j.Where("call-start", "tool", "sleep")) > 0 })
	killed := time.Now()
	h.Kill(pid, syscall.SIGKILL)
	r, ok := h.ResultWithin(id, fieldBound)
	took := time.Since(killed)
	h.Measure("call ended %s after the kill (%s)", seconds(took), outcomeOf(r, ok))
	h.Verify(Process, !h.Alive(pid), "the server process is dead", "pid %d", pid)
	h.Verify(Response, ok, "the call in flight ends within 10 s of the kill", "%s after %s", outcomeOf(r, ok), seconds(took))
	h.Verify(Response, r.Error != nil || r.Result.IsError, "it ends as a failure", "%s", outcomeOf(r, ok))
})

var _ = Spec(Requirement{
	ID: "FIELD-CRASH-003", Level: Should, Profile: ProfileField, Area: "crash", Eras: Both,
	Statement: "An implementation SHOULD answer tool calls again within 10 s after its idle stdio server was killed, by starting the server anew.",
	Source:    Source{"field failure 2", "stdio servers never reconnect after a disconnect (remote ones do). Needs: the same recovery path for every transport."},
}, func(h *H) {
	h.fieldStart(map[string]Knobs{"fx": nil})
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	echo := h.exposed("fx", "echo")
	killed := time.Now()
	h.Kill(pid, syscall.SIGKILL)
	h.Verify(Process, h.AwaitGone(pid), "the idle server process is dead", "pid %d", pid)
	// A user retries: a call, and another half a second after each one
	// that did not answer, until the bound.
	calls, recovered := 0, false
	for !recovered {
		left := fieldBound - time.Since(killed)
		if left <= 0 {
			break
		}
		calls++
		r, _, ok := h.timedCall(echo, map[string]any{"text": "are you back?"}, left)
		recovered = succeeded(r, ok, "are you back?")
		if pause := min(500*time.Millisecond, fieldBound-time.Since(killed)); !recovered && pause > 0 {
			h.Pass(pause.Milliseconds())
		}
	}
	took := time.Since(killed)
	launches := len(h.Journal("fx").Launches())
	if recovered {
		h.Measure("answered again %s after the kill (%d calls, %d launches)", seconds(took), calls, launches)
	} else {
		h.Measure("no call answered within %s of the kill (%d calls, %d launches)", seconds(fieldBound), calls, launches)
	}
	h.Verify(Response, recovered, "a call answers again within 10 s of the kill", "%d calls in %s", calls, seconds(took))
	ends := h.Journal("fx").Where("call-end", "tool", "echo")
	h.Verify(Journal, launches >= 2 && len(ends) > 0 && ends[len(ends)-1].PID != pid,
		"a new process of the server answered it", "%d launches, %d echo calls served", launches, len(ends))
})

var _ = Spec(Requirement{
	ID: "FIELD-STDOUT-001", Level: Must, Profile: ProfileField, Area: "crash", Eras: Both,
	Statement: "An implementation MUST end a tool call in flight with a failure within 10 s when its stdio server closes stdout while the process keeps running.",
	Source:    Source{"field failure 3", "calls already in flight hang until their 30-minute tool timeout. Needs: in-flight calls fail fast when the connection is lost."},
}, func(h *H) {
	h.fieldStart(map[string]Knobs{"fx": {"MCP_FIXTURE_CORRUPT_KIND": "close-stdout"}})
	r, took, ok := h.timedCall(h.exposed("fx", "corrupt"), map[string]any{}, fieldBound)
	h.Measure("call ended %s after it was made (%s)", seconds(took), outcomeOf(r, ok))
	h.Verify(Journal, len(h.AwaitJournal("fx", "corrupt", 1).Where("corrupt", "what", "close-stdout")) == 1, "the server closed its stdout", "journaled")
	h.Verify(Response, ok, "the call ends within 10 s of the server closing stdout", "%s after %s", outcomeOf(r, ok), seconds(took))
	h.Verify(Response, r.Error != nil || r.Result.IsError, "it ends as a failure", "%s", outcomeOf(r, ok))
})

var _ = Spec(Requirement{
	ID: "FIELD-LOOP-001", Level: Must, Profile: ProfileField, Area: "crash-loop", Eras: Both,
	Statement: "An implementation MUST NOT start a stdio server that exits with status 0 right after every tools/list more than 6 times in the 5 s after its first start.",
	Source:    Source{"field failure 4", "A server that exits cleanly right after initialize + tools/list was respawned 66,487 times in about 7 minutes by an on-close reconnect."},
}, func(h *H) {
	h.fieldStart(map[string]Knobs{"fx": {"MCP_FIXTURE_EXIT_AFTER": "tools-list", "MCP_FIXTURE_EXIT_CODE": "0"}})
	first := h.AwaitJournal("fx", "exit", 1)
	h.Verify(Journal, first.Last("exit").Int("code") == 0, "the server exited with status 0 after tools/list", "code %d", first.Last("exit").Int("code"))
	// The window is the rate's denominator: five seconds of what the client
	// does on its own. A hot loop shows hundreds of starts in it.
	h.Pass(5000)
	launches := len(h.Journal("fx").Launches())
	h.Measure("%d starts in the first 5 s (%d per minute)", launches, launches*12)
	h.Verify(Journal, launches <= 6, "at most 6 starts in the first 5 s", "%d starts", launches)
})

var _ = Spec(Requirement{
	ID: "FIELD-CLOSE-001", Level: Must, Profile: ProfileField, Area: "teardown", Eras: Both,
	Statement: "An implementation MUST leave no process of a stdio server behind within 10 s of shutting down, including a child the server started.",
	Source:    Source{"field failure 1", "Orphaned server processes after the client exits, including whole generations of children left by wrappers (npm exec -> node) ... Needs: process groups, kill escalation, nothing left after Close."},
}, func(h *H) {
	h.fieldStart(map[string]Knobs{"fx": {"MCP_FIXTURE_SPAWN_CHILD": "1"}})
	j := h.AwaitJournal("fx", "child-started", 1)
	pid, child := j.PIDs()[0], j.Last("child-started").Int("childPid")
	h.Verify(Process, h.Alive(pid) && h.Alive(child), "the server and its child run", "server %d, child %d", pid, child)
	stopped := time.Now()
	h.StopDriver()
	var left []int
	for _, p := range []int{pid, child} {
		if !h.goneWithin(p, fieldBound-time.Since(stopped)) {
			left = append(left, p)
		}
	}
	took := time.Since(stopped)
	if len(left) == 0 {
		h.Measure("server and child gone %s after shutdown began", seconds(took))
	} else {
		h.Measure("%d of 2 processes (server %d, child %d) still alive %s after shutdown began", len(left), pid, child, seconds(took))
		for _, p := range left {
			h.Kill(p, syscall.SIGKILL)
		}
	}
	h.Verify(Process, len(left) == 0, "the server and its child are gone within 10 s of shutdown", "still alive: %v", left)
})
