// Package textsafe makes text that comes from a server, a config file or a
// driver safe to show: on a terminal, in a report, in a picture.
//
// Such text may hold characters that act instead of being shown: ESC
// starts terminal sequences (retitle the window, clear the screen, hide a
// link behind OSC 8, recolour or rewrite what was printed), CR and
// backspace overwrite a line, BEL rings, C1 controls are 8-bit escapes,
// bidirectional overrides and isolates reorder what follows them (a
// "Trojan Source" name reads differently than it is), and invalid UTF-8 or
// the characters XML 1.0 forbids break an SVG. Line and Block replace each
// such character with a visible escape (\x1b, \r, \u202e, \xff for a byte
// that is not UTF-8) and leave every other character, backslashes, accents,
// scripts and emoji included, as it is: ordinary text comes back unchanged.
package textsafe

import (
	"strings"
	"unicode/utf8"
)

// Line returns s made safe for a single-line field (a table cell, a
// name, a one-line message): every unsafe character, newline and tab
// included, is replaced by a visible escape.
func Line(s string) string { return sanitize(s, false) }

// Block returns s made safe for a multi-line block (a log excerpt, a
// tooltip): newlines and tabs are kept, every other unsafe character,
// carriage return included, is replaced by a visible escape.
func Block(s string) string { return sanitize(s, true) }

// Unsafe reports whether r is shown as an escape by Line: a C0 control
// (newline and tab included), DEL, a C1 control, a bidirectional control
// (embeddings, overrides, isolates and marks: U+061C, U+200E, U+200F,
// U+202A-U+202E, U+2066-U+2069), a line or paragraph separator (U+2028,
// U+2029) or one of U+FFFE and U+FFFF, which XML forbids. Line and Block
// also escape each byte of invalid UTF-8; Block shows newline and tab as
// they are.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r < 0x061c:
		return false
	}
	switch r {
	case 0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0xfffe, 0xffff:
		return true
	}
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// sanitize implements Line (keepLines false) and Block.
func sanitize(s string, keepLines bool) string {
	i := firstUnsafe(s, keepLines)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeHex(&b, `\x`, uint32(s[i]), 2)
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case !Unsafe(r):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			writeHex(&b, `\x`, uint32(r), 2)
		default:
			writeHex(&b, `\u`, uint32(r), 4)
		}
		i += size
	}
	return b.String()
}

// firstUnsafe returns the index of the first byte of s that sanitize
// rewrites, or -1.
func firstUnsafe(s string, keepLines bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if c < 0x80 {
			if c == 0x7f || !keepLines || (c != '\n' && c != '\t') {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || Unsafe(r) {
			return i
		}
		i += size
	}
	return -1
}

const hexDigits = "0123456789abcdef"

// writeHex writes prefix and v in n lowercase hex digits.
func writeHex(b *strings.Builder, prefix string, v uint32, n int) {
	b.WriteString(prefix)
	for k := n - 1; k >= 0; k-- {
		b.WriteByte(hexDigits[(v>>(4*k))&0xf])
	}
}
