package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
	"github.com/mcplife/mcplife/runtime/toolcache"
)

// Runtime runs the MCP servers of one process. Create it with New, open a
// Session per agent session, and Close it to stop everything.
type Runtime struct {
	opts     Options
	clock    clock.Clock
	events   *event.Recorder
	log      *slog.Logger
	cache    *toolcache.Cache
	resolver *config.Resolver

	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	connectSem chan struct{}
	connects   connectGauge
	// watcher watches every stdio server's process: one goroutine for
	// all of them (proc.Watcher).
	watcher proc.Watcher

	mu          sync.Mutex
	cfg         *config.Result
	discoverErr error
	servers     map[string]*server // the shared pool
	sessions    map[*Session]struct{}
	nextSession int
	closed      bool
}

// New discovers the server configs and returns a Runtime. Servers connect
// when the first session acquires them. Config problems are reported as
// events and in Config().Diagnostics, never as an error: only a broken
// Options value is.
func New(opts Options) (*Runtime, error) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	rt := &Runtime{
		opts:       opts,
		clock:      opts.Clock,
		events:     opts.Events,
		log:        opts.Logger,
		ctx:        ctx,
		cancel:     cancel,
		connectSem: make(chan struct{}, opts.ConnectConcurrency),
		servers:    make(map[string]*server),
		sessions:   make(map[*Session]struct{}),
		resolver: &config.Resolver{
			Env:         opts.Discovery.Env,
			Trusted:     opts.Trusted,
			Credentials: opts.Credentials,
			Shell:       opts.Shell,
		},
	}
	if opts.CacheDir != "" {
		rt.cache = toolcache.New(opts.CacheDir, opts.Clock)
	}
	rt.discover()
	rt.startIdleProbe() // idleprobe.go; off unless IdleProbeInterval > 0
	return rt, nil
}

// Events returns the runtime's event recorder.
func (rt *Runtime) Events() *event.Recorder { return rt.events }

// Clock returns the runtime's clock.
func (rt *Runtime) Clock() clock.Clock { return rt.clock }

// Config returns the result of the last discovery.
func (rt *Runtime) Config() *config.Result {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.cfg
}

func (rt *Runtime) goRun(f func()) {
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		f()
	}()
}

func (rt *Runtime) stopGrace() proc.Grace { return rt.opts.StopGrace.WithDefaults() }

// discover (re)reads the configs and reports what it found as events.
func (rt *Runtime) discover() {
	res, err := config.Discover(rt.opts.Discovery)
	if err != nil {
		// A discovery-level failure yields no servers and one error naming
		// the source.
		rt.events.Emit("", event.ConfigError, event.String("file", rt.opts.Discovery.ProjectDir), event.String("message", err.Error()))
		res = &config.Result{}
	}
	rt.mu.Lock()
	rt.cfg = res
	rt.discoverErr = err
	rt.mu.Unlock()
	for _, d := range res.Diagnostics {
		kind := event.ConfigWarning
		if d.Severity == config.SeverityError {
			kind = event.ConfigError
		}
		rt.events.Emit(d.Server, kind, event.String("file", d.File), event.Int("line", d.Line), event.Int("column", d.Column),
			event.String("field", d.Field), event.String("message", d.Message))
	}
	for _, sh := range res.Shadowed {
		rt.events.Emit(sh.Name, event.ConfigShadowed, event.String("file", sh.Shadowed.File), event.String("winner", sh.Winner.File))
	}
	for _, s := range res.Disabled {
		rt.events.Emit(s.Name, event.ServerDisabled, event.String("file", s.Source.File))
	}
}

// DiscoveryError returns the discovery-level failure of the last discovery,
// if any.
func (rt *Runtime) DiscoveryError() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.discoverErr
}

