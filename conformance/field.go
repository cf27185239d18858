package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/idle"
	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/onsi/ginkgo/v2"
)

// ProfileField is the field profile: what a user sees of a client when its
// servers crash, hang, exit, loop or misbehave, judged from outside. It is
// the harness's profile, not the driver protocol's: a driver never claims
// it (the protocol's profile vocabulary is closed) and every driver is
// judged on it, with no capability beyond tools.list, tool.call and
// shutdown. Its specs run the implementation on the real clock whatever
// clock the run uses, and their bounds are real seconds: the evidence is
// what any client shows (call outcomes and their latency, the fixture's
// journals, the process table), never the implementation's events.
const ProfileField driver.Profile = "field"

// fieldProfile documents the field profile beside the protocol's.
var fieldProfile = driver.ProfileInfo{
	Name:   ProfileField,
	Covers: "what a user sees when servers crash, hang, exit or misbehave, judged from outside on every driver",
}

// Profiles returns the suite's profiles in documentation order: the
// driver protocol's, which a driver claims, then the field profile, which
// every driver is judged on.
func Profiles() []driver.ProfileInfo {
	return append(driver.Profiles(), fieldProfile)
}

// claimed reports whether a requirement of profile p applies to a driver
// that announced hello: the field profile applies to every driver.
func claimed(hello *driver.HelloResult, p driver.Profile) bool {
	return p == ProfileField || hello.Claims(p)
}

// Measure records what a spec measured (a latency, a count, a rate) for
// its verdict: the report and the matrix cell show it beside pass or fail.
// It is called before the checks that judge the measurement, so a failing
// verdict shows it too.
func (h *H) Measure(format string, args ...any) {
	h.measured = append(h.measured, measuredText(fmt.Sprintf(format, args...)))
	ginkgo.AddReportEntry("measured", ginkgo.ReportEntryVisibilityNever, strings.Join(h.measured, "; "))
}

// goneWithin reports whether process pid is gone within d of real time.
func (h *H) goneWithin(pid int, d time.Duration) bool {
	ctx, cancel := h.boundCtx(max(d, 0))
	defer cancel()
	return proctest.WaitGone(ctx, pid) == nil
}

// fieldStartServers starts the implementation with servers (by name) and
// opens session "main".
func (h *H) fieldStartServers(servers map[string]Server) *driver.StartReport {
	ginkgo.GinkgoHelper()
	h.Start(Setup{Servers: servers})
	return h.Open("main")
}

// fieldStartRemote starts the implementation with the streamable HTTP
// server fx at addr and opens session "main"; a server the implementation
// did not start (one it cannot configure, say) fails the spec with the
// start report's error, measured.
func (h *H) fieldStartRemote(addr string) {
	ginkgo.GinkgoHelper()
	rep := h.fieldStartServers(map[string]Server{"fx": remoteServer(addr)})
	if slices.Contains(rep.Failed, "fx") {
		h.Measure("the server did not start%s", openError(rep, "fx"))
		h.Verify(Response, false, "the streamable HTTP server starts", "failed%s", openError(rep, "fx"))
	}
}

// openError renders the start report's error of server, if any, for a
// measurement or a check: "; error: ...".
func openError(rep *driver.StartReport, server string) string {
	if e := rep.Errors[server]; e != "" {
		return "; error: " + e
	}
	return ""
}

