package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcplife/mcplife/runtime/backoff"
	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/toolcache"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server supervises one configured MCP server: its connection, its restart
// loop and the tools it publishes to sessions. A shared server lives in the
// Runtime's pool; a private one belongs to one Session.
type server struct {
	rt         *Runtime
	name       string
	cfg        *config.Server
	shared     bool
	ctx        context.Context // ends when the server is closed
	cancel     context.CancelFunc
	supervisor // supervisor.go: backoff, restart loop, probe gate

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change
	state       State
	conn        *connection
	published   []bridge.Tool
	deferred    bool
	lastErr     error
	lastErrAt   time.Time
	stderr      string
	stderrConn  *connection // the lost connection whose process stderr holds the tail of, until it is reaped
	connectedAt time.Time
	initFailed  bool // the first connect attempt failed
	// connectedOnce is set by the first successful connect: such a server
	// has settled for the startup gate even if it dropped since.
	connectedOnce bool
	initFailAt    time.Time
	// acquireWaitOver is set when a first acquire gave up waiting; later
	// acquires fail at once while the server is down.
	acquireWaitOver bool
	connecting      bool // an attempt is running
	grace           clock.Timer
	toolsWindow     debounceWindow // tools/list_changed
	changes         int            // list_changed notifications in toolsWindow
	idle            clock.Timer
	refs            int
	listeners       map[*Session]struct{}
	closed          bool
	gen             int
	warnings        []string
	sessions        sessionStrategy // sessions.go: stdio or remote
	// roots are advertised to the server (config "roots", or SetRoots);
	// nil when its config has none.
	roots []config.Root
	// progress maps the progress tokens of calls in flight to their calls.
	progress    map[string]*callInfo
	progressSeq int
	// progressEnded lists the tokens of ended calls, oldest first.
	progressEnded []string
	lists         listState // handlers_lists.go
	idleProbe     idleState // idleprobe.go: calls in flight, RetryNow
	fresh         freshness // cachehints.go: the live list's ttlMs
}

func newServer(rt *Runtime, cfg *config.Server) (*server, error) {
	policy, err := policyFor(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(rt.ctx)
	s := &server{
		rt:         rt,
		name:       cfg.Name,
		cfg:        cfg,
		shared:     cfg.Shared,
		supervisor: supervisor{policy: policy},
		ctx:        ctx,
		cancel:     cancel,
		changed:    make(chan struct{}),
		state:      StateConnecting,
		listeners:  make(map[*Session]struct{}),
		roots:      slices.Clone(cfg.Roots),
	}
	s.sessions = sessionsFor(s)
	return s, nil
}

func policyFor(cfg *config.Server) (backoff.Policy, error) {
	name := string(cfg.Restart)
	if name == "" {
		name = backoff.Relentless
		if !cfg.Shared {
			name = backoff.Once
		}
	}
	p, err := backoff.ByName(name, cfg.RestartDelays)
	if err != nil {
		return backoff.Policy{}, fmt.Errorf("server %q: field \"restart\": %w", cfg.Name, err)
	}
	return p, nil
}

func (s *server) emit(kind event.Kind, attrs ...event.Attr) {
	s.rt.events.Emit(s.name, kind, attrs...)
}

// notifyLocked wakes everything waiting on a change; s.mu must be held.
func (s *server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
	for sess := range s.listeners {
		sess.poke(s)
	}
}

func (s *server) setStateLocked(st State) {
	s.state = st
	s.notifyLocked()
}

func (s *server) toolTimeout() time.Duration {
	switch {
	case s.cfg.ToolTimeout == config.NoTimeout:
		return 0
	case s.cfg.ToolTimeout > 0:
		return s.cfg.ToolTimeout
	}
	return s.rt.opts.ToolTimeout
}

func (s *server) maxResultChars() int {
	limit := s.rt.opts.MaxResultChars
	if s.cfg.MaxResultChars > 0 {
		limit = s.cfg.MaxResultChars
	}
	return limit
}

// start loads cached tools and launches the first connect attempt.
func (s *server) start() {
	s.loadCache()
	s.rt.goRun(func() { s.initialize() })
}

func (s *server) loadCache() {
	if s.rt.cache == nil {
		return
	}
	tools, lookup := s.rt.cache.Get(s.name, s.cfg.ConfigHash())
	if !lookup.Hit {
		s.emit(event.CacheMiss, event.String("reason", lookup.Reason))
		return
	}
	s.emit(event.CacheHit, event.Int("tools", len(tools)))
	compactTools(tools)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil && !s.closed {
		s.publishLocked(tools, true)
		for _, t := range s.published {
			s.emit(event.ToolDeferred, event.String("tool", t.Name))
		}
	}
}

// initialize runs the first connect attempt; on failure the restart policy
// takes over with reason init-failure.
func (s *server) initialize() {
	err := s.attempt(s.ctx, 0)
	if err == nil {
		return
	}
	if errors.Is(err, ErrBlocked) || errors.Is(err, ErrAuthRequired) || s.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	s.initFailed = true
	s.initFailAt = s.rt.clock.Now()
	s.mu.Unlock()
	s.triggerRestart("init-failure", nil)
}

// attempt makes one connection and, on success, installs it. attempt is the
// restart attempt number (0 for the first connect).
func (s *server) attempt(ctx context.Context, attempt int) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.connecting = true
	s.gen++
	gen := s.gen
	s.notifyLocked()
	s.mu.Unlock()

	conn, tools, err := s.rt.connect(ctx, s, gen, attempt)

	s.mu.Lock()
	s.connecting = false
	if err != nil {
		s.lastErr = err
		s.lastErrAt = s.rt.clock.Now()
		if errors.Is(err, ErrBlocked) {
			s.setStateLocked(StateBlocked)
		} else if s.sessions.noteFailureLocked(err) {
			// needs-auth
		} else if !s.restarting {
			s.setStateLocked(StateFailed)
		} else {
			s.notifyLocked()
		}
		s.mu.Unlock()
		return err
	}
	if s.closed {
		s.mu.Unlock()
		conn.close(context.Background(), "closed")
		return ErrClosed
	}
	// The connection may have ended already (a server that exits right
	// after its tool list): it connected all the same, and its end is
	// handled as any lost connection's (below), so the events are those
	// of a connection that ends a moment later.
	s.conn = conn
	conn.installed = true
	s.connectedOnce = true
	s.lastErr = nil
	s.connectedAt = s.rt.clock.Now()
	s.initFailed = false
	s.acquireWaitOver = false
	s.stderr = ""
	s.stderrConn = nil
	s.emit(event.ServerConnected, event.String("transport", string(s.cfg.EffectiveType())), event.Int("attempt", attempt),
		event.Int("tools", len(tools)), event.String("protocol", conn.protocol))
	s.setStateLocked(StateConnected)
	s.cancelGraceLocked()
	s.publishLocked(tools, false)
	hint := hintFor(conn.protocol, conn.toolsHint)
	s.listedLocked(conn, hint)
	s.armStableLocked()
	s.mu.Unlock()

	s.writeCache(tools, hint)
	if cause := conn.unplannedEnd(); cause != nil {
		// watch may have seen the end before the connection was
		// installed, and left it (connectionLost ignores a connection
		// not installed yet); when it saw it after, this report is the
		// second and is ignored.
		s.connectionLost(conn, cause)
		return nil
	}
	s.listAll(conn) // handlers_lists.go
	return nil
}

