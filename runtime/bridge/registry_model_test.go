package bridge

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// naiveView is the registry's contract computed from scratch: every tool
// sorted by (Name, Server, MCPName), stable within one server's slice; the
// first of each name is visible, the others are collisions.
func naiveView(byServer map[string][]Tool) ([]Tool, []Collision) {
	var servers []string
	for s := range byServer {
		servers = append(servers, s)
	}
	slices.Sort(servers)
	var all []Tool
	for _, s := range servers {
		all = append(all, byServer[s]...)
	}
	slices.SortStableFunc(all, func(a, b Tool) int { return cmp.Or(cmp.Compare(a.Name, b.Name), compareOwner(&a, &b)) })
	var visible []Tool
	var collisions []Collision
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].Name == all[i].Name {
			collisions = append(collisions, Collision{Name: all[i].Name, Winner: all[i], Loser: all[j]})
			j++
		}
		visible = append(visible, all[i])
		i = j
	}
	return visible, collisions
}

// TestRegistryMatchesModel drives a Registry with random replacements and
// removals, names colliding often, and compares every view with naiveView.
func TestRegistryMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	r := NewRegistry()
	model := map[string][]Tool{}
	for step := range 2000 {
		server := fmt.Sprintf("s%d", rng.IntN(6))
		if rng.IntN(5) == 0 {
			r.Remove(server)
			delete(model, server)
		} else {
			var tools []Tool
			for range rng.IntN(5) {
				tl := Tool{MCPName: fmt.Sprintf("t%d", rng.IntN(4)), Description: fmt.Sprint(step)}
				if rng.IntN(3) == 0 {
					tl.Name = fmt.Sprintf("shared_%d", rng.IntN(3))
				}
				tools = append(tools, tl)
			}
			got := r.Replace(server, tools)
			if len(tools) == 0 {
				delete(model, server)
			} else {
				cp := make([]Tool, len(tools))
				for i, tl := range tools {
					tl.Server = server
					if tl.Name == "" {
						tl.Name = ToolName(server, tl.MCPName)
					}
					cp[i] = tl
				}
				model[server] = cp
			}
			_, all := naiveView(model)
			var want []Collision
			for _, c := range all {
				if c.Winner.Server == server || c.Loser.Server == server {
					want = append(want, c)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d: Replace(%s) collisions\n got %v\nwant %v", step, server, got, want)
			}
		}
		visible, collisions := naiveView(model)
		if got := r.List(); !reflect.DeepEqual(got, visible) && (len(got) > 0 || len(visible) > 0) {
			t.Fatalf("step %d: List\n got %v\nwant %v", step, got, visible)
		}
		if got := r.Collisions(); !reflect.DeepEqual(got, collisions) && (len(got) > 0 || len(collisions) > 0) {
			t.Fatalf("step %d: Collisions\n got %v\nwant %v", step, got, collisions)
		}
		for _, v := range visible {
			if got, ok := r.Lookup(v.Name); !ok || !reflect.DeepEqual(got, v) {
				t.Fatalf("step %d: Lookup(%s) = %v, %v, want %v", step, v.Name, got, ok, v)
			}
		}
	}
}
