package host

import (
	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/event"
)

// toolsChanged handles notifications/tools/list_changed from connection c:
// bursts are debounced on the clock, then the tools are listed again. Only
// the first ListChangedEventBurst notifications of a window emit
// tools.changed (a flood emits tools.change_flood at powers of ten), and a
// window is re-armed only during its first ListChangedMaxDelayFactor
// debounce periods. An
// empty list never replaces a non-empty one (a refresh that comes back empty
// by mistake must not wipe the server's tools).
func (s *server) toolsChanged(c *connection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	debounce := s.rt.opts.ListChangedDebounce
	now := s.rt.clock.Now()
	if s.debounce == nil {
		s.changes, s.changesSince = 0, now
	}
	s.changes++
	switch n := s.changes; {
	case n <= ListChangedEventBurst:
		defer s.emit(event.ToolsChanged, event.Millis("debounce_ms", debounce))
	case isPowerOfTen(n):
		defer s.emit(event.ToolsChangeFlood, event.Int("notifications", n), event.Millis("debounce_ms", debounce))
	}
	if s.rt.faults.on(faultNoListChangedDebounce) {
		s.rt.goRun(func() { s.refreshTools(c) }) // defect: one refresh per notification
		return
	}
	if s.debounce != nil {
		if now.Sub(s.changesSince) >= ListChangedMaxDelayFactor*debounce {
			// A steady flood: the armed refresh is not postponed again.
			return
		}
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
	tools, err := s.listTools(ctx, c.cs)
	if err != nil {
		s.rt.log.Warn("tools refresh failed", "server", s.name, "error", err)
		return
	}
	s.mu.Lock()
	if s.conn != c || s.closed {
		s.mu.Unlock()
		return
	}
	if len(tools) == 0 && len(s.published) > 0 && !s.rt.faults.on(faultEmptyRefreshReplaces) {
		s.emit(event.ToolsRefreshKept, event.Int("tools", len(s.published)))
		s.mu.Unlock()
		return
	}
	s.publishLocked(tools, false)
	s.mu.Unlock()
	s.writeCache(tools)
}

// isPowerOfTen reports whether n is 10, 100, 1000...
func isPowerOfTen(n int) bool {
	if n < 10 {
		return false
	}
	for n%10 == 0 {
		n /= 10
	}
	return n == 1
}
