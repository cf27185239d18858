package doctor

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/runtime/event"
)

// TableOptions says how WriteTable lays the report out.
type TableOptions struct {
	// Width is the terminal width; every line fits in it (default 100,
	// at least 60).
	Width int
	// Dir and Home shorten paths: files under Dir are shown relative to
	// it, files under Home as ~/...; "" disables each.
	Dir, Home string
}

func (o TableOptions) width() int {
	switch {
	case o.Width <= 0:
		return 100
	case o.Width < 60:
		return 60
	}
	return o.Width
}

// ShortPath shortens a config path for display.
func (o TableOptions) ShortPath(p string) string {
	if p == "" {
		return "(inline)"
	}
	if o.Dir != "" {
		if rel, err := filepath.Rel(o.Dir, p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	if o.Home != "" {
		if rel, err := filepath.Rel(o.Home, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.Join("~", rel)
		}
	}
	return p
}

// WriteTable prints the report as a table, one row per server with its
// details indented under it, then the problems that belong to no server
// and a summary line. Every text from a config or a server (names, errors,
// stderr lines, tool names, paths) is shown through textsafe.Line: control
// characters, terminal escapes and bidirectional controls appear as
// escapes, never raw.
func WriteTable(w io.Writer, rep *Report, o TableOptions) error {
	width := o.width()
	nameW := len("SERVER")
	for _, s := range rep.Servers {
		nameW = max(nameW, utf8.RuneCountInString(textsafe.Line(s.Name)))
	}
	nameW = min(nameW, 24)
	const statusW, typeW, protoW, toolsW, connW = 8, 5, 10, 5, 7
	trustW := 18
	fixed := func() int { return nameW + statusW + typeW + protoW + toolsW + connW + trustW + 7*2 }
	// Narrow terminals: shrink the name and trust columns before the
	// source column drops under 20 characters.
	for width-fixed() < 20 && (nameW > 12 || trustW > 12) {
		if nameW > 12 {
			nameW--
		}
		if trustW > 12 && width-fixed() < 20 {
			trustW--
		}
	}
	srcW := max(width-fixed(), 10)
	var b strings.Builder
	row := func(name, status, typ, proto, tools, conn, trust, src string) {
		name, status, typ, proto, trust, src = textsafe.Line(name), textsafe.Line(status), textsafe.Line(typ), textsafe.Line(proto), textsafe.Line(trust), textsafe.Line(src)
		line := fmt.Sprintf("%-*s  %-*s  %-*s  %-*s  %*s  %*s  %-*s  %s",
			nameW, cut(name, nameW), statusW, status, typeW, typ, protoW, cut(proto, protoW), toolsW, tools, connW, conn, trustW, cut(trust, trustW), cutLeft(src, srcW))
		b.WriteString(cut(strings.TrimRight(line, " "), width) + "\n")
	}
	detail := func(label, text string) {
		b.WriteString(cut("  "+textsafe.Line(label)+" "+textsafe.Line(strings.ReplaceAll(text, "\n", " ")), width) + "\n")
	}
	// A server's error keeps its end, where an error chain names the cause.
	errorDetail := func(label, text string) {
		head := "  " + label + " "
		text = textsafe.Line(strings.ReplaceAll(text, "\n", " "))
		b.WriteString(head + cutKeepEnd(text, width-utf8.RuneCountInString(head)) + "\n")
	}
	row("SERVER", "STATUS", "TYPE", "PROTOCOL", "TOOLS", "CONNECT", "TRUST", "SOURCE")
	counts := map[string]int{}
	for _, s := range rep.Servers {
		counts[s.Status]++
		tools, conn := "-", "-"
		if s.Status == StatusOK {
			tools = fmt.Sprint(s.Tools)
		}
		switch {
		case s.ConnectMillis >= 10_000:
			conn = fmt.Sprintf("%.1fs", float64(s.ConnectMillis)/1000)
		case s.ConnectMillis >= 0:
			conn = fmt.Sprintf("%dms", s.ConnectMillis)
		}
		typ, proto, trust := s.Transport, s.Protocol, s.Trust
		if typ == "" {
			typ = "-"
		}
		if proto == "" {
			proto = "-"
		}
		if trust == "" {
			trust = "-"
		}
		src := o.ShortPath(s.File)
		if s.Line > 0 {
			src += ":" + fmt.Sprint(s.Line)
		}
		if s.Level != "" {
			src += " (" + s.Level + ")"
		}
		row(s.Name, s.Status, typ, proto, tools, conn, trust, src)
		switch {
		case s.Error != "" && s.Status == StatusOK:
			errorDetail("note:", s.Error)
		case s.Error != "" && s.Status != StatusInvalid:
			errorDetail("error:", s.Error)
		}
		for _, l := range s.Stderr {
			detail("stderr|", l)
		}
		for _, p := range s.Problems {
			p.File = o.ShortPath(p.File)
			detail(p.Severity+":", p.String())
		}
		for _, sh := range s.Shadowed {
			at := o.ShortPath(sh.File)
			if sh.Line > 0 {
				at += ":" + fmt.Sprint(sh.Line)
			}
			detail("shadows:", fmt.Sprintf("%s (%s)", at, sh.Level))
		}
		for _, c := range s.Collisions {
			detail("collision:", c)
		}
	}
	if len(rep.Problems) > 0 {
		b.WriteString("config problems outside any server:\n")
		for _, p := range rep.Problems {
			p.File = o.ShortPath(p.File)
			detail(p.Severity+":", p.String())
		}
	}
	var parts []string
	for _, st := range []string{StatusOK, StatusFailed, StatusInvalid, StatusBlocked, StatusDisabled, StatusPending} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	summary := fmt.Sprintf("%d servers", len(rep.Servers))
	if len(parts) > 0 {
		summary += ": " + strings.Join(parts, ", ")
	}
	if counts[StatusBlocked] > 0 {
		summary += " (-trust connects blocked project servers)"
	}
	b.WriteString(cut(summary, width) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WatchLine formats a lifecycle event for -watch: offset, kind, server and
// the short attributes, then the error, within width. A line too long is
// cut in the error's middle, keeping its start and its end, where an error
// chain names the cause ("... connect: connection refused"). The server's
// name and the attributes are shown through textsafe.Line.
func WatchLine(e event.Event, width int) string {
	if width <= 0 {
		width = 100
	}
	ms := e.At.Milliseconds()
	head := fmt.Sprintf("%4d.%03ds  %-22s %s", ms/1000, ms%1000, textsafe.Line(string(e.Kind)), textsafe.Line(e.Server))
	var b strings.Builder
	for _, k := range []string{"attempt", "reason", "delay_ms", "next_delay_ms", "tools", "protocol", "pid", "status", "planned", "step", "method", "healthy", "idle_ms", "policy"} {
		if v, ok := e.Get(k); ok && v != "" {
			fmt.Fprintf(&b, " %s=%s", k, textsafe.Line(v))
		}
	}
	attrs := b.String()
	v, ok := e.Get("error")
	if !ok || v == "" {
		return cut(head+attrs, width)
	}
	const label = " error="
	errText := textsafe.Line(firstLine(v))
	n := func(s string) int { return utf8.RuneCountInString(s) }
	if n(head)+n(attrs)+n(label)+n(errText) <= width {
		return head + attrs + label + errText
	}
	// Too long: the error keeps at least minErr characters (its end, where
	// the cause is), the attributes give way first, the head never does.
	const minErr = 30
	room := max(width-n(head)-n(attrs)-n(label), min(minErr, n(errText)))
	if n(head)+n(label)+room > width {
		room = max(width-n(head)-n(label), 0)
	}
	if rest := width - n(head) - n(label) - room; rest < n(attrs) {
		if rest > 1 {
			attrs = cut(attrs, rest)
		} else {
			attrs = ""
		}
	}
	if room == 0 {
		return cut(head+attrs, width)
	}
	return head + attrs + label + cutKeepEnd(errText, room)
}

// cut shortens s to n characters, ending in "…" when cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// cutKeepEnd shortens s to n characters by cutting its middle: it keeps
// the start and, in about two thirds of n, the end, from the start of an
// error chain's ": "-separated part when one fits, so that the cause an
// error names last stays visible.
func cutKeepEnd(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 2 {
		return cut(s, n)
	}
	if n < 24 {
		return "…" + string(r[len(r)-n+1:]) // narrow: the end alone
	}
	tailN := n * 2 / 3
	tail := r[len(r)-tailN:]
	// Start the tail at a part of the chain when one begins in it.
	if i := strings.Index(string(tail), ": "); i >= 0 && utf8.RuneCountInString(string(tail)[:i]) < tailN/2 {
		tail = []rune(string(tail)[i+2:])
	}
	head := r[:n-1-len(tail)]
	return string(head) + "…" + string(tail)
}

// cutLeft shortens s to n characters keeping its end, starting with "…".
func cutLeft(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return "…" + string(r[len(r)-n+1:])
}
