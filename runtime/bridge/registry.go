package bridge

import (
	"cmp"
	"path"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/runtime/config"
)

// Tool is one MCP tool as the agent sees it.
type Tool struct {
	// Name is the exposed name, ToolName(Server, MCPName).
	Name string
	// Server is the configured name of the server providing the tool.
	Server string
	// MCPName is the tool's raw name on its server, sent in tools/call.
	MCPName string
	// Description is the tool's MCP description.
	Description string
	// InputSchema is the converted input schema (see ConvertSchema). The
	// runtime (runtime/host) lists schemas as compact JSON, so in its
	// tools this is a json.RawMessage.
	InputSchema any
	// RequiresApproval tells the agent loop to ask the user before calling.
	RequiresApproval bool
	// Source is where the server's configuration came from.
	Source config.Source
	// Deferred marks a tool built from the tool cache whose server is not
	// connected yet; calling it must first wait for the connection.
	Deferred bool
}

// Filter selects a server's tools by raw MCP tool name. Patterns are exact
// names or path.Match globs ("read_*"); a malformed glob matches only itself
// literally.
type Filter struct {
	// Include lists the tools to expose; empty means all.
	Include []string
	// Exclude lists tools to hide; it wins over Include.
	Exclude []string
}

// Allows reports whether the filter lets the raw tool name through.
func (f Filter) Allows(name string) bool {
	if len(f.Include) > 0 && !matchAny(f.Include, name) {
		return false
	}
	return !matchAny(f.Exclude, name)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if p == name {
			return true
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// Build converts the tools a server listed into agent tools: nil entries and
// tools the filter rejects are dropped, names go through ToolName and schemas
// through ConvertSchema. The result is sorted by Name, then MCPName. Build
// does not resolve collisions; Registry does.
func Build(server string, tools []*mcp.Tool, f Filter, requiresApproval bool, src config.Source) []Tool {
	out := make([]Tool, 0, len(tools))
	for _, t := range tools {
		if t == nil || !f.Allows(t.Name) {
			continue
		}
		out = append(out, Tool{
			Name:             ToolName(server, t.Name),
			Server:           server,
			MCPName:          t.Name,
			Description:      t.Description,
			InputSchema:      ConvertSchema(t.InputSchema),
			RequiresApproval: requiresApproval,
			Source:           src,
		})
	}
	slices.SortStableFunc(out, func(a, b Tool) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.MCPName, b.MCPName))
	})
	return out
}

// Collision reports two tools mapping to one exposed name. Winner is the one
// exposed; Loser is hidden until the winner goes away.
type Collision struct {
	Name   string
	Winner Tool
	Loser  Tool
}

