package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxToolNameLen is the longest exposed tool name ToolName returns, the limit
// LLM provider APIs put on function names.
const MaxToolNameLen = 64

// ToolNamePrefix starts every exposed MCP tool name.
const ToolNamePrefix = "mcp_"

// capKeep is how many characters of an over-long name survive the cap; the
// rest of the 64 is "_" and an 8-character hash.
const capKeep = MaxToolNameLen - 1 - 8

// ToolName returns the name under which the agent sees tool of server:
// "mcp_<server>_<tool>".
//
// Each part is lowercased, every run of characters outside [a-z0-9_] becomes
// a single "_", repeated "_" collapse and leading/trailing "_" are trimmed; a
// part that ends up empty becomes "server" or "tool". A sanitized tool name
// starting with "<sanitized server>_" loses that prefix once, provided
// something remains ("github"/"github_search" -> "mcp_github_search").
//
// A result longer than MaxToolNameLen is cut to its first 55 characters,
// then "_" and the first 8 lowercase hex digits of the SHA-256 of the full
// uncapped name, so the capped name is stable and still distinguishes long
// names sharing a prefix.
func ToolName(server, tool string) string {
	s := sanitizePart(server, "server")
	t := sanitizePart(tool, "tool")
	if rest, ok := strings.CutPrefix(t, s+"_"); ok && rest != "" {
		t = rest
	}
	name := ToolNamePrefix + s + "_" + t
	if len(name) <= MaxToolNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:capKeep] + "_" + hex.EncodeToString(sum[:4])
}

// sanitizePart applies the per-part naming rules to p, returning fallback
// when nothing is left. The result is ASCII, so byte lengths are character
// counts.
func sanitizePart(p, fallback string) string {
	var b strings.Builder
	b.Grow(len(p))
	for _, r := range strings.ToLower(p) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			// "_" itself and every other character: at most one "_" in a row,
			// none at the start.
			if n := b.Len(); n > 0 && b.String()[n-1] != '_' {
				b.WriteByte('_')
			}
		}
	}
	out := strings.TrimRight(b.String(), "_")
	if out == "" {
		return fallback
	}
	return out
}
