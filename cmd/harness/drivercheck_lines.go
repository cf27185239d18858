package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/runtime/event"
)

// checkProblem is one actionable problem driver-check found.
type checkProblem struct {
	// Step is the check step during which the offending line arrived (or
	// the step that failed).
	Step string `json:"step"`
	// Pointer is the JSON pointer (RFC 6901) of the offending value in
	// Line, or "" when the problem is about the line or the exchange.
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message"`
	// Line is the offending line as the driver wrote it, cut short.
	Line string `json:"line,omitempty"`
}

// lineChecker checks every line a driver wrote: JSON, schemas, event
// numbering and the event attribute vocabulary.
type lineChecker struct {
	v       *driver.Validator
	methods map[int64]string // request id -> method, from the lines sent
	lastSeq uint64
}

// maxLineShown caps how much of an offending line a problem quotes.
const maxLineShown = 300

func shorten(b []byte) string {
	s := string(bytes.TrimSpace(b))
	if len(s) > maxLineShown {
		return s[:maxLineShown] + "…"
	}
	return s
}

// check returns the problems of the transcript lines, attributed to step.
func (lc *lineChecker) check(step string, lines []driver.TranscriptLine) []checkProblem {
	var out []checkProblem
	for _, l := range lines {
		if l.Dir == driver.Sent {
			var req driver.Request
			if json.Unmarshal(l.Line, &req) == nil {
				lc.methods[req.ID] = req.Method
			}
			continue
		}
		for _, p := range lc.checkLine(l.Line) {
			p.Step = step
			p.Line = shorten(l.Line)
			out = append(out, p)
		}
	}
	return out
}

func (lc *lineChecker) checkLine(line []byte) []checkProblem {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return []checkProblem{{Message: fmt.Sprintf("not a JSON object (%v); stdout must carry protocol lines only — send logs to stderr", err)}}
	}
	var typ string
	if raw, ok := obj["type"]; !ok {
		return []checkProblem{{Pointer: "/type", Message: `missing field "type" (one of "response", "event", "call_result", "acquire_result")`}}
	} else if json.Unmarshal(raw, &typ) != nil {
		return []checkProblem{{Pointer: "/type", Message: fmt.Sprintf("field \"type\" must be a string, got %s", raw)}}
	}
	switch typ {
	case driver.TypeResponse:
		return lc.checkResponse(line, obj)
	case driver.TypeEvent:
		return lc.checkEvent(line)
	case driver.TypeCallResult, driver.TypeAcquireResult:
		return schemaProblems(lc.v, typ, line, "")
	}
	return []checkProblem{{Pointer: "/type", Message: fmt.Sprintf("unknown line type %q (want response, event, call_result or acquire_result)", typ)}}
}

func (lc *lineChecker) checkResponse(line []byte, obj map[string]json.RawMessage) []checkProblem {
	out := schemaProblems(lc.v, driver.SchemaResponse, line, "")
	if len(out) > 0 {
		return out
	}
	var id int64
	if json.Unmarshal(obj["id"], &id) != nil {
		return nil
	}
	method, ok := lc.methods[id]
	if !ok {
		return []checkProblem{{Pointer: "/id", Message: fmt.Sprintf("response to id %d, which no request carried", id)}}
	}
	result, ok := obj["result"]
	if !ok || !slices.ContainsFunc(driver.Methods(), func(m driver.MethodInfo) bool { return m.Name == method }) {
		return nil
	}
	out = schemaProblems(lc.v, method+".result", result, "/result")
	if method == driver.MethodHello {
		// The vocabulary checks say more than the schema's enum errors.
		hp := helloProblems(result)
		out = slices.DeleteFunc(out, func(p checkProblem) bool {
			return slices.ContainsFunc(hp, func(h checkProblem) bool {
				return strings.HasPrefix(h.Pointer, p.Pointer+"/") || h.Pointer == p.Pointer
			})
		})
		out = append(out, hp...)
	}
	return out
}

func (lc *lineChecker) checkEvent(line []byte) []checkProblem {
	out := schemaProblems(lc.v, driver.SchemaEvent, line, "")
	if len(out) > 0 {
		return out
	}
	var el driver.EventLine
	if err := json.Unmarshal(line, &el); err != nil {
		return []checkProblem{{Pointer: "/event", Message: err.Error()}}
	}
	if want := lc.lastSeq + 1; el.Event.Seq != want {
		out = append(out, checkProblem{Pointer: "/event/seq", Message: fmt.Sprintf("seq %d, want %d: seq starts at 1 and grows by exactly 1 per event line, in output order", el.Event.Seq, want)})
	}
	lc.lastSeq = el.Event.Seq
	if err := event.CheckDocumented(el.Event); err != nil {
		out = append(out, checkProblem{Pointer: "/event/attrs", Message: strings.ReplaceAll(err.Error(), "\n", "; ") + " (see the attribute table in docs/DRIVER.md section 6)"})
	}
	return out
}

