package bridge

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// exposedName is the documented shape of an exposed tool name.
var exposedName = regexp.MustCompile(`^mcp_[a-z0-9_]+$`)

// FuzzToolName names arbitrary (server, tool) pairs: the name always starts
// with "mcp_", holds only [a-z0-9_], is at most 64 characters, is
// deterministic, and is stable under re-sanitizing its parts; a name under
// the cap has no "__" and does not end in "_"; a capped name is the first 55
// characters of the uncapped one, "_" and 8 hex digits of its hash.
func FuzzToolName(f *testing.F) {
	f.Add("github", "search")
	f.Add("github", "github_search")
	f.Add("GitHub", "GITHUB__Search!!")
	f.Add("", "")
	f.Add("___", "---")
	f.Add("srv", strings.Repeat("a", 100))
	f.Add(strings.Repeat("é", 40), strings.Repeat("x", 30))
	f.Add("\u212aelvin", "\u017fearch")
	f.Add("a", "a_")
	f.Add("s", "s_s_s")
	f.Add("\xff\xfe", "\x00tool")
	f.Fuzz(func(t *testing.T, server, tool string) {
		name := ToolName(server, tool)
		if !exposedName.MatchString(name) || len(name) > MaxToolNameLen {
			t.Fatalf("ToolName(%q, %q) = %q: outside [a-z0-9_] or the %d-char cap", server, tool, name, MaxToolNameLen)
		}
		if again := ToolName(server, tool); again != name {
			t.Fatalf("not deterministic: %q then %q", name, again)
		}
		s, tl := sanitizePart(server, "server"), sanitizePart(tool, "tool")
		uncapped := ToolNamePrefix + s + "_" + tl
		if rest, ok := strings.CutPrefix(tl, s+"_"); ok && rest != "" {
			uncapped = ToolNamePrefix + s + "_" + rest
		}
		if len(uncapped) <= MaxToolNameLen {
			if name != uncapped {
				t.Fatalf("ToolName(%q, %q) = %q, want %q", server, tool, name, uncapped)
			}
			if strings.Contains(name, "__") || strings.HasSuffix(name, "_") {
				t.Fatalf("uncapped name %q has a doubled or trailing _", name)
			}
		} else {
			if len(name) != MaxToolNameLen || name[:capKeep] != uncapped[:capKeep] || name[capKeep] != '_' {
				t.Fatalf("capped name %q does not keep the first %d characters of %q", name, capKeep, uncapped)
			}
		}
		// Sanitizing is idempotent: the parts are already clean.
		if sanitizePart(s, "server") != s || sanitizePart(tl, "tool") != tl {
			t.Fatalf("sanitizePart not idempotent on %q / %q", s, tl)
		}
	})
}

// FuzzRegistry registers arbitrary tools of three servers (names split from
// the input at "|"; each server's tools given in both orders): exactly one
// tool is exposed per name, sorted; every registered tool is either exposed
// or reported as a collision loser under the same name with a winner that
// sorts first by (server, tool); collisions count exactly the hidden tools;
// and the outcome does not depend on the order of registration.
func FuzzRegistry(f *testing.F) {
	f.Add("search|Search|SEARCH", "a_search|search", "search")
	f.Add("x", "y", "z")
	f.Add("", "|", "||")
	f.Add("a|a|a", "a", "a")
	f.Add(strings.Repeat("l", 70)+"|"+strings.Repeat("l", 71), strings.Repeat("l", 70), "t")
	f.Add("tool-1|tool_1|tool.1|TOOL 1", "srv_b_tool|tool", "b_tool")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		servers := []string{"srv", "srv_b", "b"}
		tools := [][]string{strings.Split(a, "|"), strings.Split(b, "|"), strings.Split(c, "|")}
		build := func(i int, reverse bool) []Tool {
			var out []Tool
			for _, n := range tools[i] {
				out = append(out, Tool{MCPName: n})
			}
			if reverse {
				slices.Reverse(out)
			}
			return out
		}
		r1, r2 := NewRegistry(), NewRegistry()
		for i := range servers {
			r1.Replace(servers[i], build(i, false))
		}
		for i := len(servers) - 1; i >= 0; i-- {
			r2.Replace(servers[i], build(i, true))
		}
		list, cols := r1.List(), r1.Collisions()
		if !slices.EqualFunc(list, r2.List(), sameTool) || !slices.EqualFunc(cols, r2.Collisions(), func(x, y Collision) bool {
			return x.Name == y.Name && sameTool(x.Winner, y.Winner) && sameTool(x.Loser, y.Loser)
		}) {
			t.Fatalf("registration order changed the outcome")
		}
		total := 0
		for i := range servers {
			total += len(tools[i])
		}
		if len(list)+len(cols) != total {
			t.Fatalf("%d exposed + %d hidden != %d registered", len(list), len(cols), total)
		}
		for i := 1; i < len(list); i++ {
			if list[i-1].Name >= list[i].Name {
				t.Fatalf("exposed names not unique and sorted: %q, %q", list[i-1].Name, list[i].Name)
			}
		}
		for _, tl := range list {
			if got, ok := r1.Lookup(tl.Name); !ok || !sameTool(got, tl) {
				t.Fatalf("Lookup(%q) = %+v", tl.Name, got)
			}
			if tl.Name != ToolName(tl.Server, tl.MCPName) || len(tl.Name) > MaxToolNameLen {
				t.Fatalf("tool %+v", tl)
			}
		}
		for _, c := range cols {
			w, ok := r1.Lookup(c.Name)
			if !ok || !sameTool(w, c.Winner) || c.Loser.Name != c.Name || compareOwner(&c.Winner, &c.Loser) > 0 {
				t.Fatalf("collision %+v: exposed %+v", c, w)
			}
		}
	})
}

func sameTool(a, b Tool) bool {
	return a.Name == b.Name && a.Server == b.Server && a.MCPName == b.MCPName
}
