package host

import (
	"context"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/toolcache"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The cache hints of list results (MCP 2026-07-28, SEP-2549; issue 26).
//
// A server of the stateless revision sends ttlMs and cacheScope with every
// list result. The runtime honours the hints of tools/list, on the
// injected clock and within the tool cache's config-hash rule:
//
//   - The tool cache records the list with its hint (toolcache.PutHint): a
//     record past its ttlMs gives no deferred tools at the next start
//     (cache.miss reason ttl); a changed configuration misses whatever the
//     hint says (config-changed is checked first).
//   - A list scoped private is never written to the tool cache, which is
//     shared by every session and keyed on the unresolved configuration,
//     blind to credentials (cache.invalidated reason "private scope"). The
//     live connection keeps using it: the connection is the authorization
//     context the list was fetched in.
//   - A live connection's list whose ttlMs has passed is stale. It is
//     listed again at its next use (a session reads its tools, or calls
//     one of the server's tools): cache.miss reason ttl, then the refresh
//     of a list_changed (tools.registered, cache.written). The use goes on
//     with the list it has (the refreshed list replaces it in every session
//     when it arrives), and one refresh runs at a time. The revision says
//     "re-fetch on next access" and asks clients not to poll on the TTL, so
//     no timer is armed for it.
//   - ttlMs 0, or none, sets no bound of the server's: every SDK sends 0 by
//     default, and the revision leaves such a list to the client's own
//     rules, which stay as they were (the config hash and the cache's TTL;
//     list_changed and reconnects for a live list). Legacy-era connections
//     ignore hints: the handshake era has none.
//
// The resources and prompts a server's config follows ("resources",
// "prompts": handlers_lists.go) keep the same live rule: a list whose
// positive ttlMs has passed on the clock is listed again at its next use,
// a read by the host (Runtime.Resources, Runtime.Prompts): cache.miss
// reason ttl, then resources.listed or prompts.listed; never on a timer.
// Their cacheScope changes nothing: the runtime keeps them only with the
// live connection, the authorization context that fetched them, and
// never on disk. The runtime reads no resource and gets no prompt
// (resources/read, prompts/get), so those results carry hints it has no
// use for; their ttlMs is zeroed like every other (below).
//
// go-sdk's client keeps its own cache of list results (methodCache): for
// a result with a positive ttlMs it answers the next ListTools,
// ListPrompts, ListResources, ListResourceTemplates or ReadResource itself,
// without a request, until time.Since, on the real clock, passes ttlMs. That
// would answer the runtime's refresh from memory when the injected clock
// said the list was stale, and a modern connection's health probe
// (tools/list) without asking a server that may be wedged. cacheHints, a
// sending middleware of every connection's client, reads each result's
// hint and then sets its ttlMs to 0, which go-sdk's cache never serves: every
// list the runtime asks for is a request to the server.

// reasonPrivateScope is the reason of cache.invalidated for a list scoped
// private, which is never stored.
const reasonPrivateScope = "private scope"

// hintSink collects the hints of the pages of one tools/list,
// resources/list or prompts/list, which cacheHints finds in the request's
// context.
type hintSink struct {
	pages int
	hint  toolcache.Hint
}

type hintSinkKey struct{}

// withHintSink returns ctx carrying h for the list requests made with it.
func withHintSink(ctx context.Context, h *hintSink) context.Context {
	return context.WithValue(ctx, hintSinkKey{}, h)
}

// add folds in the hint of one page: the list is fresh only as long as its
// least fresh page (a page without a positive ttlMs removes the bound), and
// private when any page is (a server MUST give every page the same scope;
// the runtime does not trust it to).
func (h *hintSink) add(c mcp.Cacheable) {
	ttl := time.Duration(max(c.TTLMs, 0)) * time.Millisecond
	switch {
	case h.pages == 0:
		h.hint = toolcache.Hint{TTL: ttl, Scope: c.CacheScope}
	default:
		if ttl <= 0 || h.hint.TTL <= 0 {
			h.hint.TTL = 0
		} else {
			h.hint.TTL = min(h.hint.TTL, ttl)
		}
		if !(toolcache.Hint{Scope: c.CacheScope}).Shareable() || h.hint.Scope == "" {
			h.hint.Scope = c.CacheScope
		}
	}
	h.pages++
}

// cacheHints is the sending middleware of every connection's client: it
// hands the hint of each tools/list, resources/list and prompts/list page
// to the sink of its context, and
// zeroes the ttlMs of every cacheable result so that go-sdk's own
// real-clock cache never answers a request of the runtime (see above).
func cacheHints(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		var c *mcp.Cacheable
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			if r != nil {
				c = &r.Cacheable
				if h, ok := ctx.Value(hintSinkKey{}).(*hintSink); ok {
					h.add(*c)
				}
			}
		case *mcp.ListPromptsResult:
			if r != nil {
				c = &r.Cacheable
				if h, ok := ctx.Value(hintSinkKey{}).(*hintSink); ok {
					h.add(*c)
				}
			}
		case *mcp.ListResourcesResult:
			if r != nil {
				c = &r.Cacheable
				if h, ok := ctx.Value(hintSinkKey{}).(*hintSink); ok {
					h.add(*c)
				}
			}
		case *mcp.ListResourceTemplatesResult:
			if r != nil {
				c = &r.Cacheable
			}
		case *mcp.ReadResourceResult:
			if r != nil {
				c = &r.Cacheable
			}
		}
		if c != nil {
			c.TTLMs = 0
			// go-sdk keeps a cacheable result for the life of the
			// connection: hold its _meta small (compact.go).
			res.SetMeta(compactMeta(res.GetMeta()))
		}
		return res, err
	}
}

