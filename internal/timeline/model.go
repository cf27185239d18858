// Package timeline draws the lifecycle events of a runtime (runtime/event) as
// a self-contained SVG picture, or an HTML page embedding it: one lane per
// server with rows for its processes, its connection, the grace windows that
// keep its tools, its tool calls and its health probes, restarts and backoff
// waits, under a lane of the sessions and their startup gates, on the recorder's time axis
// (virtual time under a fake clock). Failures are marked in red, every mark
// carries a tooltip with its events, and a legend explains the colours.
//
// The output depends only on the events and Options, byte for byte, so it
// can be kept as a golden file.
package timeline

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
)

// Style names what a bar or marker shows; the legend lists them.
type Style string

// The styles, in legend order.
const (
	StyleSession    Style = "session"
	StyleGate       Style = "gate"
	StyleProcess    Style = "process"
	StyleConnecting Style = "connecting"
	StyleConnected  Style = "connected"
	StyleGrace      Style = "grace"
	StyleBlocked    Style = "blocked"
	StyleCall       Style = "call"
	StyleCallError  Style = "call-error"
	StyleProbe      Style = "probe"
	StyleBackoff    Style = "backoff"
	StyleRestart    Style = "restart"
	StyleFailure    Style = "failure" // marker
	StyleNote       Style = "note"    // marker: a step that is not a failure
)

// Row names of a server lane, in drawing order.
const (
	RowProcess    = "process"
	RowConnection = "connection"
	RowTools      = "tools"
	RowCalls      = "calls"
	RowRestart    = "probe/restart"
)

// Bar is an interval on a row.
type Bar struct {
	Start, End time.Duration
	Style      Style
	Label      string // drawn inside the bar when it fits
	Tip        string // tooltip
	Failed     bool   // drawn with a red outline
}

// Marker is an instant on a row.
type Marker struct {
	At    time.Duration
	Style Style
	Tip   string
}

// Row is one line of a lane. Overlapping bars (concurrent calls) are spread
// over sub-rows.
type Row struct {
	Name    string
	Bars    [][]Bar // sub-rows
	Markers []Marker
}

// Lane groups the rows of one server, or of the sessions.
type Lane struct {
	Name string
	Rows []*Row
}

// Timeline is the model that Render draws.
type Timeline struct {
	End   time.Duration // the last event's offset
	Lanes []*Lane
	// Events counts the events the timeline was built from.
	Events int
}

// Build turns events (in emission order) into a Timeline. Servers get lanes
// in order of first appearance; the sessions lane, when any session-level
// event exists, comes first.
func Build(evs []event.Event) *Timeline {
	b := &builder{servers: map[string]*serverState{}, sessions: map[string]*sessionState{}}
	for _, e := range evs {
		if e.At > b.end {
			b.end = e.At
		}
	}
	for _, e := range evs {
		b.add(e)
	}
	return b.finish(len(evs))
}

type builder struct {
	end          time.Duration
	order        []string
	servers      map[string]*serverState
	sessionOrder []string
	sessions     map[string]*sessionState
	runtimeMarks []Marker
}

type openBar struct {
	start time.Duration
	tip   []string
	label string
	style Style
}

type serverState struct {
	process, conn, tools, calls, restart []Bar
	procMarks, connMarks                 []Marker
	callMarks, restartMarks              []Marker

	procs   map[string]*openBar // by pid
	procEnd map[string]int      // pid -> index in process of its closed bar
	connect *openBar            // connecting
	up      *openBar            // connected
	upPID   string              // the process of the connection, if stdio
	lastPID string              // the last process started
	grace   *openBar            // unregister grace window
	open    map[string]*openBar // calls by session/call
	probe   *openBar
	backoff *openBar
	attempt *openBar
}

type sessionState struct {
	bars  []Bar // session open intervals
	gates []Bar // startup gates, drawn over them
	marks []Marker
	open  *openBar
	gate  *openBar
}

func (b *builder) server(name string) *serverState {
	s, ok := b.servers[name]
	if !ok {
		s = &serverState{procs: map[string]*openBar{}, procEnd: map[string]int{}, open: map[string]*openBar{}}
		b.servers[name] = s
		b.order = append(b.order, name)
	}
	return s
}

func (b *builder) session(name string) *sessionState {
	s, ok := b.sessions[name]
	if !ok {
		s = &sessionState{}
		b.sessions[name] = s
		b.sessionOrder = append(b.sessionOrder, name)
	}
	return s
}

