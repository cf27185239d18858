package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
)

// Session is one agent session's view of the runtime: the tools of every
// enabled server, callable by their exposed names.
type Session struct {
	rt   *Runtime
	name string

	mu         sync.Mutex
	servers    map[string]*server // every server this session uses
	private    map[string]*server // the ones it owns
	tools      *bridge.Registry
	collisions map[string]bool
	report     StartReport
	calls      int
	closed     bool

	watchMu sync.Mutex
	watches map[*gateWatch]struct{} // the startup gates waiting now
}

// SessionOptions configures OpenSession.
type SessionOptions struct {
	// Name labels the session in events; "" numbers it.
	Name string
}

// StartReport says how each server stood when session start returned.
type StartReport struct {
	Ready    []string         // connected, live tools
	Failed   []string         // failed; see Errors
	Deferred []string         // pending, tools from the cache
	Late     []string         // pending without cache; tools register on arrival
	Held     []string         // pending without cache; start waited for them
	Errors   map[string]error // per-server failures
	Elapsed  time.Duration    // on the runtime clock
}

// OpenSession acquires every enabled server and returns at the startup gate:
// when every server settled or the gate timeout passed, whichever is first.
// Servers still pending then expose cached tools (deferred), register later,
// or hold the start, as Options say. One server's failure never fails the
// session.
func (rt *Runtime) OpenSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, ErrClosed
	}
	rt.nextSession++
	name := opts.Name
	if name == "" {
		name = "s" + strconv.Itoa(rt.nextSession)
	}
	sess := &Session{
		rt:         rt,
		name:       name,
		servers:    make(map[string]*server),
		private:    make(map[string]*server),
		tools:      bridge.NewRegistry(),
		collisions: make(map[string]bool),
		watches:    make(map[*gateWatch]struct{}),
	}
	rt.sessions[sess] = struct{}{}
	rt.mu.Unlock()
	rt.events.EmitSession(name, "", event.SessionOpened)
	if err := sess.attach(ctx); err != nil {
		sess.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return sess, nil
}

// Name returns the session's name.
func (sess *Session) Name() string { return sess.name }

// StartReport returns the report of the last session start or reload.
func (sess *Session) StartReport() StartReport {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.report
}

// attach acquires the configured servers and waits at the startup gate. The
// gate starts before the first acquire, so the time taken to acquire (and
// read cached tools) counts against it.
func (sess *Session) attach(ctx context.Context) error {
	rt := sess.rt
	cfg := rt.Config()
	g := sess.openGate(len(cfg.Servers))
	defer g.stop()
	var entries []*server
	for _, c := range cfg.Servers {
		var s *server
		var err error
		if c.Shared {
			s, err = rt.acquire(c, sess)
		} else {
			s, err = sess.startPrivate(c)
		}
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return err
			}
			rt.events.Emit(c.Name, event.ConfigError, event.String("file", c.Source.File), event.String("field", "restart"), event.String("message", err.Error()))
			continue
		}
		entries = append(entries, s)
	}
	return sess.gate(ctx, g, entries)
}

// startGate is the startup gate of one session start.
type startGate struct {
	start time.Time
	c     <-chan time.Time
	stop  func()
}

func (sess *Session) openGate(servers int) *startGate {
	rt := sess.rt
	timeout := rt.opts.StartupGate
	g := &startGate{start: rt.clock.Now(), stop: func() {}}
	if timeout > 0 {
		t := rt.clock.NewTimer(timeout)
		g.c, g.stop = t.C(), func() { t.Stop() }
	}
	sess.emit("", event.GateOpened, event.Int("servers", servers), event.Millis("timeout_ms", max(timeout, 0)))
	return g
}

func (sess *Session) startPrivate(c *config.Server) (*server, error) {
	s, err := newServer(sess.rt, c)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.refs = 1
	s.mu.Unlock()
	sess.mu.Lock()
	sess.private[c.Name] = s
	sess.mu.Unlock()
	s.addListener(sess)
	sess.rt.events.EmitSession(sess.name, c.Name, event.PoolAcquired, event.Int("refs", 1), event.Bool("shared", false))
	s.start()
	return s, nil
}

// addListener subscribes sess to s and hands it s's current tools.
func (s *server) addListener(sess *Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners[sess] = struct{}{}
	sess.serverTools(s.name, slices.Clone(s.published))
}

