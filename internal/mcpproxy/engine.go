package mcpproxy

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
)

// engine is the transport-independent part of a proxy: the live rules, the
// held requests, the journal and the exit decision.
type engine struct {
	rules ruleSet
	jw    *journal.Writer
	log   *slog.Logger

	mu     sync.Mutex
	held   map[string]*heldRequest
	timers []*time.Timer
	closed bool
	// requested tells that a request came in this launch (a later one is
	// no opening unless it is initialize or server/discover); era is the
	// era of the last opening request, for messages that name no version.
	requested bool
	era       string

	exitCh chan exitRequest // buffered: the first exit wins
}

// exitRequest is a decision to end the proxy.
type exitRequest struct {
	code   int
	reason string
}

// heldRequest is a request a hang rule keeps from the server.
type heldRequest struct {
	method, tool string
	open         bool
	release      func(cancelled bool)
}

func newEngine(jw *journal.Writer, log *slog.Logger) *engine {
	return &engine{jw: jw, log: log, held: map[string]*heldRequest{}, exitCh: make(chan exitRequest, 1)}
}

// journal appends an entry to the journal, if there is one.
func (e *engine) journal(kind string, fields map[string]any) {
	if e.jw != nil {
		e.jw.Write(kind, fields)
	}
}

// exit asks the proxy to end; only the first request counts.
func (e *engine) exit(code int, reason string) {
	select {
	case e.exitCh <- exitRequest{code, reason}:
	default:
	}
}

// setRules installs rules (appending, or replacing the old ones), arms the
// timed exits among them and forwards the held requests no hang rule
// selects any more.
func (e *engine) setRules(rules []Rule, add bool) {
	e.rules.set(rules, add)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	for _, r := range rules {
		if r.timed() {
			r := r
			e.timers = append(e.timers, time.AfterFunc(time.Duration(r.MS)*time.Millisecond, func() {
				e.journal("fault", map[string]any{"action": string(r.Action), "rule": r.String()})
				e.exit(r.Code, "exit-delay")
			}))
		}
	}
	var release []*heldRequest
	for k, h := range e.held {
		if !e.rules.hangs(h.method, h.tool, h.open) {
			release = append(release, h)
			delete(e.held, k)
		}
	}
	e.mu.Unlock()
	for _, h := range release {
		e.journal("hang-end", map[string]any{"cancelled": false, "method": h.method, "tool": h.tool})
		h.release(false)
	}
}

// hold keeps a request until it is cancelled or released.
func (e *engine) hold(m *message, release func(cancelled bool)) {
	method, tool := m.Method, m.tool()
	e.mu.Lock()
	e.held[m.key()] = &heldRequest{method: method, tool: tool, open: m.open, release: release}
	e.mu.Unlock()
	e.journal("hang-start", map[string]any{"ms": 0, "blocking": false, "method": method, "tool": tool})
}

// cancel ends a held request the client cancelled; false when key is not
// held.
func (e *engine) cancel(key string) bool {
	e.mu.Lock()
	h, ok := e.held[key]
	delete(e.held, key)
	e.mu.Unlock()
	if ok {
		e.journal("hang-end", map[string]any{"cancelled": true, "method": h.method, "tool": h.tool})
		h.release(true)
	}
	return ok
}

// close stops the timers; held requests stay unanswered.
func (e *engine) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for _, t := range e.timers {
		t.Stop()
	}
}

// inbound journals a message from the client and returns the rule that
// applies to it, if any. It marks the opening request of a session
// (m.open): initialize, server/discover, or the launch's first request
// carrying a version of the stateless era.
func (e *engine) inbound(m *message) (Rule, bool) {
	tool := m.tool()
	version := ""
	e.mu.Lock()
	unrequested := !e.requested
	e.mu.Unlock()
	if unrequested || e.jw != nil {
		version = m.protocolVersion()
	}
	era := e.classify(m, version)
	r, ok := e.rules.match(m.Method, tool, m.open)
	if e.jw != nil {
		e.journalInbound(m, tool, version, era, r, ok)
	}
	return r, ok
}

