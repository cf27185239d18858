// Package repro defines the session trace that `harness record` writes and
// turns a trace into a scenario (scenarios/NNN-slug.txtar) that replays the
// same lifecycle against the fixture in virtual time.
//
// A trace holds what the reference runtime did (its lifecycle events), what
// the agent asked for (the tool calls and their outcomes) and, for stdio
// servers recorded through the proxy, what crossed the wire (the proxy's
// journal, in the fixture's journal format). Generate maps what was observed
// (a call that hung until the probe failed and the server was restarted, a
// server that died mid-call, a probe that found the server healthy, tool
// errors) to fixture knobs and scenario commands.
package repro

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcplife/mcplife/runtime/event"
)

// Format is the format identifier of version 1 of the trace.
const Format = "mcplife-trace/1"

// Trace is a recorded session. Its JSON form is documented in
// docs/TESTING.md ("Reproducing with your own servers").
type Trace struct {
	// Format is always Format; readers refuse other values.
	Format string `json:"format"`
	// Recorded is when recording started (RFC 3339), informational.
	Recorded string `json:"recorded,omitempty"`
	// Config is the config file the session ran.
	Config string `json:"config,omitempty"`
	// Servers describes each configured server, by name.
	Servers map[string]Server `json:"servers"`
	// Faults lists every change of a proxy's rules during the session, in
	// order: those record installed (-fault) and those set through the
	// proxy's control endpoint by hand.
	Faults []Fault `json:"faults,omitempty"`
	// Calls are the tool calls of the session, in the order they started.
	Calls []Call `json:"calls"`
	// Events are the runtime's lifecycle events (runtime/event JSON, at_ms
	// on the real clock from the start of recording).
	Events []event.Event `json:"events"`
	// Journals holds, per server, the proxy's journal entries (one JSON
	// object each, as journal.Read reads them from a file).
	Journals map[string][]json.RawMessage `json:"journals,omitempty"`
}

// Server is one configured server of a trace.
type Server struct {
	// Transport is stdio, http or sse.
	Transport string `json:"transport"`
	// Command is the stdio command line as configured (before the proxy
	// was put in front of it).
	Command []string `json:"command,omitempty"`
	// URL is the endpoint of a remote server.
	URL string `json:"url,omitempty"`
	// ToolTimeoutMS is the configured per-call timeout; 0 means the
	// runtime's default.
	ToolTimeoutMS int64 `json:"toolTimeoutMs,omitempty"`
	// Proxied tells that the proxy recorded the server's wire (Journals).
	Proxied bool `json:"proxied"`
	// Protocol is the protocol version the runtime negotiated at the
	// server's last connect (server.connected), "" when it never
	// connected; Era is its era: EraModern for the stateless revision
	// (2026-07-28 and later), EraLegacy for the handshake era.
	Protocol string `json:"protocol,omitempty"`
	Era      string `json:"era,omitempty"`
}

// The protocol eras of a recorded server (docs/LIFECYCLE.md, "Protocol
// eras"), as scenarios name them.
const (
	EraLegacy = "legacy"
	EraModern = "modern"
)

// modernProtocol is the first protocol version of the stateless era.
const modernProtocol = "2026-07-28"

// EraOf returns the era of protocol version v: EraModern from 2026-07-28
// on, EraLegacy for an older version, "" for none.
func EraOf(v string) string {
	switch {
	case v == "":
		return ""
	case v >= modernProtocol:
		return EraModern
	}
	return EraLegacy
}

// NegotiatedProtocol returns the protocol version of the last
// server.connected event of server in evs, "" when there is none.
func NegotiatedProtocol(evs []event.Event, server string) string {
	v := ""
	for _, e := range evs {
		if e.Server == server && e.Kind == event.ServerConnected {
			if p, ok := e.Get("protocol"); ok && p != "" {
				v = p
			}
		}
	}
	return v
}

// ServerEra returns the era server was recorded in: the trace's era or
// protocol of it, else the protocol its server.connected events name (a
// trace written before the trace kept the era), else "".
func (tr *Trace) ServerEra(server string) (era, protocol string) {
	s := tr.Servers[server]
	protocol = s.Protocol
	if protocol == "" {
		protocol = NegotiatedProtocol(tr.Events, server)
	}
	era = s.Era
	if era != EraLegacy && era != EraModern {
		era = EraOf(protocol)
	}
	return era, protocol
}

// Fault is a change of a proxy's rules during recording: one rule added
// (or, first of a replacement, replacing the others), or every rule
// cleared.
type Fault struct {
	Server string `json:"server"`
	// Rule is the rule in its text form (harness proxy -h); "" when Op is
	// clear.
	Rule string `json:"rule"`
	// AtMS is when the proxy changed its rules, on the events' clock.
	AtMS int64 `json:"at_ms"`
	// Op is add, replace (the rules before it are dropped) or clear.
	Op string `json:"op,omitempty"`
	// Source is "-fault" for a rule record installed, "control" for one set
	// through the control endpoint from outside.
	Source string `json:"source,omitempty"`
	// Launch is the proxy launch whose rules changed (rules set through the
	// control endpoint live as long as that proxy process).
	Launch int `json:"launch,omitempty"`
}

// describe says where the change came from, for a scenario's header.
func (f Fault) describe() string {
	var parts []string
	switch f.Source {
	case "-fault":
		parts = append(parts, "record -fault")
	case "control":
		parts = append(parts, "set through the control endpoint")
	}
	if f.Op != "" && f.Op != "add" {
		parts = append(parts, f.Op)
	}
	if f.Launch > 0 {
		parts = append(parts, fmt.Sprintf("proxy launch %d", f.Launch))
	}
	if len(parts) == 0 {
		return "proxy rule"
	}
	return strings.Join(parts, ", ")
}

// Call is one tool call of the session.
type Call struct {
	// ID names the call; the runtime's tool.call_* events carry it as call.
	ID      string `json:"id"`
	Session string `json:"session"`
	Server  string `json:"server"`
	// Tool is the server's own tool name; Exposed the runtime's name for
	// it.
	Tool    string          `json:"tool"`
	Exposed string          `json:"exposed"`
	Args    json.RawMessage `json:"args,omitempty"`
	// Outcome is ok, tool-error or error; Code the runtime error code of a
	// failed call (mcp_tool_timeout, mcp_connection_lost, ...).
	Outcome string `json:"outcome"`
	Code    string `json:"code,omitempty"`
	// Text is the start of the result text or the error.
	Text    string `json:"text,omitempty"`
	StartMS int64  `json:"start_ms"`
	EndMS   int64  `json:"end_ms"`
}

// MaxTraceBytes bounds the size of a trace Read accepts: a trace may come
// from anyone.
const MaxTraceBytes = 256 << 20

// Read reads a trace file (at most MaxTraceBytes) and checks its format.
func Read(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxTraceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	if len(data) > MaxTraceBytes {
		return nil, fmt.Errorf("trace %s: larger than %d MiB", path, MaxTraceBytes>>20)
	}
	var tr Trace
	if err := json.Unmarshal(data, &tr); err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	if tr.Format != Format {
		return nil, fmt.Errorf("trace %s: format %q, want %q", path, tr.Format, Format)
	}
	if len(tr.Servers) == 0 {
		return nil, fmt.Errorf("trace %s: %w", path, errors.New("no servers"))
	}
	return &tr, nil
}

// Write writes the trace to path as indented JSON, creating its directory
// when it does not exist.
func Write(path string, tr *Trace) error {
	tr.Format = Format
	data, err := json.MarshalIndent(tr, "", " ")
	if err != nil {
		return fmt.Errorf("encode trace: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}
