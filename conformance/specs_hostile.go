package conformance

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/runtime/event"
)

// Requirements about hostile servers (issue 15): servers outside the host's
// control print banners on stdout, write invalid UTF-8, send one endless
// line, answer ids nobody used, flood notifications, close stdout, flood
// stderr or list absurd tools. Whatever one server sends, it is handled or
// fails alone and the other servers keep answering. They belong to the core
// profile (area "hostile"): every implementation runs servers it does not
// control. How each is bounded (limits, events) is the implementation's;
// these check only what a user would see.

const hostileSource = "issue 15"

// neighbourAnswers checks that the well-behaved server "fx" still answers.
func (h *H) neighbourAnswers(when string) {
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "neighbour"})
	h.Verify(Response, r.Error == nil && !r.Result.IsError && strings.Contains(r.Result.Text, "neighbour"),
		"the other server still answers "+when, "error=%v text=%q", r.Error, r.Result.Text)
	j := h.AwaitJournalFunc("fx", "the neighbour's echo call", func(j JournalEntries) bool { return len(j.Where("call-end", "tool", "echo")) > 0 })
	h.Verify(Journal, len(j.Where("call-end", "outcome", "ok")) > 0, "the other server's process served the call "+when, "%d call-end entries", j.Count("call-end"))
}

func (h *H) startHostile(bad Knobs, extra ...func(Server) Server) {
	s := h.Fixture("bad", bad)
	for _, f := range extra {
		s = f(s)
	}
	h.Start(Setup{Servers: map[string]Server{"bad": s, "fx": h.Fixture("fx", nil)}})
}

var _ = Spec(Requirement{
	ID: "CORE-HOSTILE-001", Level: Must, Profile: driver.ProfileCore, Area: "hostile", Eras: Both,
	Statement: "An implementation MUST connect a stdio server that prints non-JSON lines on stdout (a banner before the handshake, a log line between messages) and keep its connection and calls working.",
	Source:    Source{hostileSource, "Real servers print banners on stdout ... the bad server fails alone ... the others keep working"},
}, func(h *H) {
	h.startHostile(Knobs{"MCP_FIXTURE_CORRUPT_AT": "start", "MCP_FIXTURE_CORRUPT_KIND": "banner"})
	rep := h.Open("main")
	h.Verify(Response, contains(rep.Ready, "bad") && contains(rep.Ready, "fx"), "both servers connect despite the banner", "ready=%v failed=%v", rep.Ready, rep.Failed)
	r := h.CallNow("main", "mcp_bad_echo", map[string]any{"text": "after the banner"})
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "after the banner"), "the bannering server answers", "error=%v text=%q", r.Error, r.Result.Text)
	h.Verify(Journal, len(h.Journal("bad").Launches()) == 1, "it was launched once", "%d launches", len(h.Journal("bad").Launches()))
	h.neighbourAnswers("after the banner")
})

var _ = Spec(Requirement{
	ID: "CORE-HOSTILE-002", Level: Must, Profile: driver.ProfileCore, Area: "hostile", Eras: Both,
	Statement: "An implementation MUST hand a tool result that arrived with invalid UTF-8 bytes to the caller as valid UTF-8 text, and keep the connection.",
	Source:    Source{hostileSource, "Real servers ... write invalid UTF-8"},
}, func(h *H) {
	h.startHostile(Knobs{"MCP_FIXTURE_CORRUPT_KIND": "invalid-utf8"})
	h.Open("main")
	r := h.CallNow("main", "mcp_bad_corrupt", map[string]any{})
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "corrupted") && utf8.ValidString(r.Result.Text),
		"the call answers with valid UTF-8 text", "error=%v text=%q", r.Error, r.Result.Text)
	r2 := h.CallNow("main", "mcp_bad_echo", map[string]any{"text": "still connected"})
	h.Verify(Response, r2.Error == nil && strings.Contains(r2.Result.Text, "still connected"), "the server keeps answering", "error=%v", r2.Error)
	h.neighbourAnswers("after the invalid UTF-8")
})

