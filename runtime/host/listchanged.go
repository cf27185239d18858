package host

import (
	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/event"
)

// toolsChanged handles notifications/tools/list_changed from connection c:
// bursts are debounced on the clock, then the tools are listed again. An
// empty list never replaces a non-empty one (a refresh that comes back empty
// by mistake must not wipe the server's tools).
func (s *server) toolsChanged(c *connection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	defer s.emit(event.ToolsChanged, event.Millis("debounce_ms", s.rt.opts.ListChangedDebounce))
	if s.debounce != nil {
		s.debounce.Stop()
	}
	var t clock.Timer
	t = s.rt.clock.AfterFunc(s.rt.opts.ListChangedDebounce, func() {
		s.mu.Lock()
		if s.debounce != t || s.conn != c || s.closed {
			s.mu.Unlock()
			return
		}
		s.debounce = nil
		s.mu.Unlock()
		s.rt.goRun(func() { s.refreshTools(c) })
	})
	s.debounce = t
}

func (s *server) refreshTools(c *connection) {
	if c.ctx == nil {
		return
	}
	ctx, cancel := clock.WithTimeout(c.ctx, s.rt.clock, s.cfg.ConnectTimeout(), "tools/list")
	defer cancel()
	tools, err := listTools(ctx, c.cs)
	if err != nil {
		s.rt.log.Warn("tools refresh failed", "server", s.name, "error", err)
		return
	}
	s.mu.Lock()
	if s.conn != c || s.closed {
		s.mu.Unlock()
		return
	}
	if len(tools) == 0 && len(s.published) > 0 {
		s.emit(event.ToolsRefreshKept, event.Int("tools", len(s.published)))
		s.mu.Unlock()
		return
	}
	s.publishLocked(tools, false)
	s.mu.Unlock()
	s.writeCache(tools)
}