// writeCache records tools, received with the cache hint h (of the
// connection's era), in the tool cache. A list scoped private is never
// stored (cachehints.go): cache.invalidated reason "private scope", whether
// or not there was a record to remove.
func (s *server) writeCache(tools []*mcp.Tool, h toolcache.Hint) {
	if s.rt.cache == nil {
		return
	}
	invalidated, err := s.rt.cache.PutHint(s.name, s.cfg.ConfigHash(), tools, h)
	switch {
	case err != nil:
		s.rt.log.Warn("tool cache write failed", "server", s.name, "error", err)
	case !h.Shareable() && len(tools) > 0:
		s.emit(event.CacheInvalidated, event.String("reason", reasonPrivateScope))
	case invalidated:
		s.emit(event.CacheInvalidated, event.String("reason", "empty tool list"))
	case len(tools) > 0:
		s.emit(event.CacheWritten, event.Int("tools", len(tools)))
	}
}

// publishLocked replaces the tools this server exposes and tells sessions.
func (s *server) publishLocked(tools []*mcp.Tool, deferred bool) {
	f := bridge.Filter{Include: s.cfg.IncludeTools, Exclude: s.cfg.ExcludeTools}
	s.published = bridge.Build(s.name, tools, f, s.cfg.RequiresApproval, s.cfg.Source)
	for i := range s.published {
		s.published[i].Deferred = deferred
	}
	s.deferred = deferred
	names := make([]string, len(s.published))
	for i, t := range s.published {
		names[i] = t.Name
	}
	s.notifyListenersLocked()
	s.emit(event.ToolsRegistered, event.Int("tools", len(s.published)), event.Bool("deferred", deferred), event.Strings("names", names))
}

func (s *server) unpublishLocked(reason string) {
	if s.published == nil {
		return
	}
	n := len(s.published)
	s.published = nil
	s.deferred = false
	s.notifyListenersLocked()
	s.emit(event.ToolsUnregistered, event.Int("tools", n), event.String("reason", reason))
}