var _ = Spec(Requirement{
	ID: "CORE-HOSTILE-003", Level: Must, Profile: driver.ProfileCore, Area: "hostile", Eras: Both,
	Statement: "An implementation MUST NOT let a stdio server that writes one 64 MiB line without a newline wedge the session: session start returns and the other servers keep answering.",
	Source:    Source{hostileSource, "Real servers ... send 50 MB lines ... the bad server fails alone with a clear status and event (what it sent, capped)"},
}, func(h *H) {
	h.startHostile(Knobs{"MCP_FIXTURE_CORRUPT_AT": "initialized", "MCP_FIXTURE_CORRUPT_KIND": "oversized", "MCP_FIXTURE_CORRUPT_BYTES": "67108864"},
		func(s Server) Server { return s.With("restart", "never") })
	rep := h.Open("main")
	h.Verify(Response, contains(rep.Ready, "fx"), "session start returns with the other server ready", "ready=%v failed=%v", rep.Ready, rep.Failed)
	h.AwaitJournal("bad", "corrupt", 1)
	h.neighbourAnswers("while the long line streams")
})

var _ = Spec(Requirement{
	ID: "CORE-HOSTILE-004", Level: Must, Profile: driver.ProfileCore, Area: "hostile", Eras: Both,
	Statement: "An implementation MUST ignore replies whose id matches no request in flight, unknown or already answered, and keep the connection.",
	Source:    Source{hostileSource, "responses with unknown or duplicate ids"},
}, func(h *H) {
	h.startHostile(Knobs{"MCP_FIXTURE_CORRUPT_KIND": "duplicate-id"})
	h.Open("main")
	r := h.CallNow("main", "mcp_bad_corrupt", map[string]any{})
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "corrupted"), "the call whose reply came twice answers", "error=%v", r.Error)
	h.AwaitJournal("bad", "duplicated", 1)
	r2 := h.CallNow("main", "mcp_bad_echo", map[string]any{"text": "after the duplicate"})
	h.Verify(Response, r2.Error == nil && strings.Contains(r2.Result.Text, "after the duplicate"), "the next call answers on the same connection", "error=%v", r2.Error)
	h.Verify(Journal, len(h.Journal("bad").Launches()) == 1, "the server was not relaunched", "%d launches", len(h.Journal("bad").Launches()))
	h.neighbourAnswers("after the duplicate reply")
})

var _ = Spec(Requirement{
	ID: "CORE-HOSTILE-005", Level: Should, Profile: driver.ProfileCore, Area: "hostile", Eras: Both,
	Statement: "An implementation SHOULD absorb a burst of 10,000 tools/list_changed notifications into a few tools/list requests instead of one per notification.",
	Source:    Source{hostileSource, "a notification flood (100,000 list_changed) ... debounced refreshes absorb the flood"},
	// The virtual clock keeps the whole flood inside one debounce window, so
	// the count has a bound the implementation reaches (tools.change_flood).
	Needs: []driver.Capability{driver.CapListChanged, driver.CapVirtualClock},
}, func(h *H) {
	h.startHostile(Knobs{"MCP_FIXTURE_CORRUPT_KIND": "list-changed-flood", "MCP_FIXTURE_FLOOD_COUNT": "10000"})
	h.Open("main")
	const few = 10
	// More than a few tools/list requests already contradict the
	// requirement, however long the flood takes to absorb.
	h.Unless(func() string {
		if n := h.readJournal("bad").Count("tools-list"); n > few {
			return fmt.Sprintf("the flood has cost %d tools/list requests, more than %d", n, few)
		}
		return ""
	}, func() {
		r := h.CallNow("main", "mcp_bad_corrupt", map[string]any{})
		h.Verify(Response, r.Error == nil, "the flooding call answers", "error=%v", r.Error)
		h.neighbourAnswers("during the flood")
		// The implementation has taken in every notification once it counts the
		// 10,000th (the clock did not move, so all fell in one debounce window).
		flood := h.Await(Ev(event.ToolsChangeFlood, "bad", "notifications", "10000"))
		debounce, _ := flood.Get("debounce_ms")
		var ms int64
		_, _ = fmt.Sscan(debounce, &ms)
		h.Pass(max(ms, 1))
		h.AwaitJournal("bad", "tools-list", 2)
		// Bound of the count: a later call answered by the flooding server.
		r2 := h.CallNow("main", "mcp_bad_echo", map[string]any{"text": "after the flood"})
		h.Verify(Response, r2.Error == nil, "the flooding server still answers calls", "error=%v", r2.Error)
	})
	n := h.Journal("bad").Count("tools-list")
	h.Verify(Journal, n >= 2 && n <= few, "the flood cost a few tools/list requests", "%d tools/list requests", n)
})

