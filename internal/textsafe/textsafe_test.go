package textsafe_test

import (
	"testing"

	"github.com/mcplife/mcplife/internal/textsafe"
)

func TestLineAndBlock(t *testing.T) {
	for _, tc := range []struct {
		name, in, line, block string
	}{
		{"OSC 0 retitles the window", "a\x1b]0;title\x07b", `a\x1b]0;title\x07b`, `a\x1b]0;title\x07b`},
		{"CSI clears the screen", "\x1b[2J\x1b[Hok", `\x1b[2J\x1b[Hok`, `\x1b[2J\x1b[Hok`},
		{"OSC 8 hides a link", "\x1b]8;;https://evil.example\x1b\\docs\x1b]8;;\x1b\\", `\x1b]8;;https://evil.example\x1b\docs\x1b]8;;\x1b\`, `\x1b]8;;https://evil.example\x1b\docs\x1b]8;;\x1b\`},
		{"CR overwrites the line", "evil\rgood", `evil\rgood`, `evil\rgood`},
		{"backspace, NUL, DEL", "a\bb\x00c\x7f", `a\x08b\x00c\x7f`, `a\x08b\x00c\x7f`},
		{"newline and tab", "a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"C1 CSI and NEL", "a\u009b2Jb\u0085", `a\u009b2Jb\u0085`, `a\u009b2Jb\u0085`},
		{"bidi override (Trojan Source)", "admin\u202e\u2066txt.exe\u2069", `admin\u202e\u2066txt.exe\u2069`, `admin\u202e\u2066txt.exe\u2069`},
		{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`, `\u200e\u200f\u061c`},
		{"line separators", "a\u2028b\u2029", `a\u2028b\u2029`, `a\u2028b\u2029`},
		{"XML noncharacters", "a\ufffeb\uffff", `a\ufffeb\uffff`, `a\ufffeb\uffff`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`},
		{"an encoded surrogate", "\xed\xa0\x80", `\xed\xa0\x80`, `\xed\xa0\x80`},
	} {
		if got := textsafe.Line(tc.in); got != tc.line {
			t.Errorf("%s: Line(%q) = %q, want %q", tc.name, tc.in, got, tc.line)
		}
		if got := textsafe.Block(tc.in); got != tc.block {
			t.Errorf("%s: Block(%q) = %q, want %q", tc.name, tc.in, got, tc.block)
		}
	}
}

// Ordinary text, whatever its script, comes back as it is.
func TestCleanTextUnchanged(t *testing.T) {
	for _, s := range []string{
		"", "memory", "server-everything 1.2.3", `C:\Users\me\mcp.json`, `a\x1b literally`,
		"Grüße, café, naïve", "日本語のサーバー", "عربي עברית", "emoji 🎉 👨‍👩‍👧 🏳️‍🌈", "zero\u200bwidth", "\ufffd",
	} {
		if got := textsafe.Line(s); got != s {
			t.Errorf("Line(%q) = %q, want it unchanged", s, got)
		}
		if got := textsafe.Block(s + "\n\tnext"); got != s+"\n\tnext" {
			t.Errorf("Block(%q) = %q, want it unchanged", s+"\n\tnext", got)
		}
	}
}
