package bridge

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/runtime/config"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		f    Filter
		in   string
		want bool
	}{
		{"empty allows all", Filter{}, "anything", true},
		{"include exact", Filter{Include: []string{"read"}}, "read", true},
		{"include exact miss", Filter{Include: []string{"read"}}, "write", false},
		{"include glob", Filter{Include: []string{"read_*"}}, "read_file", true},
		{"include glob miss", Filter{Include: []string{"read_*"}}, "write_file", false},
		{"exclude exact", Filter{Exclude: []string{"delete"}}, "delete", false},
		{"exclude glob", Filter{Exclude: []string{"*_delete"}}, "repo_delete", false},
		{"exclude wins over include", Filter{Include: []string{"*"}, Exclude: []string{"rm"}}, "rm", false},
		{"exclude other passes", Filter{Exclude: []string{"rm"}}, "ls", true},
		{"bad glob matches literally", Filter{Include: []string{"a[b"}}, "a[b", true},
		{"bad glob no match", Filter{Include: []string{"a[b"}}, "ab", false},
		{"glob is case sensitive", Filter{Include: []string{"Read*"}}, "read", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Allows(tc.in); got != tc.want {
				t.Errorf("Allows(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	src := config.Source{File: "/p/.mcp.json", Level: "project", Provider: "mcp.json"}
	tools := []*mcp.Tool{
		{Name: "zeta", Description: "z", InputSchema: map[string]any{"type": "object"}},
		nil,
		{Name: "gh_alpha", Description: "a", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{}}}},
		{Name: "secret_delete"},
		{Name: "Beta"},
	}
	got := Build("gh", tools, Filter{Exclude: []string{"*_delete"}}, true, src)
	var names []string
	for _, g := range got {
		names = append(names, g.Name+"="+g.MCPName)
		if g.Server != "gh" || !g.RequiresApproval || g.Source != src || g.Deferred {
			t.Errorf("bad tool fields: %+v", g)
		}
	}
	want := []string{"mcp_gh_alpha=gh_alpha", "mcp_gh_beta=Beta", "mcp_gh_zeta=zeta"}
	if !slices.Equal(names, want) {
		t.Fatalf("names = %v, want %v", names, want)
	}
	if !reflect.DeepEqual(got[2].InputSchema, map[string]any{"type": "object", "properties": map[string]any{}}) {
		t.Errorf("schema not converted: %#v", got[2].InputSchema)
	}
	if _, ok := tools[0].InputSchema.(map[string]any)["properties"]; ok {
		t.Errorf("Build mutated the MCP tool's schema")
	}
	if got[2].Description != "z" {
		t.Errorf("description = %q", got[2].Description)
	}
	if len(Build("gh", nil, Filter{}, false, src)) != 0 {
		t.Errorf("nil tools should build nothing")
	}
}

func mk(server, raw string) Tool {
	return Tool{Name: ToolName(server, raw), Server: server, MCPName: raw, Description: server + "/" + raw}
}

func names(ts []Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name+"@"+t.Server+"/"+t.MCPName)
	}
	return out
}

func TestRegistryCollisionDeterministic(t *testing.T) {
	// "my-server" and "my.server" both sanitize to my_server; "Read" and
	// "read" of one server collide too.
	a := []Tool{mk("my-server", "read"), mk("my-server", "write")}
	b := []Tool{mk("my.server", "read"), mk("my.server", "list")}
	c := []Tool{mk("c", "Read"), mk("c", "read")}

	type step struct {
		server string
		tools  []Tool
	}
	orders := [][]step{
		{{"my-server", a}, {"my.server", b}, {"c", c}},
		{{"c", c}, {"my.server", b}, {"my-server", a}},
		{{"my.server", b}, {"c", c}, {"my-server", a}},
	}
	var first []Tool
	var firstColl []Collision
	for i, order := range orders {
		r := NewRegistry()
		for _, s := range order {
			r.Replace(s.server, s.tools)
		}
		list := r.List()
		if i == 0 {
			first, firstColl = list, r.Collisions()
			continue
		}
		if !reflect.DeepEqual(list, first) {
			t.Errorf("order %d: List differs:\n%v\nvs\n%v", i, names(list), names(first))
		}
		if !reflect.DeepEqual(r.Collisions(), firstColl) {
			t.Errorf("order %d: collisions differ", i)
		}
	}
	wantList := []string{
		"mcp_c_read@c/Read",
		"mcp_my_server_list@my.server/list",
		"mcp_my_server_read@my-server/read",
		"mcp_my_server_write@my-server/write",
	}
	if got := names(first); !slices.Equal(got, wantList) {
		t.Errorf("List = %v, want %v", got, wantList)
	}
	if len(firstColl) != 2 {
		t.Fatalf("collisions = %+v, want 2", firstColl)
	}
	if c0 := firstColl[0]; c0.Name != "mcp_c_read" || c0.Winner.MCPName != "Read" || c0.Loser.MCPName != "read" {
		t.Errorf("same-server collision = %+v", c0)
	}
	if c1 := firstColl[1]; c1.Name != "mcp_my_server_read" || c1.Winner.Server != "my-server" || c1.Loser.Server != "my.server" {
		t.Errorf("cross-server collision = %+v", c1)
	}
}

