package timeline_test

import "testing"

// FuzzTimelineXML renders a trace in which an arbitrary server name,
// session name, tool name and text (errors, statuses, a command line) and
// an arbitrary title stand wherever the runtime quotes a config or a
// server: the SVG and the HTML page are always well-formed XML (a strict
// encoding/xml parse of the whole document succeeds).
func FuzzTimelineXML(f *testing.F) {
	f.Add("fx", "s1", "echo", "ping timed out after 3s", "timeline")
	f.Add("a\x1b[2J", "s\x00", "t\u202e", "\xff\xfe\ufffe", "\x07")
	f.Add("", "", "", "", "")
	f.Fuzz(func(t *testing.T, server, session, tool, text, title string) {
		svg, page := render(t, hostileTrace(server, session, tool, text), title)
		xmlText(t, "SVG", svg)
		xmlText(t, "HTML", page)
	})
}
