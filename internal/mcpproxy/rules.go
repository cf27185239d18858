package mcpproxy

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Action is what a Rule does to a matching message.
type Action string

// The actions. Their names follow the fixture's knobs (docs/TESTING.md).
const (
	// Hang holds a request: it is never forwarded and never answered until
	// the client cancels it, the rule is removed (the request is then
	// forwarded) or the proxy ends. Notifications are swallowed. Matching
	// "*" wedges the server as MCP_FIXTURE_BLOCK_EVENT_LOOP does.
	Hang Action = "hang"
	// Delay forwards the message after MS milliseconds (real time).
	Delay Action = "delay"
	// Error answers a request at once with JSON-RPC error Code and Message
	// instead of forwarding it.
	Error Action = "error"
	// ToolError answers a tools/call at once with an isError result.
	ToolError Action = "tool-error"
	// Exit stops the upstream server and exits the proxy with Code, without
	// answering the message (or, with OnReply, right after its reply has
	// been written). With MS and no match it fires MS milliseconds after the
	// rule was installed.
	Exit Action = "exit"
	// Drop closes the stream towards the client (stdout, or the HTTP
	// connection) without exiting: the client sees its transport end.
	Drop Action = "drop"
)

// Rule is one fault-injection rule. Rules are matched in order against every
// message the client sends (requests and notifications); the first rule that
// matches and is due applies.
type Rule struct {
	// Action is what the rule does.
	Action Action `json:"action"`
	// Method matches the JSON-RPC method; "*" matches every message,
	// MatchOpen the opening request of a session in either era, and ""
	// none (a timed exit).
	Method string `json:"method,omitempty"`
	// Tool, with Method tools/call, matches the tool name only.
	Tool string `json:"tool,omitempty"`
	// MS is the delay of Delay, or of a timed Exit.
	MS int `json:"ms,omitempty"`
	// Code is the JSON-RPC error code of Error (default -32603) or the exit
	// code of Exit (default 0).
	Code int `json:"code,omitempty"`
	// Message is the error text of Error and ToolError.
	Message string `json:"message,omitempty"`
	// After makes the rule apply from the After-th matching message on (the
	// earlier ones pass through); 0 and 1 mean from the first.
	After int `json:"after,omitempty"`
	// Times caps how often the rule applies; 0 means no cap.
	Times int `json:"times,omitempty"`
	// OnReply makes Exit fire right after the reply to the matching request
	// has been written to the client, instead of instead of it.
	OnReply bool `json:"onReply,omitempty"`
	// Text is the rule as written.
	Text string `json:"rule"`
}

// MatchOpen is the MATCH that selects the opening request of a session,
// in either era: initialize (the handshake era), server/discover, or the
// first request of a proxy launch that carries a 2026-07-28 (or later)
// version in its _meta when the client sends neither (the stateless
// revision lets a client skip discover). It names no MCP method.
const MatchOpen = "open"

// DefaultErrorMessage is the message of an injected error when the rule sets
// none.
const DefaultErrorMessage = "injected by the mcplife proxy"