var _ = Spec(Requirement{
	ID: "CORE-HOSTILE-006", Level: Must, Profile: driver.ProfileCore, Area: "hostile", Eras: Both,
	Statement: "An implementation MUST fail a call in flight at once when its stdio server closes stdout while the process keeps running, and MUST stop that process.",
	Source:    Source{hostileSource, "stdout closed while the process keeps running ... nothing hangs"},
}, func(h *H) {
	// "At once" is measured against the call's own timeout: with the
	// virtual clock the call must end before the clock moves; in real time
	// before half its (scaled) timeout has passed.
	timeout := h.D(20000)
	h.startHostile(Knobs{"MCP_FIXTURE_CORRUPT_KIND": "close-stdout"}, func(s Server) Server { return s.With("restart", "never").With("toolTimeout", timeout) })
	h.Open("main")
	pid := h.AwaitJournal("bad", "tools-list", 1).PIDs()[0]
	id := h.Call("main", "mcp_bad_corrupt", map[string]any{})
	wait := h.s.cfg.AwaitTimeout
	if !h.Virtual() {
		wait = min(wait, ms(timeout)/2)
	}
	r, ok := h.ResultWithin(id, wait)
	h.Verify(Response, ok, "the call ends at once, not at its timeout", "%s within %v of real time", pick(ok, "result", "no result"), wait)
	h.Verify(Response, r.Error != nil || r.Result.IsError, "the call in flight fails", "error=%v text=%q", r.Error, r.Result.Text)
	if h.Virtual() {
		h.Verify(Response, h.Now() == 0, "the virtual clock never moved", "now=%v", h.Now())
	}
	h.AwaitStopped("bad", pid)
	h.neighbourAnswers("after the stdout close")
})

var _ = Spec(Requirement{
	ID: "CORE-HOSTILE-007", Level: Must, Profile: driver.ProfileCore, Area: "hostile", Eras: Both,
	Statement: "An implementation MUST drain a stdio server's stderr while it runs, so a server that writes 100 MB there before serving still connects and answers.",
	Source:    Source{hostileSource, "100 MB on stderr ... the stderr tail is a ring buffer"},
}, func(h *H) {
	h.startHostile(Knobs{"MCP_FIXTURE_STDERR_BYTES": "104857600"})
	rep := h.Open("main")
	flood := h.AwaitJournal("bad", "stderr-flood", 1).Of("stderr-flood")
	h.Verify(Journal, len(flood) == 1 && flood[0].Int("bytes") == 104857600, "the server wrote its 100 MB to stderr", "%v", flood)
	h.Verify(Response, contains(rep.Ready, "bad"), "the server connects after its stderr flood", "ready=%v failed=%v errors=%v", rep.Ready, rep.Failed, rep.Errors)
	r := h.CallNow("main", "mcp_bad_echo", map[string]any{"text": "after the flood"})
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "after the flood"), "it answers", "error=%v", r.Error)
	h.neighbourAnswers("after the stderr flood")
})