// acquire returns the pool entry for a shared server, creating and starting
// it on first use: concurrent first acquires share one initialization.
func (rt *Runtime) acquire(cfg *config.Server, sess *Session) (*server, error) {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, ErrClosed
	}
	s, ok := rt.servers[cfg.Name]
	if !ok {
		var err error
		s, err = newServer(rt, cfg)
		if err != nil {
			rt.mu.Unlock()
			return nil, err
		}
		rt.servers[cfg.Name] = s
	}
	rt.mu.Unlock()
	s.mu.Lock()
	s.refs++
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	s.listeners[sess] = struct{}{}
	sess.serverTools(s.name, slices.Clone(s.published))
	refs := s.refs
	s.mu.Unlock()
	rt.events.EmitSession(sess.name, cfg.Name, event.PoolAcquired, event.Int("refs", refs), event.Bool("shared", true))
	if !ok {
		s.start()
	}
	return s, nil
}

// release drops a session's reference to a shared server.
func (rt *Runtime) release(s *server, sess *Session) {
	s.mu.Lock()
	if _, ok := s.listeners[sess]; !ok {
		s.mu.Unlock()
		return
	}
	delete(s.listeners, sess)
	s.refs--
	refs := s.refs
	if refs == 0 && rt.opts.IdleTimeout > 0 && !s.closed {
		idle := rt.opts.IdleTimeout
		s.idle = rt.clock.AfterFunc(idle, func() { rt.stopIdle(s, idle) })
	}
	s.mu.Unlock()
	rt.events.EmitSession(sess.name, s.name, event.PoolReleased, event.Int("refs", refs))
}

