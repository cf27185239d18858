package textsafe_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

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

// shown reports whether r may appear in a sanitized line, by definitions
// independent of the package's: not a control (unicode.IsControl: C0, DEL,
// C1), not a bidirectional control (the Unicode Bidi_Control property), not
// a line or paragraph separator, and a character XML 1.0 allows.
func shown(r rune, keepLines bool) bool {
	if keepLines && (r == '\n' || r == '\t') {
		return true
	}
	return !unicode.IsControl(r) && !unicode.Is(unicode.Bidi_Control, r) &&
		!unicode.In(r, unicode.Zl, unicode.Zp) && xmlChar(r)
}

// xmlChar reports whether XML 1.0 allows r (production Char).
func xmlChar(r rune) bool {
	return r == 0x9 || r == 0xa || r == 0xd || (r >= 0x20 && r <= 0xd7ff) ||
		(r >= 0xe000 && r <= 0xfffd) || (r >= 0x10000 && r <= 0x10ffff)
}

// checkSafe fails when out holds a character that may not be shown, or is
// not UTF-8.
func checkSafe(t *testing.T, fn, in, out string, keepLines bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%s(%q) = %q: not valid UTF-8", fn, in, out)
	}
	for _, r := range out {
		if !shown(r, keepLines) {
			t.Fatalf("%s(%q) = %q: holds %U", fn, in, out, r)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x1b]0;t\x07", "\x1b[2J", "\r\n\t", "\u202e\u2066", "\u0085\u009b",
		"\xff\xfe", "\xed\xa0\x80", "日本 🎉", "\ufffe\uffff", "\\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, block := textsafe.Line(s), textsafe.Block(s)
		checkSafe(t, "Line", s, line, false)
		checkSafe(t, "Block", s, block, true)
		clean, cleanLines := utf8.ValidString(s), utf8.ValidString(s)
		for _, r := range s {
			clean = clean && shown(r, false)
			cleanLines = cleanLines && shown(r, true)
		}
		if clean != (line == s) {
			t.Fatalf("Line(%q) = %q: clean input %v, unchanged %v", s, line, clean, line == s)
		}
		if cleanLines != (block == s) {
			t.Fatalf("Block(%q) = %q: clean input %v, unchanged %v", s, block, cleanLines, block == s)
		}
		// Sanitized text is clean: a second pass changes nothing.
		if again := textsafe.Line(line); again != line {
			t.Fatalf("Line(Line(%q)) = %q, want %q", s, again, line)
		}
		if strings.Count(block, "\n") != strings.Count(s, "\n") {
			t.Fatalf("Block(%q) = %q: the number of lines changed", s, block)
		}
	})
}