// exposedWithin lists session "main"'s tools, again every half second,
// until server's raw tool is listed or bound of real time has passed since
// from; it returns the exposed name, or "" with the tools last listed.
func (h *H) exposedWithin(server, tool string, from time.Time, bound time.Duration) (string, int) {
	ginkgo.GinkgoHelper()
	for {
		tools := h.Tools("main")
		if i := slices.IndexFunc(tools, func(t driver.Tool) bool { return t.Server == server && t.Tool == tool }); i >= 0 {
			return tools[i].Name, len(tools)
		}
		if time.Since(from)+500*time.Millisecond >= bound {
			return "", len(tools)
		}
		// tools.list only reads: once the implementation is idle with no
		// timer due before the bound, the list cannot change any more.
		if h.idleWithin(from.Add(bound), 500*time.Millisecond) {
			tools = h.Tools("main")
			if i := slices.IndexFunc(tools, func(t driver.Tool) bool { return t.Server == server && t.Tool == tool }); i >= 0 {
				return tools[i].Name, len(tools)
			}
			h.Measure("listing stopped %s after the start: idle, no timer due", seconds(time.Since(from)))
			return "", len(tools)
		}
	}
}

// retryUntil calls tool with a text argument, and again half a second
// after each call that did not answer with it, until one answers or bound
// of real time has passed since from, as a user retries. It stops early
// once the failure is steady: the last steadyCalls calls failed alike,
// each left the same trace at the servers (the kinds of the journal
// entries it added: none when nothing reached a server), and after each
// the implementation went idle with no timer due before the bound
// (internal/idle; with a driver on the real clock, one that lists its
// timers, pending-timers). Then nothing but another call can change the
// implementation, and another call would find it as the last one did.
func (h *H) retryUntil(tool string, from time.Time, bound time.Duration) (calls int, recovered bool, last string) {
	ginkgo.GinkgoHelper()
	deadline := from.Add(bound)
	quiet := 0
	var trace string
	var stale staleSessions
	for !recovered {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		marks, previous, previousTrace := h.journalMarks(), last, trace
		calls++
		r, _, ok := h.timedCall(tool, map[string]any{"text": "are you back?"}, left)
		recovered, last = succeeded(r, ok, "are you back?"), outcomeOf(r, ok)
		if !recovered {
			if s := stale.add(h, marks); s != "" {
				why := fmt.Sprintf("the client sent its session of %s again after the server answered 404 for it, %d calls in a row with no new initialize (a client MUST start a new session on a 404)", s, steadyCalls+1)
				h.Measure("retries stopped after %d calls: %s", calls, why)
				last += "; retries stopped: " + why
				break
			}
		}
		pause := min(500*time.Millisecond, time.Until(deadline))
		if recovered || pause <= 0 {
			continue
		}
		if !h.idleWithin(deadline, pause) {
			quiet = 0
			continue
		}
		trace = h.journalTrace(marks)
		if quiet == 0 || last == previous && trace == previousTrace {
			quiet++
		} else {
			quiet = 1
		}
		if quiet == steadyCalls {
			h.Measure("retries stopped after %d calls: a steady failure", calls)
			break
		}
	}
	return calls, recovered, last
}

// steadyCalls is how many failing calls in a row that change nothing make
// a steady failure (retryUntil).
const steadyCalls = 2

// staleSessions follows, call by call of retryUntil, the sessions the
// server answered 404 for a tools/call: the transport says a client that
// gets a 404 for its session MUST start a new one, so a client that sends
// the same session again, call after call, with no initialize in between,
// has shown its answer to the 404, and waiting out the bound would only
// repeat it.
type staleSessions struct {
	runs map[string]int // journal key and session: calls in a row answered 404
}

// add reads what the journals gained during one failed call (since marks)
// and returns the journal of the server that has now answered 404 for the
// same session on steadyCalls+1 calls in a row with no initialize, or "".
func (s *staleSessions) add(h *H, marks map[string]int) string {
	next := map[string]int{}
	for _, k := range slices.Sorted(maps.Keys(h.journals)) {
		es := h.readJournal(k)
		if len(es) <= marks[k] {
			continue
		}
		reinit := false
		var gone []string
		for _, e := range es[marks[k]:] {
			switch {
			case e.Kind == "initialize":
				reinit = true
			case (e.Kind == "session-unknown" || e.Kind == "session-expired") && e.Str("method") == "tools/call":
				gone = append(gone, e.Str("session"))
			}
		}
		if reinit {
			continue
		}
		for _, id := range gone {
			key := k + " " + id
			if _, counted := next[key]; !counted {
				next[key] = s.runs[key] + 1
			}
		}
	}
	s.runs = next
	for _, key := range slices.Sorted(maps.Keys(next)) {
		if next[key] > steadyCalls {
			return strings.Fields(key)[0]
		}
	}
	return ""
}