func (rt *Runtime) stopIdle(s *server, idle time.Duration) {
	s.mu.Lock()
	if s.refs > 0 || s.closed {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	rt.mu.Lock()
	if rt.servers[s.name] == s {
		delete(rt.servers, s.name)
	}
	rt.mu.Unlock()
	s.emit(event.PoolIdleStop, event.Millis("idle_ms", idle))
	s.close(rt.ctx, "idle")
}

// Acquire waits until the shared server name is connected, at most the
// acquire timeout for a cold server. Once the first initialization has
// failed, Acquire fails at once with ErrUnavailable while the restart loop
// goes on in the background. The returned release function drops the
// reference.
func (rt *Runtime) Acquire(ctx context.Context, name string) (release func(), err error) {
	cfg := rt.serverConfig(name)
	if cfg == nil {
		return nil, fmt.Errorf("%w: no enabled server named %q", ErrUnknownTool, name)
	}
	holder := &Session{rt: rt, name: "acquire", tools: bridge.NewRegistry(), collisions: map[string]bool{}}
	// The timer is armed before pool.acquired is emitted.
	actx, cancel := clock.WithTimeout(ctx, rt.clock, rt.opts.AcquireTimeout, "acquire")
	defer cancel()
	s, err := rt.acquire(cfg, holder)
	if err != nil {
		return nil, err
	}
	release = func() { rt.release(s, holder) }
	s.mu.Lock()
	if s.conn == nil && s.initFailed && s.acquireWaitOver {
		ago := s.sinceInitFailureLocked()
		s.mu.Unlock()
		err := &ServerError{Code: CodeUnavailable, Server: name, Kind: ErrUnavailable,
			Detail: fmt.Sprintf("unavailable: initialization failed %ds ago, retrying in background", int(ago.Seconds()))}
		rt.events.Emit(name, event.PoolUnavailable, event.Err(err))
		release()
		return nil, err
	}
	s.mu.Unlock()
	if err := s.wait(actx, func() bool { return s.conn != nil || s.closed || s.state == StateBlocked || s.state == StateNeedsAuth }); err != nil {
		release()
		s.mu.Lock()
		last := s.lastErr
		// From now on acquires fail at once while the loop retries.
		s.acquireWaitOver = true
		s.mu.Unlock()
		uerr := &ServerError{Code: CodeUnavailable, Server: name, Kind: ErrUnavailable, Cause: errors.Join(err, last)}
		rt.events.Emit(name, event.PoolUnavailable, event.Err(uerr))
		return nil, uerr
	}
	s.mu.Lock()
	blocked, lastErr := s.state == StateBlocked || s.state == StateNeedsAuth, s.lastErr
	s.mu.Unlock()
	if blocked {
		release()
		return nil, lastErr
	}
	return release, nil
}

func (rt *Runtime) serverConfig(name string) *config.Server {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.cfg == nil {
		return nil
	}
	for _, s := range rt.cfg.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Status returns the status of every configured server, sorted by name:
// pool members, private servers of open sessions, disabled servers and
// servers rejected by validation are all listed.
func (rt *Runtime) Status() []ServerStatus {
	rt.mu.Lock()
	servers := make([]*server, 0, len(rt.servers))
	for _, s := range rt.servers {
		servers = append(servers, s)
	}
	for sess := range rt.sessions {
		servers = append(servers, sess.privateServers()...)
	}
	cfg := rt.cfg
	rt.mu.Unlock()
	seen := map[string]bool{}
	var out []ServerStatus
	for _, s := range servers {
		st := s.status()
		if seen[st.Name] {
			continue
		}
		seen[st.Name] = true
		out = append(out, st)
	}
	if cfg != nil {
		for _, s := range cfg.Servers {
			if !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, ServerStatus{Name: s.Name, State: StateDisconnected, Transport: s.EffectiveType(), Source: s.Source, Shared: s.Shared})
			}
		}
		for _, s := range cfg.Disabled {
			if !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, ServerStatus{Name: s.Name, State: StateDisabled, Transport: s.EffectiveType(), Source: s.Source, Shared: s.Shared})
			}
		}
		for _, d := range cfg.Diagnostics {
			if d.Severity == config.SeverityError && d.Server != "" && !seen[d.Server] {
				seen[d.Server] = true
				out = append(out, ServerStatus{Name: d.Server, State: StateFailed, Error: d.Error(), Source: config.Source{File: d.File}})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DisconnectServer stops a server on purpose: its tools are unregistered at
// once and it is not restarted until the next Reload.
func (rt *Runtime) DisconnectServer(ctx context.Context, name string) error {
	targets := rt.running(name)
	if len(targets) == 0 {
		return fmt.Errorf("disconnect: no running server named %q", name)
	}
	for _, s := range targets {
		s.close(ctx, "disconnect")
		s.emit(event.ServerDisconnected, event.String("reason", "disconnect"))
	}
	return nil
}

// Reload disconnects every server, rediscovers the configs and reconnects,
// swapping each open session's tools: no tool of a torn-down server stays
// callable.
func (rt *Runtime) Reload(ctx context.Context) error {
	rt.events.Emit("", event.ReloadStarted)
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return ErrClosed
	}
	old := rt.servers
	rt.servers = make(map[string]*server)
	sessions := make([]*Session, 0, len(rt.sessions))
	for s := range rt.sessions {
		sessions = append(sessions, s)
	}
	rt.mu.Unlock()
	for _, sess := range sessions {
		sess.detachAll(ctx)
	}
	for _, s := range old {
		s.close(ctx, "reload")
	}
	rt.discover()
	var errs []error
	for _, sess := range sessions {
		if err := sess.attach(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	rt.events.Emit("", event.ReloadFinished, event.Int("servers", len(rt.Config().Servers)))
	return errors.Join(errs...)
}

// Close stops every session and server and waits for every goroutine of the
// runtime. It never blocks on a hung server beyond the stop grace, and ctx
// can shorten that: when ctx is done, processes are killed at once, and a
// wait for background work that has not ended returns an error instead of
// blocking.
func (rt *Runtime) Close(ctx context.Context) error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	sessions := make([]*Session, 0, len(rt.sessions))
	for s := range rt.sessions {
		sessions = append(sessions, s)
	}
	servers := make([]*server, 0, len(rt.servers))
	for _, s := range rt.servers {
		servers = append(servers, s)
	}
	rt.mu.Unlock()
	for _, sess := range sessions {
		sess.Close(ctx)
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close(ctx, "runtime closed")
		}()
	}
	wg.Wait()
	rt.cancel()
	// Background work ends with the runtime's context; ctx bounds the wait
	// for it, so a connection that never ends cannot hold Close forever.
	done := make(chan struct{})
	go func() {
		rt.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("closing the runtime: background work still running: %w", context.Cause(ctx))
	}
	rt.events.Emit("", event.RuntimeClosed)
	return nil
}

// sortedNames returns the names of cfgs in order.
func sortedNames(cfgs []*config.Server) []string {
	names := make([]string, len(cfgs))
	for i, c := range cfgs {
		names[i] = c.Name
	}
	slices.Sort(names)
	return names
}