// listToolsHinted is listTools that also returns the list's cache hint;
// the hint of a legacy-era connection, or of a protocol not known yet
// (during connect), is applied by the caller (hintFor).
func (s *server) listToolsHinted(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, toolcache.Hint, error) {
	var sink hintSink
	tools, err := s.listTools(withHintSink(ctx, &sink), cs)
	return tools, sink.hint, err
}

// hintFor returns the hint of a list received on a connection of protocol
// version protocol: none in the legacy era, which has no cache hints.
func hintFor(protocol string, h toolcache.Hint) toolcache.Hint {
	if !IsModern(protocol) {
		return toolcache.Hint{}
	}
	return h
}

// freshness is how fresh a list of a connection is: the tools it
// published, or the resources or prompts listed on it; s.mu guards it.
type freshness struct {
	conn *connection   // the connection whose list it is
	at   time.Time     // when the list arrived, on the clock
	ttl  time.Duration // its ttlMs; 0: no bound
	// refresh numbers the refresh a stale list started, while it runs
	// (0: none); refreshes counts them.
	refresh, refreshes int
}

// listedLocked notes that a list of c arrived now with hint h (of c's
// era), when c is the server's connection: the list is fresh again, and
// a refresh that was running for its ttl is over. s.mu must be held.
func (s *server) listedLocked(c *connection, h toolcache.Hint) {
	if s.conn != c || s.closed {
		return
	}
	s.fresh = freshness{conn: c, at: s.rt.clock.Now(), ttl: h.TTL, refreshes: s.fresh.refreshes}
}

// useTools is a use of s's tools: a session read its tools, or called one
// of s's tools. When the live connection's list has outlived its ttlMs on
// the clock, the list is stale: cache.miss reason ttl, and one refresh
// starts; the use goes on with the list it has.
func (s *server) useTools() {
	s.refreshIfStale(&s.fresh, s.refreshTools)
}

// useList is a use of s's resources or prompts (k): the host read them
// (Runtime.Resources, Runtime.Prompts). A list that outlived its ttlMs is
// listed again like the tools (useTools): cache.miss reason ttl, one
// refresh (resources.listed or prompts.listed), and the use goes on with
// the list it has.
func (s *server) useList(k listKind) {
	s.refreshIfStale(&s.lists.fresh[k], func(c *connection) { s.refreshList(c, k) })
}

// refreshIfStale starts one refresh of a list whose freshness is f (a
// field of s, guarded by s.mu) when the list is the live connection's and
// has outlived its positive ttlMs on the clock, and no refresh of it is
// running: cache.miss reason ttl, then refresh on its own goroutine. A
// refresh that fails leaves the list stale, and the next use tries again.
func (s *server) refreshIfStale(f *freshness, refresh func(*connection)) {
	s.mu.Lock()
	c := s.conn
	if s.closed || c == nil || f.conn != c || f.ttl <= 0 || f.refresh != 0 || s.rt.clock.Since(f.at) < f.ttl {
		s.mu.Unlock()
		return
	}
	f.refreshes++
	id := f.refreshes
	f.refresh = id
	s.emit(event.CacheMiss, event.String("reason", toolcache.ReasonTTL))
	s.mu.Unlock()
	s.rt.goRun(func() {
		defer func() {
			s.mu.Lock()
			if f.refresh == id {
				f.refresh = 0
			}
			s.mu.Unlock()
		}()
		refresh(c)
	})
}