func TestRegistryReplaceReturnsCollisions(t *testing.T) {
	r := NewRegistry()
	if got := r.Replace("b", []Tool{mk("b", "x")}); got != nil {
		t.Fatalf("unexpected collisions %+v", got)
	}
	// "a" sorts first, so a's tool wins even though it arrives later.
	got := r.Replace("a", []Tool{mk("a", "b_x"), mk("a", "other")})
	// ToolName("a","b_x") = mcp_a_b_x, ToolName("b","x") = mcp_b_x: no clash.
	if got != nil {
		t.Fatalf("unexpected collisions %+v", got)
	}
	got = r.Replace("b-", []Tool{mk("b-", "x")})
	if len(got) != 1 || got[0].Winner.Server != "b" || got[0].Loser.Server != "b-" || got[0].Name != "mcp_b_x" {
		t.Fatalf("collisions = %+v", got)
	}
	// Unrelated server sees none.
	if got := r.Replace("a", []Tool{mk("a", "other")}); got != nil {
		t.Errorf("collisions for a = %+v", got)
	}
	// The winner's server is told too.
	if got := r.Replace("b", []Tool{mk("b", "x"), mk("b", "y")}); len(got) != 1 || got[0].Winner.Server != "b" {
		t.Errorf("collisions for b = %+v", got)
	}
	if tl, ok := r.Lookup("mcp_b_x"); !ok || tl.Server != "b" {
		t.Errorf("Lookup = %+v %v", tl, ok)
	}
}

func TestRegistryLoserReappears(t *testing.T) {
	r := NewRegistry()
	r.Replace("z.srv", []Tool{mk("z.srv", "run")})
	r.Replace("z-srv", []Tool{mk("z-srv", "run")})
	tl, ok := r.Lookup("mcp_z_srv_run")
	if !ok || tl.Server != "z-srv" {
		t.Fatalf("winner = %+v, want z-srv", tl)
	}
	if n := r.Remove("z-srv"); n != 1 {
		t.Errorf("Remove = %d, want 1", n)
	}
	tl, ok = r.Lookup("mcp_z_srv_run")
	if !ok || tl.Server != "z.srv" {
		t.Fatalf("after removing the winner: %+v %v, want z.srv", tl, ok)
	}
	if len(r.Collisions()) != 0 {
		t.Errorf("collisions remain: %+v", r.Collisions())
	}
	// Replacing the winner's tools with ones that no longer clash also
	// reveals the loser.
	r.Replace("z-srv", []Tool{mk("z-srv", "run")})
	r.Replace("z-srv", []Tool{mk("z-srv", "walk")})
	if tl, _ := r.Lookup("mcp_z_srv_run"); tl.Server != "z.srv" {
		t.Errorf("after replace: %+v", tl)
	}
	if n := r.Remove("absent"); n != 0 {
		t.Errorf("Remove(absent) = %d", n)
	}
}

func TestRegistryReplaceAtomic(t *testing.T) {
	r := NewRegistry()
	r.Replace("s", []Tool{mk("s", "a"), mk("s", "b"), {MCPName: "c", Server: "wrong"}})
	if got := r.ServerTools("s")[2]; got.Name != "mcp_s_c" || got.Server != "s" {
		t.Errorf("Name/Server not filled in: %+v", got)
	}
	in := []Tool{mk("s", "b"), mk("s", "d")}
	in[0].Deferred = true
	r.Replace("s", in)
	in[0].Description = "mutated after Replace"
	got := names(r.List())
	want := []string{"mcp_s_b@s/b", "mcp_s_d@s/d"}
	if !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if tl, _ := r.Lookup("mcp_s_b"); !tl.Deferred || tl.Description == "mutated after Replace" {
		t.Errorf("stored tool = %+v", tl)
	}
	if _, ok := r.Lookup("mcp_s_a"); ok {
		t.Errorf("old tool still visible")
	}
	if got := r.Servers(); !slices.Equal(got, []string{"s"}) {
		t.Errorf("Servers = %v", got)
	}
	r.Replace("s", nil)
	if len(r.List()) != 0 || len(r.Servers()) != 0 {
		t.Errorf("empty Replace should remove: %v %v", r.List(), r.Servers())
	}
}

func TestRegistryListSortedAndUnique(t *testing.T) {
	var r Registry // zero value is usable
	for i := 9; i >= 0; i-- {
		s := fmt.Sprintf("srv%d", i%3)
		var ts []Tool
		for j := 0; j < 5; j++ {
			ts = append(ts, mk(s, fmt.Sprintf("t%d", (i*7+j)%6)))
		}
		r.Replace(s, ts)
	}
	list := r.List()
	if !slices.IsSortedFunc(list, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("not sorted: %v", names(list))
	}
	seen := map[string]bool{}
	for _, tl := range list {
		if seen[tl.Name] {
			t.Errorf("duplicate %q", tl.Name)
		}
		seen[tl.Name] = true
	}
	want := []string{"srv0", "srv1", "srv2"}
	if got := r.Servers(); !slices.Equal(got, want) {
		t.Errorf("Servers = %v", got)
	}
	// List returns a copy.
	list[0].Name = "changed"
	if r.List()[0].Name == "changed" {
		t.Errorf("List aliases internal state")
	}
}