// Registry holds the tools of every server and decides which tool each
// exposed name refers to.
//
// When several tools map to one exposed name — tools of different servers,
// or different raw names of one server — the tool whose (Server, MCPName)
// sorts first wins, whatever the order of insertion; each hidden tool is
// reported as a Collision. Hidden tools stay registered, so removing or
// replacing the winner's server makes the next one visible again.
//
// A Registry is safe for concurrent use. The zero value is an empty registry.
//
// Replace and Remove touch only the exposed names of the server they change
// (O(tools of that server)), so registering N servers one by one costs
// O(total tools), not O(N x total tools). The sorted views (List,
// Collisions) are rebuilt on first use after a change.
type Registry struct {
	mu       sync.RWMutex
	byServer map[string][]Tool
	// byName holds, per exposed name, every tool mapping to it, sorted by
	// (Server, MCPName): the first one is exposed, the rest are hidden.
	// Each points into its server's slice of byServer, which Replace
	// never changes once stored: a tool is held once, not twice.
	byName map[string][]*Tool

	// Derived from byName on first use after a change; guarded by viewMu
	// (and read under mu).
	viewMu     sync.Mutex
	dirty      bool
	visible    []Tool      // one tool per exposed name, sorted by Name
	collisions []Collision // sorted by Name, then Loser (Server, MCPName)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Replace atomically replaces every tool of server with tools (copied; each
// copy's Server is set to server, and an empty Name is filled in with
// ToolName(server, MCPName)). An empty tools is the same as Remove. It
// returns the collisions, after the replacement, in which one of server's
// tools is the winner or the loser, sorted by Name.
func (r *Registry) Replace(server string, tools []Tool) []Collision {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(server)
	if len(tools) == 0 {
		return nil
	}
	cp := make([]Tool, len(tools))
	for i, t := range tools {
		t.Server = server
		if t.Name == "" {
			t.Name = ToolName(server, t.MCPName)
		}
		cp[i] = t
	}
	if r.byServer == nil {
		r.byServer = make(map[string][]Tool)
		r.byName = make(map[string][]*Tool)
	}
	r.byServer[server] = cp
	// Append in the caller's order, then sort each touched name stably:
	// equal (Server, MCPName) pairs can only come from this server and keep
	// the caller's order.
	var names []string
	touched := make(map[string]bool, len(cp))
	for i := range cp {
		t := &cp[i]
		if !touched[t.Name] {
			touched[t.Name] = true
			names = append(names, t.Name)
		}
		r.byName[t.Name] = append(r.byName[t.Name], t)
	}
	var out []Collision
	for _, name := range names {
		cands := r.byName[name]
		slices.SortStableFunc(cands, compareOwner)
		for _, loser := range cands[1:] {
			if cands[0].Server == server || loser.Server == server {
				out = append(out, Collision{Name: name, Winner: *cands[0], Loser: *loser})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Collision) int { return cmp.Compare(a.Name, b.Name) })
	r.markDirty()
	return out
}

// Remove drops every tool of server and returns how many there were.
func (r *Registry) Remove(server string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeLocked(server)
}

// removeLocked drops server's tools from byServer and byName; mu is held
// for writing.
func (r *Registry) removeLocked(server string) int {
	ts, ok := r.byServer[server]
	if !ok {
		return 0
	}
	delete(r.byServer, server)
	for _, t := range ts {
		cands, ok := r.byName[t.Name]
		if !ok {
			continue // a name listed twice by this server, already done
		}
		kept := slices.DeleteFunc(cands, func(c *Tool) bool { return c.Server == server })
		if len(kept) == 0 {
			delete(r.byName, t.Name)
		} else {
			r.byName[t.Name] = kept
		}
	}
	r.markDirty()
	return len(ts)
}

func (r *Registry) markDirty() {
	r.viewMu.Lock()
	r.dirty = true
	r.viewMu.Unlock()
}

// view returns the sorted views, rebuilding them if a change made them
// stale. mu is held (for reading at least).
func (r *Registry) view() (visible []Tool, collisions []Collision) {
	r.viewMu.Lock()
	defer r.viewMu.Unlock()
	if r.dirty {
		r.visible = make([]Tool, 0, len(r.byName))
		r.collisions = nil
		for _, cands := range r.byName {
			r.visible = append(r.visible, *cands[0])
		}
		slices.SortFunc(r.visible, func(a, b Tool) int {
			return cmp.Compare(a.Name, b.Name)
		})
		for _, v := range r.visible {
			cands := r.byName[v.Name]
			for _, loser := range cands[1:] {
				r.collisions = append(r.collisions, Collision{Name: v.Name, Winner: *cands[0], Loser: *loser})
			}
		}
		r.dirty = false
	}
	return r.visible, r.collisions
}

// List returns the exposed tools, exactly one per exposed name, sorted by
// Name so the bytes sent to the model are stable. The slice is a copy.
func (r *Registry) List() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	visible, _ := r.view()
	return slices.Clone(visible)
}

// Lookup returns the tool exposed under name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	cands, ok := r.byName[name]
	if !ok {
		return Tool{}, false
	}
	return *cands[0], true
}

// Servers returns the sorted names of the servers holding at least one tool.
func (r *Registry) Servers() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.byServer))
	for s := range r.byServer {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// ServerTools returns a copy of the tools registered for server, hidden ones
// included, in the order given to Replace.
func (r *Registry) ServerTools(server string) []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.byServer[server])
}

// Collisions returns every current collision, sorted by Name and then by the
// loser's (Server, MCPName).
func (r *Registry) Collisions() []Collision {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, collisions := r.view()
	return slices.Clone(collisions)
}

// compareOwner orders tools by (Server, MCPName), the collision
// precedence.
func compareOwner(a, b *Tool) int {
	return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.MCPName, b.MCPName))
}