var _ = Spec(Requirement{
	ID: "CORE-HOSTILE-008", Level: Must, Profile: driver.ProfileCore, Area: "hostile", Eras: Both,
	Statement: "An implementation MUST keep the other servers working when one lists 10,000 tools, a tool name of 10,000 characters or an input schema nested 1,000 levels deep, and, when it is held to mcplife's host conventions (a driver claiming conventions, or one of mcplife-driver/1-3), MUST expose no tool whose name exceeds 64 characters.",
	Source:    Source{hostileSource, "return 10,000 tools or schemas nested a thousand deep ... a tool name of 10,000 characters"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{
		"many": h.Fixture("many", Knobs{"MCP_FIXTURE_EXTRA_TOOLS": "10000"}),
		"long": h.Fixture("long", Knobs{"MCP_FIXTURE_LONG_TOOL_NAME": "10000"}),
		"deep": h.Fixture("deep", Knobs{"MCP_FIXTURE_SCHEMA_DEPTH": "1000"}).With("restart", "never"),
		"fx":   h.Fixture("fx", nil),
	}})
	rep := h.Open("main")
	h.Verify(Response, contains(rep.Ready, "fx"), "session start returns with the other server ready", "ready=%v failed=%v", rep.Ready, rep.Failed)
	// The 64-character cap is a host convention (CORE-NAMING-004): a
	// driver of mcplife-driver/4 that does not claim conventions names its
	// tools as its library does.
	if h.HeldToConventions() {
		longest := 0
		for _, t := range h.Tools("main") {
			longest = max(longest, len(t.Name))
		}
		h.Verify(Response, longest <= 64, "no exposed tool name is longer than 64 characters", "longest %d", longest)
	}
	h.neighbourAnswers("next to the absurd tool lists")
})

// stdoutLimit is the maxMessageBytes of SEC-STDOUT-001's servers.
const stdoutLimit = 4096

// checkSample verifies the sample attribute of a transport.noise or
// transport.oversized event: the start of what the server sent, at most 200
// bytes of it, valid UTF-8 without control characters. marker is text of
// the line the sample must hold, and pad the byte the line is padded with
// after it; the line's first 200 bytes hold fewer than padMax of them.
func (h *H) checkSample(e event.Event, what, marker string, pad byte, padMax int) {
	s, _ := e.Get("sample")
	h.Verify(Events, utf8.ValidString(s), "the sample of "+what+" is valid UTF-8", "sample %q", s)
	h.Verify(Events, !strings.ContainsFunc(s, unicode.IsControl), "the sample of "+what+" holds no control character", "sample %q", s)
	h.Verify(Events, utf8.RuneCountInString(s) <= 200, "the sample of "+what+" is at most 200 bytes of the line", "%d characters: %q", utf8.RuneCountInString(s), s)
	i := strings.Index(s, marker)
	h.Verify(Events, i >= 0, "the sample of "+what+" is the start of the line", "sample %q, want it to hold %q", s, marker)
	if i >= 0 {
		rest := s[i+len(marker):]
		h.Verify(Events, strings.Trim(rest, string(pad)) == "" && len(rest) > 0 && len(rest) < padMax,
			"the sample of "+what+" goes on with the line's padding, cut within its first 200 bytes",
			"after %q: %d bytes %q", marker, len(rest), rest)
	}
}

