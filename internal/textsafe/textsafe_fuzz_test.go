package textsafe_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mcplife/mcplife/internal/textsafe"
)

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

// FuzzSanitize sanitizes arbitrary text as Line and Block: the output is
// valid UTF-8 and holds no control character (unicode.IsControl), no
// bidirectional control (the Unicode Bidi_Control property), no line or
// paragraph separator and no character XML 1.0 forbids, Block keeping only
// newlines and tabs; the output equals the input exactly when the input
// is clean by those definitions (valid UTF-8 included); sanitizing twice
// changes nothing; and Block keeps the number of lines.
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
