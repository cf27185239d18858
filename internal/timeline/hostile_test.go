package timeline_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/timeline"
	"github.com/mcplife/mcplife/runtime/event"
)

// hostileTrace is a session with one server that connects, takes a call,
// fails a probe and restarts, with server, session, tool and text (an
// error, a status, a command line) put wherever the runtime quotes what a
// config or a server said.
func hostileTrace(server, session, tool, text string) []event.Event {
	at := func(ms int64) event.Event { return event.Event{At: msDur(ms)} }
	var evs []event.Event
	add := func(ms int64, srv, sess string, kind event.Kind, attrs map[string]any) {
		e := at(ms)
		e.Seq, e.Server, e.Session, e.Kind, e.Attrs = uint64(len(evs)+1), srv, sess, kind, attrs
		evs = append(evs, e)
	}
	add(0, "", session, event.SessionOpened, nil)
	add(0, server, "", event.ServerConnecting, map[string]any{"attempt": int64(0), "transport": "stdio"})
	add(0, server, "", event.ProcessStarted, map[string]any{"command": text, "pid": int64(7)})
	add(10, server, "", event.ServerConnected, map[string]any{"tools": int64(1), "protocol": text})
	add(10, server, "", event.ToolsRegistered, map[string]any{"names": tool, "tools": int64(1)})
	add(20, server, session, event.ToolCallStarted, map[string]any{"call": "c1", "tool": tool})
	add(30, server, "", event.ProbeStarted, map[string]any{"method": "ping"})
	add(40, server, "", event.ProbeFinished, map[string]any{"method": "ping", "healthy": false, "error": text})
	add(50, server, "", event.ProcessExited, map[string]any{"pid": int64(7), "status": text})
	add(50, server, "", event.RestartScheduled, map[string]any{"attempt": int64(1), "delay_ms": int64(0), "reason": text})
	add(60, server, session, event.ToolCallFinished, map[string]any{"call": "c1", "outcome": "error", "code": text, "tool": tool})
	add(70, server, "", event.ServerFailed, map[string]any{"error": text})
	add(80, "", session, event.SessionClosed, nil)
	return evs
}

// render returns the SVG and the HTML page of evs.
func render(t *testing.T, evs []event.Event, title string) (svg, page []byte) {
	t.Helper()
	var s, p bytes.Buffer
	if err := timeline.WriteSVG(&s, evs, timeline.Options{Title: title}); err != nil {
		t.Fatal(err)
	}
	if err := timeline.WriteHTML(&p, evs, timeline.Options{Title: title}); err != nil {
		t.Fatal(err)
	}
	return s.Bytes(), p.Bytes()
}

// xmlText parses doc as strict XML and returns its character data; the
// test fails when doc is not well-formed.
func xmlText(t *testing.T, what string, doc []byte) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return text.String()
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", what, err)
		}
		if cd, ok := tok.(xml.CharData); ok {
			text.Write(cd)
		}
	}
}

// Control characters, escapes, bidi overrides, characters XML forbids and
// invalid UTF-8 in a server's name, a tool's, an error, a status: the SVG
// and the HTML page parse as XML, and their text shows the characters as
// escapes, never raw.
func TestHostileTextWellFormed(t *testing.T) {
	const nasty = "boom\x1b]0;pwned\x07\x1b[2J\r\x00\x0b\x0c\ufffe\uffff\xff\xed\xa0\x80 \u202eexe.txt\u0085 <tag> & \"q\""
	evs := hostileTrace("srv\x1b[31m\x00", "s\x01", "tool\x1b]8;;https://evil.example\x07", nasty)
	svg, page := render(t, evs, "title\x1b[2J\x00")
	for what, doc := range map[string][]byte{"SVG": svg, "HTML": page} {
		text := xmlText(t, what, doc)
		for _, c := range []string{"\x1b", "\x07", "\x00", "\x01", "\x0b", "\x0c", "\r", "\ufffe", "\uffff", "\u202e", "\u0085"} {
			if strings.Contains(text, c) {
				t.Errorf("%s: the text holds a raw %q", what, c)
			}
		}
		for _, want := range []string{`boom\x1b]0;pwned\x07`, `\u202eexe.txt`, `<tag> & "q"`} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the text lacks %s", what, want)
			}
		}
	}
	if !bytes.Contains(page, svg) {
		t.Error("the HTML page does not embed the SVG")
	}
}