func (sess *Session) gate(ctx context.Context, g *startGate, entries []*server) error {
	rt := sess.rt
	sess.mu.Lock()
	for _, s := range entries {
		sess.servers[s.name] = s
	}
	sess.mu.Unlock()
	start := g.start
	gateC := g.c
	expired := gateC == nil

	// The gate re-checks only the servers that changed since it last
	// looked, so a start over n servers costs O(n) checks, not O(n²).
	w := sess.watch()
	defer sess.unwatch(w)
	type look struct{ pending, holding bool }
	looks := make(map[*server]*look, len(entries))
	pending, holding := 0, 0
	check := func(s *server) {
		l := looks[s]
		if l == nil {
			return // not a server of this start
		}
		s.mu.Lock()
		settled := s.settledLocked()
		deferred := s.deferred && len(s.published) > 0
		s.mu.Unlock()
		if l.pending {
			pending--
		}
		if l.holding {
			holding--
		}
		l.pending = !settled
		l.holding = !settled && !deferred && !rt.opts.LateRegistration
		if l.pending {
			pending++
		}
		if l.holding {
			holding++
		}
	}
	for _, s := range entries {
		looks[s] = &look{}
	}
	for _, s := range entries {
		check(s)
	}
	for pending > 0 && (!expired || holding > 0) {
		select {
		case <-w.wake:
			for _, s := range sess.changes(w) {
				check(s)
			}
		case <-gateC:
			expired = true
			gateC = nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	rep := StartReport{Errors: map[string]error{}, Elapsed: rt.clock.Since(start)}
	for _, s := range entries {
		s.mu.Lock()
		switch {
		case s.conn != nil, s.connectedOnce && len(s.published) > 0:
			// A server that connected and dropped since still has its tools
			// for the grace window.
			rep.Ready = append(rep.Ready, s.name)
		case s.settledLocked():
			rep.Failed = append(rep.Failed, s.name)
			if s.lastErr != nil {
				rep.Errors[s.name] = s.lastErr
			} else {
				rep.Errors[s.name] = fmt.Errorf("server %q is %s", s.name, s.state)
			}
		case s.deferred && len(s.published) > 0:
			rep.Deferred = append(rep.Deferred, s.name)
		default:
			rep.Late = append(rep.Late, s.name)
		}
		s.mu.Unlock()
	}
	sess.mu.Lock()
	sess.report = rep
	sess.mu.Unlock()
	sess.emit("", event.GateClosed, event.Int("ready", len(rep.Ready)), event.Int("failed", len(rep.Failed)),
		event.Int("deferred", len(rep.Deferred)), event.Int("late", len(rep.Late)), event.Millis("elapsed_ms", rep.Elapsed))
	return nil
}

func (sess *Session) emit(server string, kind event.Kind, attrs ...event.Attr) {
	sess.rt.events.EmitSession(sess.name, server, kind, attrs...)
}

// gateWatch collects the servers of a session that changed while one
// startup gate waits on them.
type gateWatch struct {
	wake    chan struct{} // a token when changed is not empty
	changed map[*server]struct{}
}

// changes returns the servers changed since w's last call and forgets them.
func (sess *Session) changes(w *gateWatch) []*server {
	sess.watchMu.Lock()
	defer sess.watchMu.Unlock()
	out := make([]*server, 0, len(w.changed))
	for s := range w.changed {
		out = append(out, s)
	}
	clear(w.changed)
	return out
}

// watch registers a gate's watch of the session's servers.
func (sess *Session) watch() *gateWatch {
	w := &gateWatch{wake: make(chan struct{}, 1), changed: map[*server]struct{}{}}
	sess.watchMu.Lock()
	sess.watches[w] = struct{}{}
	sess.watchMu.Unlock()
	return w
}

// unwatch ends a watch.
func (sess *Session) unwatch(w *gateWatch) {
	sess.watchMu.Lock()
	delete(sess.watches, w)
	sess.watchMu.Unlock()
}

// poke records that s changed and wakes every gate waiting; it never
// blocks. It runs with s.mu held.
func (sess *Session) poke(s *server) {
	sess.watchMu.Lock()
	defer sess.watchMu.Unlock()
	for w := range sess.watches {
		w.changed[s] = struct{}{}
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// serverTools swaps one server's tools in this session atomically. It runs
// with the server's lock held and must not call back into the server.
func (sess *Session) serverTools(server string, tools []bridge.Tool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.closed {
		return
	}
	var collisions []bridge.Collision
	if len(tools) == 0 {
		sess.tools.Remove(server)
	} else {
		collisions = sess.tools.Replace(server, tools)
	}
	for _, c := range collisions {
		key := c.Name + "\x00" + c.Winner.Server + "\x00" + c.Loser.Server + "\x00" + c.Loser.MCPName
		if sess.collisions[key] {
			continue
		}
		sess.collisions[key] = true
		sess.rt.events.EmitSession(sess.name, c.Loser.Server, event.ToolsCollision, event.String("name", c.Name),
			event.String("winner", c.Winner.Server+"/"+c.Winner.MCPName), event.String("loser", c.Loser.Server+"/"+c.Loser.MCPName))
	}
}

// Tools returns the session's callable tools sorted by exposed name. It is
// a use of every server's tool list: a list that outlived its server's
// ttlMs is listed again (cachehints.go), and replaced when the new list
// arrives.
func (sess *Session) Tools() []bridge.Tool {
	sess.mu.Lock()
	tools := sess.tools.List()
	servers := make([]*server, 0, len(sess.servers))
	for _, s := range sess.servers {
		servers = append(servers, s)
	}
	sess.mu.Unlock()
	for _, s := range servers {
		s.useTools()
	}
	return tools
}

// CallTool calls the tool with the exposed name and returns the result as the
// agent sees it: text, truncated and wrapped. Server-side tool errors are
// results with IsError set and a nil error; runtime failures are results
// starting "MCP error:" together with an error matchable with errors.Is
// (ErrToolTimeout, ErrRestartFailed, ...). A cancelled ctx gives an error
// wrapping ErrAborted.
func (sess *Session) CallTool(ctx context.Context, name string, args any) (bridge.Result, error) {
	sess.mu.Lock()
	if sess.closed {
		sess.mu.Unlock()
		return bridge.Result{}, ErrClosed
	}
	tool, ok := sess.tools.Lookup(name)
	s := sess.servers[tool.Server]
	sess.calls++
	n := sess.calls
	sess.mu.Unlock()
	call, named := callID(ctx)
	if !named {
		call = sess.name + "-" + strconv.Itoa(n)
	}
	if !ok || s == nil {
		return bridge.Result{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	ci := &callInfo{sess: sess, id: call, tool: name}
	s.useTools() // cachehints.go: a stale list is listed again
	res, err := s.callTool(ctx, tool.MCPName, args, ci)
	opts := bridge.Options{Server: s.name, Tool: name, MCPTool: tool.MCPName, Source: tool.Source, MaxChars: s.maxResultChars()}
	var r bridge.Result
	outcome := "ok"
	switch {
	case err != nil && errors.Is(err, ErrAborted):
		r = bridge.MapError(context.Canceled, opts)
		outcome = "aborted"
	case err != nil:
		r = bridge.MapError(err, opts)
		outcome = "error"
	default:
		r = bridge.MapResult(res, opts)
		if r.IsError {
			outcome = "tool_error"
		}
	}
	if r.Truncated {
		sess.emit(s.name, event.ToolTruncated, event.String("tool", name), event.Int("limit", opts.MaxChars), event.Int("original", r.OriginalChars))
	}
	if len(r.Signals) > 0 {
		sess.emit(s.name, event.ToolInjectionSignal, event.String("tool", name), event.Strings("signals", r.Signals))
	}
	code := r.Code
	if code == "" && err != nil {
		var se *ServerError
		if errors.As(err, &se) {
			code = se.Code
		}
	}
	sess.emit(s.name, event.ToolCallFinished, event.String("call", call), event.String("tool", name), event.String("outcome", outcome), event.String("code", code))
	return r, err
}

func (sess *Session) privateServers() []*server {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	out := make([]*server, 0, len(sess.private))
	for _, s := range sess.private {
		out = append(out, s)
	}
	return out
}

// detachAll releases every server of the session and clears its tools.
func (sess *Session) detachAll(ctx context.Context) {
	sess.mu.Lock()
	servers := sess.servers
	private := sess.private
	sess.servers = make(map[string]*server)
	sess.private = make(map[string]*server)
	sess.tools = bridge.NewRegistry()
	sess.collisions = make(map[string]bool)
	sess.mu.Unlock()
	for name, s := range servers {
		if _, own := private[name]; own {
			continue
		}
		sess.rt.release(s, sess)
	}
	for _, s := range private {
		s.close(ctx, "session closed")
	}
}

// Close releases the session's shared servers and stops its private ones.
func (sess *Session) Close(ctx context.Context) {
	sess.mu.Lock()
	if sess.closed {
		sess.mu.Unlock()
		return
	}
	sess.mu.Unlock()
	sess.detachAll(ctx)
	sess.mu.Lock()
	sess.closed = true
	sess.mu.Unlock()
	sess.rt.mu.Lock()
	delete(sess.rt.sessions, sess)
	sess.rt.mu.Unlock()
	sess.emit("", event.SessionClosed)
}