// tip renders an event for a tooltip: offset, kind and attributes, without
// the long ones.
func tip(e event.Event) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s", FormatOffset(e.At), e.Kind)
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		if k == "names" || k == "command" {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fmt.Sprint(e.Attrs[k])
		if k == "stderr" || k == "error" {
			v = strings.ReplaceAll(strings.TrimSpace(v), "\n", " | ")
		}
		if len(v) > 160 {
			v = v[:160] + "..."
		}
		fmt.Fprintf(&sb, " %s=%s", k, v)
	}
	return sb.String()
}

func (o *openBar) close(end time.Duration, e *event.Event, style Style, label string, failed bool) Bar {
	tips := o.tip
	if e != nil {
		tips = append(tips, tip(*e))
	}
	if label == "" {
		label = o.label
	}
	if style == "" {
		style = o.style
	}
	return Bar{Start: o.start, End: end, Style: style, Label: label, Tip: strings.Join(tips, "\n"), Failed: failed}
}

func attr(e event.Event, k string) string {
	v, _ := e.Get(k)
	return v
}

func (b *builder) add(e event.Event) {
	if e.Server == "" {
		b.addSession(e)
		return
	}
	s := b.server(e.Server)
	mark := func(list *[]Marker, style Style) {
		*list = append(*list, Marker{At: e.At, Style: style, Tip: tip(e)})
	}
	switch e.Kind {
	case event.ProcessStarted:
		pid := attr(e, "pid")
		s.procs[pid] = &openBar{start: e.At, tip: []string{tip(e)}, label: "pid " + pid, style: StyleProcess}
		delete(s.procEnd, pid)
		s.lastPID = pid
	case event.ProcessSignaled:
		pid := attr(e, "pid")
		if o, ok := s.procs[pid]; ok {
			o.tip = append(o.tip, tip(e))
		} else if i, ok := s.procEnd[pid]; ok {
			// Reported gone but still being stopped: it lives on.
			bar := &s.process[i]
			bar.End = max(bar.End, e.At)
			bar.Tip += "\n" + tip(e)
		}
		if pid == "0" || pid == "" {
			mark(&s.connMarks, StyleNote)
		} else {
			mark(&s.procMarks, StyleNote)
		}
	case event.ProcessExited:
		pid := attr(e, "pid")
		planned := attr(e, "planned") == "true"
		if o, ok := s.procs[pid]; ok {
			s.process = append(s.process, o.close(e.At, &e, "", "", !planned))
			s.procEnd[pid] = len(s.process) - 1
			delete(s.procs, pid)
		}
		if !planned {
			mark(&s.procMarks, StyleFailure)
		}
		if pid == s.upPID {
			s.closeUp(e.At, &e)
		}
	case event.ServerConnecting:
		if s.connect == nil {
			s.connect = &openBar{start: e.At, tip: []string{tip(e)}, label: "connecting", style: StyleConnecting}
		}
	case event.ServerConnected:
		if s.connect != nil {
			s.conn = append(s.conn, s.connect.close(e.At, &e, "", "", false))
			s.connect = nil
		}
		s.closeUp(e.At, nil)
		s.up = &openBar{start: e.At, tip: []string{tip(e)}, label: attr(e, "tools") + " tools", style: StyleConnected}
		s.upPID = ""
		if attr(e, "transport") == "stdio" || attr(e, "transport") == "" {
			s.upPID = s.lastPID
		}
	case event.ServerFailed:
		if s.connect != nil {
			s.conn = append(s.conn, s.connect.close(e.At, &e, "", "failed", true))
			s.connect = nil
		}
		mark(&s.connMarks, StyleFailure)
	case event.TransportClosed:
		s.closeUp(e.At, &e)
		mark(&s.connMarks, StyleFailure)
	case event.ServerDisconnected:
		s.closeUp(e.At, &e)
		mark(&s.connMarks, StyleNote)
	case event.ServerBlocked:
		s.conn = append(s.conn, Bar{Start: e.At, End: b.end, Style: StyleBlocked, Label: "blocked", Tip: tip(e)})
		mark(&s.connMarks, StyleFailure)
	case event.ToolsUnregisterScheduled:
		s.closeUp(e.At, &e)
		s.grace = &openBar{start: e.At, tip: []string{tip(e)}, label: "grace", style: StyleGrace}
	case event.ToolsUnregisterCancelled, event.ToolsUnregistered:
		if s.grace != nil {
			s.tools = append(s.tools, s.grace.close(e.At, &e, "", "", false))
			s.grace = nil
		}
		if e.Kind == event.ToolsUnregistered {
			s.closeUp(e.At, &e)
			mark(&s.connMarks, StyleNote)
		}
	case event.ServerDisabled, event.PoolIdleStop, event.ToolsChanged:
		if e.Kind == event.PoolIdleStop {
			s.closeUp(e.At, &e)
		}
		mark(&s.connMarks, StyleNote)
	case event.ConfigError:
		mark(&s.connMarks, StyleFailure)
	case event.ConfigWarning, event.ConfigShadowed:
		mark(&s.connMarks, StyleNote)
	case event.ToolCallStarted:
		key := e.Session + "/" + attr(e, "call")
		s.open[key] = &openBar{start: e.At, tip: []string{tip(e)}, label: shortTool(attr(e, "tool"), e.Server), style: StyleCall}
	case event.ToolTimeout:
		key := e.Session + "/" + attr(e, "call")
		for k, o := range s.open {
			if k == key || strings.HasSuffix(k, "/"+attr(e, "call")) {
				o.tip = append(o.tip, tip(e))
			}
		}
		mark(&s.callMarks, StyleFailure)
	case event.ToolCallFinished:
		key := e.Session + "/" + attr(e, "call")
		o, ok := s.open[key]
		if !ok {
			o = &openBar{start: e.At, label: shortTool(attr(e, "tool"), e.Server), style: StyleCall}
		}
		delete(s.open, key)
		failed := attr(e, "outcome") != "ok"
		style := StyleCall
		if failed {
			style = StyleCallError
		}
		s.calls = append(s.calls, o.close(e.At, &e, style, "", failed))
	case event.ProbeStarted:
		s.probe = &openBar{start: e.At, tip: []string{tip(e)}, label: attr(e, "method"), style: StyleProbe}
	case event.ProbeFinished:
		if s.probe != nil {
			healthy := attr(e, "healthy") == "true"
			s.restart = append(s.restart, s.probe.close(e.At, &e, "", "", !healthy))
			s.probe = nil
			if !healthy {
				mark(&s.restartMarks, StyleFailure)
			}
		}
	case event.RestartScheduled:
		s.backoff = &openBar{start: e.At, tip: []string{tip(e)}, label: "backoff " + FormatDuration(millisAttr(e, "delay_ms")), style: StyleBackoff}
	case event.RestartAttempt:
		if s.backoff != nil {
			s.restart = append(s.restart, s.backoff.close(e.At, &e, "", "", false))
			s.backoff = nil
		}
		s.attempt = &openBar{start: e.At, tip: []string{tip(e)}, label: "restart #" + attr(e, "attempt"), style: StyleRestart}
	case event.RestartSucceeded, event.RestartFailed:
		failed := e.Kind == event.RestartFailed
		if s.attempt != nil {
			s.restart = append(s.restart, s.attempt.close(e.At, &e, "", "", failed))
			s.attempt = nil
		}
		if failed {
			mark(&s.restartMarks, StyleFailure)
		}
	case event.RestartGaveUp:
		s.backoff = nil
		mark(&s.restartMarks, StyleFailure)
	}
}

