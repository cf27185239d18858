package host

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress notifications, and the resources and prompts listings of servers
// that enable them ("progress", "resources", "prompts").

// progressToken registers a progress token for one call of ci on s and
// returns it with the function that forgets it; "" when progress is off.
func (s *server) progressToken(ci *callInfo) (token string, done func()) {
	if !s.cfg.Progress || ci == nil {
		return "", func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progressSeq++
	token = fmt.Sprintf("%s/%d", ci.id, s.progressSeq)
	if s.progress == nil {
		s.progress = map[string]*callInfo{}
	}
	s.progress[token] = ci
	return token, func() {
		// go-sdk may hand a notification to its handler after the call's
		// answer: the token stays known until progressKeep later calls
		// have ended.
		s.mu.Lock()
		s.progressEnded = append(s.progressEnded, token)
		if len(s.progressEnded) > progressKeep {
			delete(s.progress, s.progressEnded[0])
			s.progressEnded = s.progressEnded[1:]
		}
		s.mu.Unlock()
	}
}

// progressKeep is how many ended calls keep their progress token known.
const progressKeep = 32

// progressNotified reports a notifications/progress: tool.progress and the
// host's Progress callback. A token the runtime did not hand out (or of a
// call that has ended) is ignored.
func (s *server) progressNotified(p *mcp.ProgressNotificationParams) {
	if p == nil {
		return
	}
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	s.mu.Lock()
	ci := s.progress[token]
	s.mu.Unlock()
	if ci == nil {
		s.rt.log.Debug("progress for an unknown token", "server", s.name, "token", token)
		return
	}
	total := ""
	if p.Total != 0 {
		total = strconv.FormatFloat(p.Total, 'g', -1, 64)
	}
	s.emit(event.ToolProgress, event.String("call", ci.id), event.String("tool", ci.tool),
		event.String("progress", strconv.FormatFloat(p.Progress, 'g', -1, 64)), event.String("total", total),
		event.String("text", wire.Sample([]byte(p.Message))))
	if cb := s.rt.opts.Progress; cb != nil {
		cb(ProgressUpdate{Server: s.name, Call: ci.id, Tool: ci.tool, Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}

// listKind is one of the listings a server may enable.
type listKind int

const (
	listResources listKind = iota
	listPrompts
)

// listState is the state of one listing of a server; guarded by server.mu.
type listState struct {
	resources []*mcp.Resource
	prompts   []*mcp.Prompt
	windows   [2]debounceWindow // by listKind
	listed    [2]bool
	fresh     [2]freshness // by listKind: the lists' ttlMs (cachehints.go)
}

// listAll lists what c's server enabled, after connect: each listing runs
// on its own so a slow one delays nothing else.
func (s *server) listAll(c *connection) {
	if s.cfg.Resources {
		s.rt.goRun(func() { s.refreshList(c, listResources) })
	}
	if s.cfg.Prompts {
		s.rt.goRun(func() { s.refreshList(c, listPrompts) })
	}
}

// listChanged debounces a resources or prompts list_changed like the tools'
// (ListChangedDebounce, re-armed only during ListChangedMaxDelayFactor
// periods), then lists again.
func (s *server) listChanged(c *connection, k listKind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.debounceLocked(&s.lists.windows[k], c, func() { s.refreshList(c, k) }) {
		kind := event.ResourcesChanged
		if k == listPrompts {
			kind = event.PromptsChanged
		}
		s.emit(kind, event.Millis("debounce_ms", s.rt.opts.ListChangedDebounce))
	}
}

// refreshList lists c's resources or prompts (all pages, at most MaxTools
// entries) and keeps them when c is still the server's connection, fresh
// from now for the ttlMs of the modern era's cache hint (cachehints.go). A
// failed listing keeps the previous list, stale if it was.
func (s *server) refreshList(c *connection, k listKind) {
	if c.ctx == nil {
		return
	}
	ctx, cancel := clock.WithTimeout(c.ctx, s.rt.clock, s.cfg.ConnectTimeout(), "list")
	defer cancel()
	var sink hintSink
	ctx = withHintSink(ctx, &sink)
	limit := s.rt.opts.MaxTools
	var (
		resources []*mcp.Resource
		prompts   []*mcp.Prompt
		err       error
		seen      int
	)
	switch k {
	case listResources:
		resources, seen, err = collect(c.cs.Resources(ctx, nil), limit)
	case listPrompts:
		prompts, seen, err = collect(c.cs.Prompts(ctx, nil), limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != c || s.closed {
		return
	}
	errText := ""
	if err != nil {
		errText = err.Error()
	} else {
		if k == listResources {
			s.lists.resources = resources
		} else {
			s.lists.prompts = prompts
		}
		f := &s.lists.fresh[k]
		*f = freshness{conn: c, at: s.rt.clock.Now(), ttl: hintFor(c.protocol, sink.hint).TTL, refreshes: f.refreshes}
	}
	s.lists.listed[k] = true
	s.notifyLocked()
	truncated := seen > limit
	if k == listResources {
		s.emit(event.ResourcesListed, event.Int("resources", len(s.lists.resources)), event.Bool("truncated", truncated), event.String("error", errText))
	} else {
		s.emit(event.PromptsListed, event.Int("prompts", len(s.lists.prompts)), event.Bool("truncated", truncated), event.String("error", errText))
	}
}

// collect gathers at most limit entries of a paged listing; seen counts the
// entries read (limit+1 when it stopped early).
func collect[T any](seq func(func(T, error) bool), limit int) ([]T, int, error) {
	var out []T
	seen := 0
	for v, err := range seq {
		if err != nil {
			return nil, seen, err
		}
		seen++
		if seen > limit {
			break
		}
		out = append(out, v)
	}
	if out == nil {
		out = []T{}
	}
	return out, seen, nil
}

// Resources returns the resources last listed for the named server (its
// config must enable "resources"); nil before the first listing. It is a
// use of the list: a list that outlived the ttlMs its server sent with it
// (2026-07-28) is listed again, and the new list replaces it when it
// arrives (cachehints.go).
func (rt *Runtime) Resources(name string) ([]*mcp.Resource, error) {
	s, err := rt.listing(name, "resources")
	if err != nil {
		return nil, err
	}
	s.useList(listResources)
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lists.resources), nil
}

// Prompts returns the prompts last listed for the named server (its config
// must enable "prompts"); nil before the first listing. It is a use of the
// list, like Resources.
func (rt *Runtime) Prompts(name string) ([]*mcp.Prompt, error) {
	s, err := rt.listing(name, "prompts")
	if err != nil {
		return nil, err
	}
	s.useList(listPrompts)
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lists.prompts), nil
}

func (rt *Runtime) listing(name, field string) (*server, error) {
	targets := rt.running(name)
	if len(targets) == 0 {
		return nil, fmt.Errorf("%s: no running server named %q", field, name)
	}
	s := targets[0]
	on := s.cfg.Resources
	if field == "prompts" {
		on = s.cfg.Prompts
	}
	if !on {
		return nil, fmt.Errorf("%s of server %q: not listed (set %q: true in its config)", field, name, field)
	}
	return s, nil
}

// stopListTimersLocked stops the listings' debounce timers; s.mu held.
func (s *server) stopListTimersLocked() {
	for i := range s.lists.windows {
		s.lists.windows[i].stop()
	}
}