func (s *server) notifyListenersLocked() {
	tools := slices.Clone(s.published)
	for sess := range s.listeners {
		sess.serverTools(s.name, tools)
	}
}

func (s *server) cancelGraceLocked() {
	if s.grace != nil {
		if s.grace.Stop() {
			s.emit(event.ToolsUnregisterCancelled)
		}
		s.grace = nil
	}
}

// connectionLost handles a connection that ended without being asked to.
func (s *server) connectionLost(c *connection, cause error) {
	s.mu.Lock()
	if !c.installed || c.lossTaken {
		// Not installed yet: attempt hands the end over once it has
		// installed c, or closes c. Taken already: the end raced with
		// the install, and the first report is being handled (a second
		// one would tell awaitNewSession that the handling is over).
		s.mu.Unlock()
		return
	}
	c.lossTaken = true
	s.mu.Unlock()
	if s.sessions.lost(c, cause) {
		return
	}
	defer c.markLost()
	s.mu.Lock()
	if s.conn != c || s.closed {
		s.mu.Unlock()
		return
	}
	s.conn = nil
	s.lastErr = fmt.Errorf("%w: %w", ErrConnectionLost, cause)
	s.lastErrAt = s.rt.clock.Now()
	if c.proc != nil {
		s.stderr = c.proc.StderrTail()
		s.stderrConn = c // what the process writes until it is reaped: refreshStderr
	}
	s.emit(event.TransportClosed, event.String("transport", string(s.cfg.EffectiveType())), event.Err(cause))
	s.startGraceLocked()
	s.setStateLocked(StateFailed)
	s.mu.Unlock()
	s.triggerRestart("transport-exit", nil)
}

// refreshStderr takes the stderr tail again once the process of the lost
// connection c has been reaped: the end of its stdout can come before the
// last lines it wrote to stderr have been drained, and those last lines
// are the ones that say why it died.
func (s *server) refreshStderr(c *connection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stderrConn == c {
		s.stderr = c.proc.StderrTail()
		s.stderrConn = nil
	}
}

// startGraceLocked keeps the published tools for the unregister grace window.
func (s *server) startGraceLocked() {
	if s.published == nil || s.grace != nil {
		return
	}
	g := s.rt.opts.UnregisterGrace
	if g < 0 {
		s.unpublishLocked("connection lost")
		return
	}
	var t clock.Timer
	t = s.rt.clock.AfterFunc(g, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.grace != t || s.conn != nil {
			return
		}
		s.grace = nil
		s.unpublishLocked("grace window expired")
	})
	s.grace = t
	s.emit(event.ToolsUnregisterScheduled, event.Millis("grace_ms", g))
}

// wait blocks until cond holds (checked under s.mu) or ctx is done.
func (s *server) wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok := cond()
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// settled reports whether the first connect has an outcome; s.mu held.
func (s *server) settledLocked() bool {
	return s.conn != nil || s.connectedOnce || s.initFailed || s.state == StateBlocked || s.state == StateNeedsAuth || s.state == StateFailed ||
		s.state == StateDisconnected || s.closed
}

// close stops the restart loop and the connection; nothing is left running.
func (s *server) close(ctx context.Context, reason string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.cancel()
	s.toolsWindow.stop()
	for _, t := range []clock.Timer{s.stable, s.grace, s.idle} {
		if t != nil {
			t.Stop()
		}
	}
	s.stopListTimersLocked()
	c := s.conn
	s.conn = nil
	s.unpublishLocked(reason)
	s.setStateLocked(StateDisconnected)
	s.mu.Unlock()
	if c != nil {
		c.close(ctx, reason)
	}
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	reinits, resumes := s.sessions.counts()
	st := ServerStatus{
		Name:            s.name,
		State:           s.state,
		Transport:       s.cfg.EffectiveType(),
		Tools:           len(s.published),
		Deferred:        s.deferred,
		Source:          s.cfg.Source,
		Shared:          s.shared,
		Refs:            s.refs,
		RestartAttempts: s.step,
		Policy:          s.policy.Name,
		Warnings:        slices.Clone(s.warnings),
		Stderr:          s.stderr,
		SessionReinits:  reinits,
		StreamResumes:   resumes,
		Roots:           len(s.roots),
		Resources:       len(s.lists.resources),
		Prompts:         len(s.lists.prompts),
	}
	if s.restarting && s.conn == nil {
		st.State = StateRestarting
	}
	if s.lastErr != nil {
		st.Error = s.lastErr.Error()
	}
	if s.conn != nil {
		st.ConnectedSince = s.connectedAt
		st.Protocol = s.conn.protocol
		if s.conn.proc != nil {
			st.PID = s.conn.proc.PID()
			st.Stderr = s.conn.proc.StderrTail()
		}
	}
	return st
}