// idleWithin waits up to d for the implementation to go idle with no
// timer due before deadline (internal/idle), and reports whether it did.
// Without idle decisions (a driver on the real clock that does not list
// its timers) it waits d and reports false.
func (h *H) idleWithin(deadline time.Time, d time.Duration) bool {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.boundCtx(time.Until(deadline))
	defer cancel()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		var ie *idle.Error
		if errors.As(context.Cause(ctx), &ie) {
			return true
		}
		// The bound passed or a contradiction: wait out the pause.
		select {
		case <-t.C:
		case <-h.ctx.Done():
			h.fail("interrupted")
		}
		return false
	case <-t.C:
		return false
	case <-h.ctx.Done():
		h.fail("interrupted")
		return false
	}
}

// journalMarks returns how many entries each fixture journal of the spec
// holds.
func (h *H) journalMarks() map[string]int {
	marks := make(map[string]int, len(h.journals))
	for k := range h.journals {
		marks[k] = len(h.readJournal(k))
	}
	return marks
}

// journalTrace describes what the fixture journals gained since marks: the
// kinds of the new entries, journal by journal.
func (h *H) journalTrace(marks map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(h.journals)) {
		es := h.readJournal(k)
		if len(es) <= marks[k] {
			continue
		}
		fmt.Fprintf(&b, "%s:", k)
		for _, e := range es[marks[k]:] {
			fmt.Fprintf(&b, " %s", e.Kind)
		}
		b.WriteString(";")
	}
	return b.String()
}

// jsonDiff lists where two decoded JSON values differ, as JSON-pointer-like
// paths: "missing /a/b", "added /c", "changed /d".
func jsonDiff(path string, want, got any) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		var out []string
		for _, k := range slices.Sorted(maps.Keys(wm)) {
			if g, ok := gm[k]; ok {
				out = append(out, jsonDiff(path+"/"+k, wm[k], g)...)
			} else {
				out = append(out, "missing "+path+"/"+k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(gm)) {
			if _, ok := wm[k]; !ok {
				out = append(out, "added "+path+"/"+k)
			}
		}
		return out
	}
	wa, wok := want.([]any)
	ga, gok := got.([]any)
	if wok && gok && len(wa) == len(ga) {
		var out []string
		for i := range wa {
			out = append(out, jsonDiff(fmt.Sprintf("%s/%d", path, i), wa[i], ga[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		if path == "" {
			path = "/"
		}
		return []string{"changed " + path}
	}
	return nil
}

// httpFixtureBack starts the HTTP fixture key again on addr, the address
// its previous process served: the server coming back on the same port.
func (h *H) httpFixtureBack(key, addr string, knobs Knobs) {
	ginkgo.GinkgoHelper()
	h.must(os.Remove(filepath.Join(h.dir, "journal", key+".port")), "removing the port file of "+key)
	k := Knobs{"MCP_FIXTURE_LISTEN": addr}
	maps.Copy(k, knobs)
	if got := h.HTTPFixture(key, k); got != addr {
		h.fail("the HTTP fixture %s came back on %s, not %s", key, got, addr)
	}
}

// maxMeasured caps one measurement: it may quote what a client or server
// said (an error message), which is neither short nor trusted.
const maxMeasured = 300

// measuredText makes a measurement one safe line: white space runs (new
// lines included) become one space, characters that act on a terminal or
// break a report are escaped (textsafe.Line), and it is cut at
// maxMeasured runes.
func measuredText(s string) string {
	s = textsafe.Line(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > maxMeasured {
		s = string(r[:maxMeasured]) + "…"
	}
	return s
}
