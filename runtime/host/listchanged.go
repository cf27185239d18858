package host

import (
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
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
	s.toolsChangedLocked(c)
}

// toolsChangedLocked is toolsChanged with s.mu held.
func (s *server) toolsChangedLocked(c *connection) {
	debounce := s.rt.opts.ListChangedDebounce
	if !s.toolsWindow.open() {
		s.changes = 0
	}
	s.changes++
	switch n := s.changes; {
	case n <= ListChangedEventBurst:
		defer s.emit(event.ToolsChanged, event.Millis("debounce_ms", debounce))
	case isPowerOfTen(n):
		defer s.emit(event.ToolsChangeFlood, event.Int("notifications", n), event.Millis("debounce_ms", debounce))
	}
	s.debounceLocked(&s.toolsWindow, c, func() { s.refreshTools(c) })
}

// absorbListChanged is offered each small list_changed notification on the
// stdout of process p before go-sdk decodes it (proc.Spec.Absorb). While a
// debounce window of that list is open on p's connection, the notification
// is counted into it here, exactly as its handler would (toolsChanged,
// listChanged), and dropped: a flood then costs a byte scan per
// notification instead of a go-sdk decode (about 100 KB of allocations). A
// notification of a list the server does not follow (resources or prompts
// without the config field) is dropped too: go-sdk has no handler for it.
// Anything else, the notification that opens a window included, goes
// through go-sdk in order.
func (s *server) absorbListChanged(p *proc.Process, method string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conn
	if s.closed || c == nil || c.proc != p {
		return false
	}
	switch method {
	case "notifications/tools/list_changed":
		if !s.toolsWindow.open() {
			return false
		}
		s.toolsChangedLocked(c)
	case "notifications/resources/list_changed", "notifications/prompts/list_changed":
		k, follows := listResources, s.cfg.Resources
		if method == "notifications/prompts/list_changed" {
			k, follows = listPrompts, s.cfg.Prompts
		}
		if !follows {
			return true
		}
		if !s.lists.windows[k].open() {
			return false
		}
		s.debounceLocked(&s.lists.windows[k], c, func() { s.refreshList(c, k) })
	default:
		return false
	}
	return true
}

// debounceWindow is the debounce window of one of a server's lists (tools,
// resources, prompts); s.mu guards it.
type debounceWindow struct {
	timer clock.Timer // the armed refresh; nil when no window is open
	since time.Time   // when the window's first notification came
}

// open reports whether a window is open.
func (w *debounceWindow) open() bool { return w.timer != nil }

// stop closes the window without its refresh.
func (w *debounceWindow) stop() {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// debounceLocked handles one list_changed of connection c for window w: it
// opens the window, or postpones its refresh by ListChangedDebounce while the
// window is younger than ListChangedMaxDelayFactor periods (a steady flood
// cannot postpone it for ever). When the timer fires and c is still the
// server's connection, refresh runs on its own goroutine. It reports whether
// the notification opened the window. s.mu must be held.
func (s *server) debounceLocked(w *debounceWindow, c *connection, refresh func()) (opened bool) {
	debounce := s.rt.opts.ListChangedDebounce
	now := s.rt.clock.Now()
	if w.timer != nil {
		if now.Sub(w.since) >= ListChangedMaxDelayFactor*debounce {
			return false // the armed refresh is not postponed again
		}
		w.timer.Stop()
	} else {
		w.since = now
		opened = true
	}
	var t clock.Timer
	t = s.rt.clock.AfterFunc(debounce, func() {
		s.mu.Lock()
		if w.timer != t || s.conn != c || s.closed {
			s.mu.Unlock()
			return
		}
		w.timer = nil
		s.mu.Unlock()
		s.rt.goRun(refresh)
	})
	w.timer = t
	return opened
}

func (s *server) refreshTools(c *connection) {
	if c.ctx == nil {
		return
	}
	ctx, cancel := clock.WithTimeout(c.ctx, s.rt.clock, s.cfg.ConnectTimeout(), "tools/list")
	defer cancel()
	tools, hint, err := s.listToolsHinted(ctx, c.cs)
	if err != nil {
		s.rt.log.Warn("tools refresh failed", "server", s.name, "error", err)
		return
	}
	hint = hintFor(c.protocol, hint)
	s.mu.Lock()
	// The server answered: the list is fresh from now, also when an empty
	// answer keeps the old tools (no refresh at every use then).
	s.listedLocked(c, hint)
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
	s.writeCache(tools, hint)
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