// RuleSyntax documents the text form of a rule, as -fault flags and the
// control endpoint take it.
const RuleSyntax = `ACTION=MATCH[,key=value...]
  MATCH   *  (every message) | METHOD (initialize, server/discover, ping,
          tools/list, ...) | tools/call:TOOL | tool:TOOL | open (the
          opening request of a session, in either era: initialize,
          server/discover, or the first request at 2026-07-28 or later of a
          client that sends neither)
  hang        hold the request unanswered until the client cancels it or the
              rule is removed (then it is forwarded); hang=* wedges the server
  delay       forward it after ms=N milliseconds
  error       answer with a JSON-RPC error (code=N, default -32603)
  tool-error  answer a tools/call with an isError result
  exit        stop the server and exit with code=N (default 0), unanswered;
              with on=reply: right after the reply has been written
  drop        close the stream to the client (stdout, HTTP connections)
  keys    ms=N  code=N  after=N (act from the Nth match on)  times=N (act at
          most N times)  on=reply  message=TEXT (last: takes the rest)
shorthands, after the fixture's knobs:
  ping=drop | ping=error         hang=ping | error=ping,code=-32601
  exit-after=initialize-request  exit=open: the server dies on its opening
                                 request, in either era
  exit-after=initialized         exit=notifications/initialized
  exit-after=discover            exit=server/discover,on=reply,times=1: the
                                 server exits right after answering discover
  exit-after=tools-list|calls:N  exit right after the reply to the first
                                 tools/list, or to the Nth tools/call
  exit-delay=MS[,code=N]         exit MS milliseconds after the rule is installed
  fail-init[=CODE]               exit=open,code=CODE (default 5): the server
                                 fails its start, in either era
eras: the stateless revision (2026-07-28) has no initialize,
notifications/initialized or ping: rules on them (ping=...,
exit-after=initialized) never match a modern session, whose counterpart of
exit-after=initialized is exit-after=discover. open, server/discover,
tools/list, tools/call and * match in both eras.`

// ParseRule parses the text form of a rule (RuleSyntax). The error names the
// part that is wrong.
func ParseRule(text string) (Rule, error) {
	text = strings.TrimSpace(text)
	head, opts, _ := strings.Cut(text, ",")
	name, value, hasValue := strings.Cut(head, "=")
	r := Rule{Text: text}
	bad := func(format string, args ...any) (Rule, error) {
		return Rule{}, fmt.Errorf("rule %q: %s", text, fmt.Sprintf(format, args...))
	}
	switch Action(name) {
	case Hang, Delay, Error, ToolError, Exit, Drop:
		r.Action = Action(name)
		if !hasValue || value == "" {
			return bad("%s needs a match (*, METHOD or tools/call:TOOL)", name)
		}
		r.Method, r.Tool = parseMatch(value)
	default:
		switch name {
		case "ping":
			switch value {
			case "answer":
				return bad("ping=answer is the default: remove the ping rules instead")
			case "drop":
				r.Action, r.Method = Hang, "ping"
			case "error":
				r.Action, r.Method, r.Code, r.Message = Error, "ping", -32601, "Method not found"
			default:
				return bad("ping takes answer, drop or error")
			}
		case "exit-after":
			r.Action = Exit
			switch {
			case value == "initialize-request":
				r.Method = MatchOpen
			case value == "initialized":
				r.Method = "notifications/initialized"
			case value == "discover":
				r.Method, r.OnReply, r.Times = "server/discover", true, 1
			case value == "tools-list":
				r.Method, r.OnReply, r.Times = "tools/list", true, 1
			case strings.HasPrefix(value, "calls:"):
				n, err := strconv.Atoi(strings.TrimPrefix(value, "calls:"))
				if err != nil || n < 1 {
					return bad("exit-after=calls:N needs N >= 1")
				}
				r.Method, r.OnReply, r.After = "tools/call", true, n
			default:
				return bad("exit-after takes initialize-request, initialized, discover, tools-list or calls:N")
			}
		case "exit-delay":
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				return bad("exit-delay takes milliseconds")
			}
			r.Action, r.MS = Exit, n
		case "fail-init":
			r.Action, r.Method, r.Code = Exit, MatchOpen, 5
			if hasValue {
				n, err := strconv.Atoi(value)
				if err != nil {
					return bad("fail-init takes an exit code")
				}
				r.Code = n
			}
		default:
			return bad("unknown action %q (hang, delay, error, tool-error, exit, drop, ping, exit-after, exit-delay, fail-init)", name)
		}
	}
	if opts != "" {
		for kv := range strings.SplitSeq(opts, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if k == "message" {
				// The message takes the rest of the text, commas included.
				_, rest, _ := strings.Cut(opts, "message=")
				r.Message = rest
				break
			}
			if k == "on" {
				if v != "reply" || r.Action != Exit {
					return bad("on=reply is the only on= value, and only for exit")
				}
				r.OnReply = true
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return bad("%s=%q is not an integer", k, v)
			}
			switch k {
			case "ms":
				r.MS = n
			case "code":
				r.Code = n
			case "after":
				r.After = n
			case "times":
				r.Times = n
			default:
				return bad("unknown key %q (ms, code, message, after, times, on)", k)
			}
		}
	}
	if r.Action == Delay && r.MS <= 0 {
		return bad("delay needs ms=N")
	}
	if r.Action == Error && r.Code == 0 {
		r.Code = -32603
	}
	if (r.Action == Error || r.Action == ToolError) && r.Message == "" {
		r.Message = DefaultErrorMessage
	}
	if r.MS < 0 || r.After < 0 || r.Times < 0 {
		return bad("ms, after and times may not be negative")
	}
	return r, nil
}

