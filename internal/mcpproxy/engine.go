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
		if !e.rules.hangs(h.method, h.tool) {
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
func (e *engine) hold(key, method, tool string, release func(cancelled bool)) {
	e.mu.Lock()
	e.held[key] = &heldRequest{method: method, tool: tool, release: release}
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
// applies to it, if any.
func (e *engine) inbound(m *message) (Rule, bool) {
	tool := m.tool()
	r, ok := e.rules.match(m.Method, tool)
	if e.jw != nil {
		e.journalInbound(m, tool, r, ok)
	}
	return r, ok
}

func (e *engine) journalInbound(m *message, tool string, r Rule, faulted bool) {
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
			ClientInfo      struct {
				Name string `json:"name"`
			} `json:"clientInfo"`
		}
		_ = json.Unmarshal(m.Params, &p)
		e.journal("initialize", map[string]any{"protocolVersion": p.ProtocolVersion, "client": p.ClientInfo.Name})
	case "notifications/initialized":
		e.journal("initialized", nil)
	case "ping":
		action := "forwarded"
		if faulted {
			action = map[Action]string{Hang: "dropped", Error: "errored", Delay: "delayed"}[r.Action]
			if action == "" {
				action = string(r.Action)
			}
		}
		e.journal("ping", map[string]any{"action": action})
	case "tools/call":
		e.journal("call-start", map[string]any{"tool": tool, "args": m.args()})
	default:
		e.journal("request", map[string]any{"method": m.Method})
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
	}
}

// pending is a forwarded request awaiting its response.
type pending struct {
	method, tool string
	cursor       bool
	cancelled    bool
	exitOnReply  *Rule
}