// closeUp ends the current connection bar.
func (s *serverState) closeUp(at time.Duration, e *event.Event) {
	if s.up != nil {
		s.conn = append(s.conn, s.up.close(at, e, "", "", false))
		s.up = nil
	}
}

func millisAttr(e event.Event, k string) time.Duration {
	switch v := e.Attrs[k].(type) {
	case int64:
		return time.Duration(v) * time.Millisecond
	case float64:
		return time.Duration(v * float64(time.Millisecond))
	case int:
		return time.Duration(v) * time.Millisecond
	}
	return 0
}

// shortTool drops the "mcp_<server>_" prefix of an exposed tool name.
func shortTool(tool, server string) string {
	if t, ok := strings.CutPrefix(tool, "mcp_"+server+"_"); ok {
		return t
	}
	return tool
}

func (b *builder) addSession(e event.Event) {
	mark := func(style Style) {
		b.runtimeMarks = append(b.runtimeMarks, Marker{At: e.At, Style: style, Tip: tip(e)})
	}
	if e.Session == "" {
		switch e.Kind {
		case event.ConfigError:
			mark(StyleFailure)
		case event.RuntimeClosed, event.ReloadStarted, event.ReloadFinished, event.ConfigWarning:
			mark(StyleNote)
		}
		return
	}
	s := b.session(e.Session)
	switch e.Kind {
	case event.SessionOpened:
		s.open = &openBar{start: e.At, tip: []string{tip(e)}, label: "session " + e.Session, style: StyleSession}
	case event.SessionClosed:
		if s.open != nil {
			s.bars = append(s.bars, s.open.close(e.At, &e, "", "", false))
			s.open = nil
		}
	case event.GateOpened:
		s.gate = &openBar{start: e.At, tip: []string{tip(e)}, label: "gate", style: StyleGate}
	case event.GateClosed:
		if s.gate != nil {
			label := fmt.Sprintf("gate: %s ready", attr(e, "ready"))
			if f := attr(e, "failed"); f != "" && f != "0" {
				label += ", " + f + " failed"
			}
			if l := attr(e, "late"); l != "" && l != "0" {
				label += ", " + l + " late"
			}
			s.gates = append(s.gates, s.gate.close(e.At, &e, "", label, attr(e, "failed") != "0" && attr(e, "failed") != ""))
			s.gate = nil
		}
	}
}