// parseMatch splits a match into method and tool.
func parseMatch(m string) (method, tool string) {
	if t, ok := strings.CutPrefix(m, "tool:"); ok {
		return "tools/call", t
	}
	if t, ok := strings.CutPrefix(m, "tools/call:"); ok {
		return "tools/call", t
	}
	return m, ""
}

// ParseRules parses several rules, one per non-empty line; lines starting
// with # are comments.
func ParseRules(text string) ([]Rule, error) {
	var out []Rule
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := ParseRule(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// timed reports whether the rule is a timed exit.
func (r Rule) timed() bool { return r.Action == Exit && r.Method == "" }

// matches reports whether the rule selects a message: method and tool
// are its own, open tells that it is the opening request of a session.
func (r Rule) matches(method, tool string, open bool) bool {
	switch {
	case r.Method == "":
		return false
	case r.Method == "*":
		return true
	case r.Method == MatchOpen:
		return open
	case r.Method != method:
		return false
	}
	return r.Tool == "" || r.Tool == tool
}

// ruleState is an installed rule and its counters.
type ruleState struct {
	Rule
	seen, applied int
}

// ruleSet is the live rule list, safe for concurrent use.
type ruleSet struct {
	mu    sync.Mutex
	rules []*ruleState
}

// match returns the first due rule for a message and counts it, or false.
func (s *ruleSet) match(method, tool string, open bool) (Rule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if !r.matches(method, tool, open) {
			continue
		}
		r.seen++
		if r.seen < r.After || (r.Times > 0 && r.applied >= r.Times) {
			continue
		}
		r.applied++
		return r.Rule, true
	}
	return Rule{}, false
}

// hangs reports whether an installed hang rule selects a message (used to
// release held requests when the rules change).
func (s *ruleSet) hangs(method, tool string, open bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if r.Action == Hang && r.matches(method, tool, open) {
			return true
		}
	}
	return false
}

// set replaces the rules (append false) or appends to them.
func (s *ruleSet) set(rules []Rule, add bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		s.rules = nil
	}
	for _, r := range rules {
		s.rules = append(s.rules, &ruleState{Rule: r})
	}
}

// list returns the installed rules with their counters.
func (s *ruleSet) list() []RuleStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RuleStatus, 0, len(s.rules))
	for _, r := range s.rules {
		out = append(out, RuleStatus{Rule: r.Rule, Seen: r.seen, Applied: r.applied})
	}
	return out
}

// RuleStatus is an installed rule as the control endpoint lists it.
type RuleStatus struct {
	Rule
	// Seen counts the messages the rule matched.
	Seen int `json:"seen"`
	// Applied counts how often it acted.
	Applied int `json:"applied"`
}

// String renders the rule in its text form.
func (r Rule) String() string {
	if r.Text != "" {
		return r.Text
	}
	b, _ := json.Marshal(r)
	return string(b)
}
