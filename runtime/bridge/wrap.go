package bridge

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Boundary markers of wrapped tool output.
const (
	wrapOpenTag  = "<mcp_tool_output"
	wrapCloseTag = "</mcp_tool_output>"
)

// markerPattern matches the start of an opening or closing boundary marker,
// ASCII-case-insensitively and tolerating whitespace after "<" and around
// "/", which a lenient reader of the markup might still honour.
var markerPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)<(\s*/?\s*mcp_tool_output)`)
})

// Wrap puts body between untrusted-output boundary markers attributing it to
// server and tool:
//
//	<mcp_tool_output server="S" tool="T" trust="untrusted">
//	body
//	</mcp_tool_output>
//
// S and T keep only [a-zA-Z0-9._-]; every other character (per rune) becomes
// "_", so the names cannot leave the attribute. Inside body, the "<" of any
// "<mcp_tool_output" or "</mcp_tool_output" (any letter case, whitespace
// allowed after "<" and around "/") is replaced by "&lt;", so a response
// cannot close the boundary early or open a fake one; see NeutralizeMarkers.
func Wrap(server, tool, body string) string {
	body = NeutralizeMarkers(body)
	var b strings.Builder
	b.Grow(len(body) + len(server) + len(tool) + 80)
	b.WriteString(wrapOpenTag)
	b.WriteString(` server="`)
	b.WriteString(sanitizeAttr(server))
	b.WriteString(`" tool="`)
	b.WriteString(sanitizeAttr(tool))
	b.WriteString(`" trust="untrusted">` + "\n")
	b.WriteString(body)
	b.WriteString("\n" + wrapCloseTag)
	return b.String()
}

// NeutralizeMarkers returns s with every boundary-marker start rewritten from
// "<" to "&lt;" ("</mcp_tool_output>" becomes "&lt;/mcp_tool_output>"), the
// rest of the text, letter case included, unchanged.
func NeutralizeMarkers(s string) string {
	// Cheap pre-check: no marker without the tag word.
	if !containsFold(s, "mcp_tool_output") {
		return s
	}
	return markerPattern().ReplaceAllString(s, "&lt;$1")
}

// containsFold reports whether s contains the lowercase ASCII word sub,
// ignoring ASCII letter case. When sub holds a byte that has no other case
// (the "_" of "mcp_tool_output"), only the places where that byte occurs
// are compared, found with strings.IndexByte.
func containsFold(s, sub string) bool {
	n := len(sub)
	anchor := strings.IndexFunc(sub, func(r rune) bool { return (r < 'a' || r > 'z') && r < utf8.RuneSelf })
	if anchor < 0 {
		return containsFoldEach(s, sub)
	}
	for from := anchor; from < len(s); {
		at := strings.IndexByte(s[from:], sub[anchor])
		if at < 0 {
			return false
		}
		start := from + at - anchor
		if start+n > len(s) {
			return false
		}
		if asciiEqualFold(s[start:start+n], sub) {
			return true
		}
		from += at + 1
	}
	return false
}

// containsFoldEach is containsFold comparing at every offset.
func containsFoldEach(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if asciiEqualFold(s[i:i+n], sub) {
			return true
		}
	}
	return false
}

func asciiEqualFold(s, lower string) bool {
	for i := 0; i < len(lower); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// sanitizeAttr keeps [a-zA-Z0-9._-] and turns every other rune into "_".
// A name that needs no change (the usual case) is returned as it is.
func sanitizeAttr(s string) string {
	for i := 0; i < len(s); i++ {
		if !attrByte(s[i]) {
			return sanitizeAttrSlow(s)
		}
	}
	return s
}

// attrByte reports whether sanitizeAttr keeps the ASCII byte c.
func attrByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// sanitizeAttrSlow is sanitizeAttr for a name with a rune to replace.
func sanitizeAttrSlow(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