// helloProblems checks the vocabulary of a hello result.
func helloProblems(result []byte) []checkProblem {
	var h driver.HelloResult
	if json.Unmarshal(result, &h) != nil {
		return nil
	}
	var out []checkProblem
	if !slices.Contains(driver.AcceptedProtocolVersions(), h.Protocol) {
		out = append(out, checkProblem{Pointer: "/result/protocol", Message: fmt.Sprintf("wrong protocol version %q: this harness speaks %q (and accepts %q) and does not negotiate", h.Protocol, driver.ProtocolVersion, driver.AcceptedProtocolVersions()[1:])})
	}
	var known []string
	for _, c := range driver.Capabilities() {
		known = append(known, string(c.Name))
	}
	for i, c := range h.Capabilities {
		if !slices.Contains(known, string(c)) {
			out = append(out, checkProblem{Pointer: fmt.Sprintf("/result/capabilities/%d", i), Message: fmt.Sprintf("unknown capability %q%s (known: %s)", c, suggest(string(c), known), strings.Join(known, ", "))})
		}
	}
	var profiles []string
	for _, p := range driver.Profiles() {
		profiles = append(profiles, string(p.Name))
	}
	for i, p := range h.Profiles {
		j := slices.IndexFunc(driver.Profiles(), func(pi driver.ProfileInfo) bool { return pi.Name == p })
		if j < 0 {
			out = append(out, checkProblem{Pointer: fmt.Sprintf("/result/profiles/%d", i), Message: fmt.Sprintf("unknown profile %q%s (known: %s)", p, suggest(string(p), profiles), strings.Join(profiles, ", "))})
			continue
		}
		if !h.Knows(p) {
			out = append(out, checkProblem{Pointer: fmt.Sprintf("/result/profiles/%d", i), Message: fmt.Sprintf("profile %q is of %s, not of %s: a driver of an earlier version cannot claim it", p, driver.ProfileSince(p), h.Protocol)})
		}
		for _, c := range driver.Profiles()[j].Requires {
			if !h.Has(c) {
				out = append(out, checkProblem{Pointer: fmt.Sprintf("/result/profiles/%d", i), Message: fmt.Sprintf("profile %q requires capability %q, which the driver does not announce", p, c)})
			}
		}
	}
	return out
}

// suggest returns ` (did you mean "x"?)` for a name that differs from a
// known one only in case or in "-" versus "_", else "".
func suggest(name string, known []string) string {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "-")) }
	for _, k := range known {
		if norm(k) == norm(name) {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
	}
	return ""
}

// schemaProblems validates doc against schema name and turns the error into
// a problem whose pointer locates the offending value; prefix is the
// pointer of doc within its line.
func schemaProblems(v *driver.Validator, name string, doc []byte, prefix string) []checkProblem {
	err := v.Validate(name, doc)
	if err == nil {
		return nil
	}
	ptr, msg := schemaPointer(err.Error())
	return []checkProblem{{Pointer: prefix + ptr, Message: fmt.Sprintf("%s (schema %s.json)", msg, name)}}
}

// schemaPointer turns a validator message such as
//
//	x: validating https://.../hello.result.json: validating /properties/implementation: required: missing properties: ["version"]
//
// into the instance pointer "/implementation/version" and the message
// `missing field "version"`.
func schemaPointer(s string) (ptr, msg string) {
	msg = s
	const v = "validating "
	for {
		i := strings.Index(msg, v)
		if i < 0 {
			break
		}
		rest := msg[i+len(v):]
		colon := strings.Index(rest, ": ")
		if colon < 0 {
			break
		}
		if p := rest[:colon]; strings.HasPrefix(p, "/") {
			ptr = p
		}
		msg = rest[colon+2:]
	}
	var segs []string
	for _, seg := range strings.Split(strings.Trim(ptr, "/"), "/") {
		switch seg {
		case "", "properties", "items", "prefixItems", "additionalProperties", "$defs", "allOf", "anyOf", "oneOf":
			continue
		}
		segs = append(segs, seg)
	}
	ptr = ""
	if len(segs) > 0 {
		ptr = "/" + strings.Join(segs, "/")
	}
	if names, ok := strings.CutPrefix(msg, "required: missing properties: "); ok {
		var list []string
		_ = json.Unmarshal([]byte(strings.ReplaceAll(names, `" "`, `","`)), &list)
		if len(list) == 1 {
			return ptr + "/" + list[0], fmt.Sprintf("missing field %q", list[0])
		}
		if len(list) > 1 {
			return ptr, "missing fields " + strings.Join(quote(list), ", ")
		}
	}
	if len(msg) > 400 {
		msg = msg[:400] + "…"
	}
	return ptr, msg
}

func quote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