// classify marks an opening request (m.open) and returns the era of a
// message, legacy or modern: a message carrying a version in its _meta is
// of that version's era; initialize and the methods the stateless revision
// removed are of the handshake era; any other message is of the era of
// the launch's last opening request ("" before one). version is the
// message's _meta version, parsed at least while no request came.
func (e *engine) classify(m *message, version string) string {
	era := ""
	switch {
	case version != "" && isModern(version):
		era = "modern"
	case version != "", m.Method == "initialize", m.Method == "notifications/initialized", m.Method == "ping":
		era = "legacy"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case m.Method == "initialize" || m.Method == "server/discover":
		m.open = true
	case m.isRequest() && !e.requested:
		m.open = isModern(version)
	}
	if m.isRequest() {
		e.requested = true
	}
	if m.open && era != "" {
		e.era = era
	}
	if era == "" {
		era = e.era
	}
	return era
}

// withEra adds the protocol version and the era of a message to the
// fields of its journal entry, each when known.
func withEra(fields map[string]any, version, era string) map[string]any {
	if fields == nil {
		fields = map[string]any{}
	}
	if version != "" {
		fields["protocolVersion"] = version
	}
	if era != "" {
		fields["era"] = era
	}
	return fields
}

func (e *engine) journalInbound(m *message, tool, version, era string, r Rule, faulted bool) {
	if m.open {
		v := version
		if m.Method == "initialize" {
			v = initializeParams(m).ProtocolVersion
		}
		e.journal("open", withEra(map[string]any{"method": m.Method}, v, era))
	}
	switch m.Method {
	case "initialize":
		p := initializeParams(m)
		e.journal("initialize", withEra(map[string]any{"protocolVersion": p.ProtocolVersion, "client": p.ClientInfo.Name}, "", era))
	case "notifications/initialized":
		e.journal("initialized", withEra(nil, version, era))
	case "server/discover":
		// The open entry above is its journal entry; the answer is
		// journaled as discover.
	case "ping":
		action := "forwarded"
		if faulted {
			action = map[Action]string{Hang: "dropped", Error: "errored", Delay: "delayed"}[r.Action]
			if action == "" {
				action = string(r.Action)
			}
		}
		e.journal("ping", withEra(map[string]any{"action": action}, version, era))
	case "tools/call":
		e.journal("call-start", withEra(map[string]any{"tool": tool, "args": m.args()}, version, era))
	default:
		e.journal("request", withEra(map[string]any{"method": m.Method}, version, era))
	}
	if faulted {
		e.journal("fault", map[string]any{"action": string(r.Action), "rule": r.String(), "method": m.Method, "tool": tool})
		switch {
		case m.Method == "tools/call" && r.Action == Error:
			e.journal("call-end", map[string]any{"tool": tool, "outcome": "rpc-error", "bytes": 0, "detail": r.Message})
		case m.Method == "tools/call" && r.Action == ToolError:
			e.journal("call-end", map[string]any{"tool": tool, "outcome": "tool-error", "bytes": len(r.Message), "detail": r.Message})
		}
	}
}

// initializeParams decodes the part of initialize's params the journal
// keeps.
func initializeParams(m *message) (p struct {
	ProtocolVersion string `json:"protocolVersion"`
	ClientInfo      struct {
		Name string `json:"name"`
	} `json:"clientInfo"`
}) {
	_ = json.Unmarshal(m.Params, &p)
	return p
}

// outbound journals a response from the server to a request of the
// client.
func (e *engine) outbound(req pending, m *message) {
	if e.jw == nil {
		return
	}
	switch req.method {
	case "tools/call":
		outcome, n, detail := callOutcome(m)
		if req.cancelled {
			outcome = "cancelled"
		}
		e.journal("call-end", map[string]any{"tool": req.tool, "outcome": outcome, "bytes": n, "detail": detail})
	case "tools/list":
		count, more := listOutcome(m)
		e.journal("tools-list", map[string]any{"count": count, "cursor": req.cursor, "more": more})
	case "server/discover":
		e.journalDiscover(req.version, m, "")
	}
}

// journalDiscover journals the answer to a server/discover that asked for
// version: the versions the server named and, for a refusal, its error
// (noAnswer: why there is no JSON-RPC answer, such as an HTTP status; m is
// then nil).
func (e *engine) journalDiscover(version string, m *message, noAnswer string) {
	if e.jw == nil {
		return
	}
	versions, errText := "", noAnswer
	if m != nil {
		versions, errText = discoverOutcome(m)
	}
	f := map[string]any{"protocolVersion": version, "versions": versions}
	if errText != "" {
		f["error"] = errText
	}
	e.journal("discover", f)
}

// pending is a forwarded request awaiting its response.
type pending struct {
	method, tool string
	version      string // server/discover: the version it asked for
	cursor       bool
	cancelled    bool
	exitOnReply  *Rule
}