var _ = Spec(Requirement{
	ID: "SEC-STDOUT-001", Level: Must, Profile: driver.ProfileSecurity, Area: "stdout", Eras: Both,
	Statement: "An implementation MUST bound each line a stdio server writes on stdout by the server's maxMessageBytes: a JSON-RPC message or a non-JSON line of exactly maxMessageBytes bytes is taken (the message read, the line dropped with a transport.noise) and the connection goes on, while one byte more ends that server's connection alone (the call in flight fails with mcp_connection_lost), with a transport.oversized carrying the limit and whether the line was JSON and a status error naming the limit; each report's sample is the line's start, at most 200 bytes of it, made valid UTF-8, with control characters replaced.",
	Source:    Source{hostileSource, "Real servers print banners on stdout, write invalid UTF-8, send 50 MB lines ... the bad server fails alone with a clear status and event (what it sent, capped)"},
}, func(h *H) {
	server := func(key, kind string, n int) Server {
		return h.Fixture(key, Knobs{"MCP_FIXTURE_CORRUPT_KIND": kind, "MCP_FIXTURE_CORRUPT_BYTES": strconv.Itoa(n)}).
			With("maxMessageBytes", stdoutLimit).With("restart", "never")
	}
	h.Start(Setup{Servers: map[string]Server{
		"msgfit":   server("msgfit", fixture.CorruptLongMessage, stdoutLimit),
		"msgover":  server("msgover", fixture.CorruptLongMessage, stdoutLimit+1),
		"linefit":  server("linefit", fixture.CorruptLongLine, stdoutLimit),
		"lineover": server("lineover", fixture.CorruptLongLine, stdoutLimit+1),
		"fx":       h.Fixture("fx", nil),
	}})
	rep := h.Open("main")
	for _, name := range []string{"msgfit", "msgover", "linefit", "lineover", "fx"} {
		h.Verify(Response, contains(rep.Ready, name), "server "+name+" connects", "ready=%v failed=%v", rep.Ready, rep.Failed)
	}
	// The fixture's marker of the long line, after its ANSI escape and
	// bytes that are not UTF-8 (fixture.longLinePrefix): 11 bytes before
	// it, 22 of its own.
	const lineMarker, lineHead = "mcp-fixture long line ", 11 + 22
	const msgMarker = `"data":"` // the long message's padding follows it
	msgHead := len(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"debug","logger":"mcp-fixture","data":"`)
	for _, name := range []string{"msgfit", "linefit"} {
		r := h.CallNow("main", "mcp_"+name+"_corrupt", map[string]any{})
		h.Verify(Response, r.Error == nil && !r.Result.IsError && strings.Contains(r.Result.Text, "corrupted"),
			"the call of "+name+" answers after a line of exactly maxMessageBytes", "error=%v text=%q", r.Error, r.Result.Text)
		c := h.AwaitJournal(name, "corrupt", 1).Of("corrupt")
		h.Verify(Journal, len(c) == 1 && c[0].Int("bytes") == stdoutLimit, name+" wrote a line of exactly maxMessageBytes", "%v", c)
		r2 := h.CallNow("main", "mcp_"+name+"_echo", map[string]any{"text": "still connected"})
		h.Verify(Response, r2.Error == nil && strings.Contains(r2.Result.Text, "still connected"), name+" keeps its connection", "error=%v", r2.Error)
		h.Verify(Events, h.Count(Ev(event.TransportOversized, name)) == 0, name+"'s line was not reported oversized", "%d transport.oversized", h.Count(Ev(event.TransportOversized, name)))
	}
	noise := h.Await(Ev(event.TransportNoise, "linefit", "lines", "1"))
	nb, _ := noise.Get("bytes")
	h.Verify(Events, nb == strconv.Itoa(stdoutLimit), "transport.noise counts the dropped line's bytes", "%v", noise.Attrs)
	h.checkSample(noise, "transport.noise", lineMarker, 'x', 200-lineHead+1)
	for _, c := range []struct {
		name, json, marker string
		padMax             int
	}{{"msgover", "true", msgMarker, 200 - msgHead + 1}, {"lineover", "false", lineMarker, 200 - lineHead + 1}} {
		pid := h.AwaitJournal(c.name, "tools-list", 1).PIDs()[0]
		r := h.CallNow("main", "mcp_"+c.name+"_corrupt", map[string]any{})
		h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeConnectionLost),
			"the call of "+c.name+" fails with mcp_connection_lost: its line is a byte over maxMessageBytes", "error=%v text=%q", r.Error, r.Result.Text)
		e := h.Await(Ev(event.TransportOversized, c.name, "limit", strconv.Itoa(stdoutLimit), "json", c.json))
		h.checkSample(e, "transport.oversized", c.marker, 'x', c.padMax)
		st := h.AwaitStatus(c.name, "not connected", func(st driver.ServerStatus) bool { return st.State != "connected" && st.State != "connecting" })
		h.Verify(Response, strings.Contains(st.Error, strconv.Itoa(stdoutLimit)), "the status error of "+c.name+" names the limit", "state %s error %q", st.State, st.Error)
		h.AwaitStopped(c.name, pid)
	}
	h.neighbourAnswers("after the over-long lines")
})