func (b *builder) finish(n int) *Timeline {
	t := &Timeline{End: b.end, Events: n}
	if len(b.sessionOrder) > 0 || len(b.runtimeMarks) > 0 {
		lane := &Lane{Name: "sessions"}
		for i, name := range b.sessionOrder {
			s := b.sessions[name]
			if s.open != nil {
				s.bars = append(s.bars, s.open.close(b.end, nil, "", "", false))
			}
			if s.gate != nil {
				s.gates = append(s.gates, s.gate.close(b.end, nil, "", "", false))
			}
			// Gates lie inside their session: one row, gates on top.
			row := &Row{Name: "session " + name, Bars: [][]Bar{append(s.bars, s.gates...)}, Markers: s.marks}
			if i == 0 {
				row.Markers = append(row.Markers, b.runtimeMarks...)
			}
			lane.Rows = append(lane.Rows, row)
		}
		if len(b.sessionOrder) == 0 {
			lane.Rows = append(lane.Rows, &Row{Name: "runtime", Markers: b.runtimeMarks})
		}
		t.Lanes = append(t.Lanes, lane)
	}
	for _, name := range b.order {
		s := b.servers[name]
		for _, pid := range sortedKeys(s.procs) {
			s.process = append(s.process, s.procs[pid].close(b.end, nil, "", "", false))
		}
		if s.connect != nil {
			s.conn = append(s.conn, s.connect.close(b.end, nil, "", "", false))
		}
		if s.grace != nil {
			s.tools = append(s.tools, s.grace.close(b.end, nil, "", "", false))
		}
		s.closeUp(b.end, nil)
		for _, k := range sortedKeys(s.open) {
			s.calls = append(s.calls, s.open[k].close(b.end, nil, "", "", false))
		}
		for _, o := range []*openBar{s.probe, s.backoff, s.attempt} {
			if o != nil {
				s.restart = append(s.restart, o.close(b.end, nil, "", "", false))
			}
		}
		lane := &Lane{Name: name}
		add := func(rowName string, bars []Bar, marks []Marker) {
			if len(bars) == 0 && len(marks) == 0 {
				return
			}
			lane.Rows = append(lane.Rows, &Row{Name: rowName, Bars: stack(bars), Markers: marks})
		}
		add(RowProcess, s.process, s.procMarks)
		add(RowConnection, s.conn, s.connMarks)
		add(RowTools, s.tools, nil)
		add(RowCalls, s.calls, s.callMarks)
		add(RowRestart, s.restart, s.restartMarks)
		if len(lane.Rows) > 0 {
			t.Lanes = append(t.Lanes, lane)
		}
	}
	return t
}

// stack spreads bars over sub-rows so that no two bars of a sub-row
// overlap (bars sharing only an end point may share a sub-row). Bars keep
// their start order.
func stack(bars []Bar) [][]Bar {
	sorted := make([]Bar, len(bars))
	copy(sorted, bars)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Start < sorted[j].Start })
	var rows [][]Bar
	var ends []time.Duration
	for _, b := range sorted {
		placed := false
		for i := range rows {
			if ends[i] <= b.Start {
				rows[i] = append(rows[i], b)
				ends[i] = b.End
				placed = true
				break
			}
		}
		if !placed {
			rows = append(rows, []Bar{b})
			ends = append(ends, b.End)
		}
	}
	if len(rows) == 0 {
		rows = [][]Bar{nil}
	}
	return rows
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FormatOffset renders an offset as "+12.345s".
func FormatOffset(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("+%d.%03ds", ms/1000, ms%1000)
}

// FormatDuration renders a duration compactly: "0s", "250ms", "1.5s",
// "2m", "1m30s".
func FormatDuration(d time.Duration) string {
	ms := d.Milliseconds()
	switch {
	case ms == 0:
		return "0s"
	case ms < 1000:
		return fmt.Sprintf("%dms", ms)
	case ms < 60_000:
		s := fmt.Sprintf("%.3f", float64(ms)/1000)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		return s + "s"
	default:
		m, s := ms/60_000, (ms%60_000)/1000
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%ds", m, s)
	}
}
