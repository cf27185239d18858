package host

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errPlannedClose is the cause of a connection context ended on purpose.
var errPlannedClose = errors.New("connection closed by the runtime")

// connection is one live MCP session with a server.
type connection struct {
	srv *server
	gen int
	cs  *mcp.ClientSession
	// client is the go-sdk client of cs; SetRoots changes its roots.
	client *mcp.Client
	proc   *proc.Process // nil for remote transports
	// stray wraps the connection's transport (nil for streamable HTTP); it
	// remembers the connection's read failure (readfail.go).
	stray *strayTransport
	// sockets are the remote connection's sockets (nil for stdio).
	sockets *socketSet
	// remote is what the HTTP layer of a remote connection saw (nil for
	// stdio); lost is closed once the connection's end has been handled
	// (remote_server.go).
	remote   *remoteConn
	lost     chan struct{}
	lostOnce sync.Once

	// ctx ends when the connection ends; calls in flight derive from it so
	// they fail at once when the server goes away.
	ctx    context.Context
	cancel context.CancelCauseFunc

	protocol string // negotiated protocol version

	mu      sync.Mutex
	planned bool
	ended   bool
	closing chan struct{} // closed by close()
	done    chan struct{} // closed when watch returns
	closed  sync.Once
}

// connect makes one connection to s: resolve, dial, initialize, list tools.
func (rt *Runtime) connect(ctx context.Context, s *server, gen, attempt int) (*connection, []*mcp.Tool, error) {
	select {
	case rt.connectSem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, context.Cause(ctx)
	}
	rt.connects.enter()
	defer func() {
		rt.connects.leave()
		<-rt.connectSem
	}()

	transportName := string(s.cfg.EffectiveType())
	resolved, diags := rt.resolver.Resolve(ctx, s.cfg)
	for _, d := range diags {
		rt.events.Emit(s.name, event.ConfigUnresolved, event.String("field", d.Field), event.String("message", d.Message))
	}
	if resolved.Blocked != "" {
		err := &ServerError{Code: CodeBlocked, Server: s.name, Kind: ErrBlocked, Detail: resolved.Blocked}
		s.emit(event.ServerBlocked, event.String("reason", resolved.Blocked))
		return nil, nil, err
	}

	connectTimeout := s.cfg.ConnectTimeout()
	cctx, cancel := clock.WithTimeout(ctx, rt.clock, connectTimeout, "connect")
	defer cancel()
	s.emit(event.ServerConnecting, event.String("transport", transportName), event.Int("attempt", attempt),
		event.Millis("timeout_ms", max(connectTimeout, 0)))

	var p *proc.Process
	sockets := &socketSet{}
	var rc *remoteConn
	if s.isRemote() {
		rc = newRemoteConn(s, resolved)
	}
	transport, err := rt.dial(cctx, s, resolved, &p, sockets, rc)
	if err == nil {
		transport = s.strayGuard(transport)
	}
	if err != nil {
		return nil, nil, rt.connectFailed(s, p, err)
	}
	if p != nil {
		// An immediate exit of the child ends the handshake at once instead
		// of at the connect timeout.
		stop := watchExit(p, func(st proc.ExitStatus) {
			cancel()
		})
		defer stop()
	}

	c := &connection{srv: s, gen: gen, proc: p, closing: make(chan struct{}), done: make(chan struct{}), remote: rc, lost: make(chan struct{})}
	if p == nil {
		c.sockets = sockets
	}
	if rc != nil {
		rc.conn = c
	}
	c.stray, _ = transport.(*strayTransport)
	client := s.newClient(c) // handlers_client.go
	c.client = client
	version := rt.opts.ProtocolVersion
	if s.cfg.ProtocolVersion != "" {
		version = s.cfg.ProtocolVersion
	}
	cs, err := client.Connect(cctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		sockets.closeAll()
		return nil, nil, rt.connectFailed(s, p, s.remoteConnectErr(rc, stdoutCause(p, causeOf(cctx, err, p, readFailure(p, c.stray)))))
	}
	c.cs = cs
	tools, err := s.listTools(cctx, cs)
	if err != nil {
		sockets.closeAll()
		closeSession(cs)
		return nil, nil, rt.connectFailed(s, p, s.remoteConnectErr(rc, stdoutCause(p, causeOf(cctx, err, p, readFailure(p, c.stray)))))
	}
	c.ctx, c.cancel = context.WithCancelCause(s.ctx)
	rt.goRun(c.watch)
	if ir := cs.InitializeResult(); ir != nil {
		c.protocol = ir.ProtocolVersion
	}
	return c, tools, nil
}

// watchExit calls f when p exits, until stop is called.
func watchExit(p *proc.Process, f func(proc.ExitStatus)) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-p.Done():
			f(p.Exit())
		case <-quit:
		}
	}()
	return func() { close(quit); <-done }
}

// causeOf names why a handshake failed: the connection's read failure rf
// when there was one (readfail.go), else the process exit or the clock
// timeout rather than the SDK's error.
func causeOf(ctx context.Context, err error, p *proc.Process, rf error) error {
	if rf != nil {
		return withReadFailure(err, rf)
	}
	var te *clock.TimeoutError
	if cause := context.Cause(ctx); errors.As(cause, &te) {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	if p != nil {
		select {
		case <-p.Done():
			// %v, not %w: the SDK's error is often the cancellation of the
			// connect context by the exit watcher, and wrapping it would make
			// a restart failure look like the caller's own abort
			// (errors.Is(err, context.Canceled)) to the bridge and the driver.
			return fmt.Errorf("server process exited during the handshake (%s): %v", p.Exit(), err)
		default:
		}
	}
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		return cause
	}
	return err
}

func (rt *Runtime) connectFailed(s *server, p *proc.Process, err error) error {
	if s.ctx.Err() != nil {
		// The server is being closed; this is no failure of its own.
		if p != nil {
			p.Stop(s.ctx, rt.stopGrace(), s.stopObserver(p))
		}
		return ErrClosed
	}
	stderr := ""
	if p != nil {
		p.Stop(context.Background(), rt.stopGrace(), s.stopObserver(p))
		stderr = p.StderrTail()
		s.mu.Lock()
		s.stderr = stderr
		s.mu.Unlock()
		rt.events.Emit(s.name, event.ProcessExited, event.Int("pid", p.PID()), event.String("status", p.Exit().String()), event.Bool("planned", false))
	}
	if stderr != "" {
		err = fmt.Errorf("%w\nstderr:\n%s", err, stderr)
	}
	s.emit(event.ServerFailed, event.String("transport", string(s.cfg.EffectiveType())), event.Err(err), event.String("stderr", stderr))
	return err
}

// closeSession closes cs without waiting on a hung peer forever: calls in
// flight were cancelled before, so Close returns once the transport is gone.
func closeSession(cs *mcp.ClientSession) { _ = cs.Close() }

// watch waits for the connection to end and reports an unplanned end.
func (c *connection) watch() {
	defer close(c.done)
	ended := make(chan error, 1)
	go func() { ended <- c.cs.Wait() }()
	var cause error
	var procDone <-chan struct{}
	if c.proc != nil {
		procDone = c.proc.Done()
	}
	waited := false
	select {
	case err := <-ended:
		waited = true
		cause = err
		if cause == nil {
			cause = errors.New("connection closed by the server")
		}
		if c.proc != nil {
			// Let the exit status name the cause when the process is gone.
			select {
			case <-c.proc.Done():
				cause = fmt.Errorf("server process exited (%s)", c.proc.Exit())
			default:
			}
		}
	case <-procDone:
		cause = fmt.Errorf("server process exited (%s)", c.proc.Exit())
	case <-c.remote.boundFailed():
		// go-sdk may not end the connection itself (inflight_http.go).
		cause = fmt.Errorf("reading from the server failed: %w", c.remote.boundFailure())
	case <-c.closing:
		<-ended
		return
	}
	cause = stdoutCause(c.proc, withReadFailure(cause, readFailure(c.proc, c.stray)))
	cause = withReadFailure(cause, c.remote.boundFailure())
	c.mu.Lock()
	planned := c.planned
	c.ended = true
	c.mu.Unlock()
	c.cancel(fmt.Errorf("%w: %w", ErrConnectionLost, cause))
	if c.proc != nil {
		c.srv.rt.events.Emit(c.srv.name, event.ProcessExited, event.Int("pid", c.proc.PID()), event.String("status", procStatus(c.proc)), event.Bool("planned", planned))
	}
	if !planned {
		c.srv.connectionLost(c, cause)
	} else {
		c.markLost()
	}
	// Reap the session and whatever is left of the process.
	closeSession(c.cs)
	if c.proc != nil {
		c.proc.Stop(c.srv.ctx, c.srv.rt.stopGrace(), c.srv.stopObserver(c.proc))
	}
	if !waited {
		<-ended
	}
}

func procStatus(p *proc.Process) string {
	select {
	case <-p.Done():
		return p.Exit().String()
	default:
		return "running"
	}
}

// close ends the connection on purpose: calls in flight are cancelled first,
// then the session is closed and the process group stopped. It never blocks
// on a hung server beyond the stop grace (or ctx).
func (c *connection) close(ctx context.Context, reason string) {
	c.closed.Do(func() {
		c.mu.Lock()
		c.planned = true
		c.mu.Unlock()
		c.cancel(fmt.Errorf("%w (%s)", errPlannedClose, reason))
		close(c.closing)
		closed := make(chan struct{})
		go func() { closeSession(c.cs); close(closed) }()
		if c.proc != nil {
			srv := c.srv
			c.proc.Stop(ctx, srv.rt.stopGrace(), srv.stopObserver(c.proc))
			srv.rt.events.Emit(srv.name, event.ProcessExited, event.Int("pid", c.proc.PID()), event.String("status", c.proc.Exit().String()), event.Bool("planned", true))
		}
		if c.sockets != nil {
			c.closeRemote(ctx, closed)
		}
		select {
		case <-closed:
		case <-ctx.Done():
		}
		<-c.done
		c.markLost()
	})
}

// markLost tells waiters (awaitNewSession) that the end of c was handled.
func (c *connection) markLost() {
	if c.lost != nil {
		c.lostOnce.Do(func() { close(c.lost) })
	}
}

// closeRemote bounds the close of a remote session: go-sdk's Close waits on
// the server (the DELETE of a streamable session), which a wedged server
// never answers. After the stdin grace on the clock, or at once when ctx is
// done, the connection's sockets are closed, which fails that wait.
func (c *connection) closeRemote(ctx context.Context, closed <-chan struct{}) {
	srv := c.srv
	grace := srv.rt.stopGrace().Stdin
	if grace <= 0 {
		grace = proc.DefaultGraceStep
	}
	t := srv.rt.clock.NewTimer(grace)
	defer t.Stop()
	srv.emit(event.ProcessSignaled, event.Int("pid", 0), event.String("step", "session-close"))
	select {
	case <-closed:
		c.sockets.closeAll()
		return
	case <-t.C():
	case <-ctx.Done():
	}
	srv.emit(event.ProcessSignaled, event.Int("pid", 0), event.String("step", "sockets-closed"))
	c.sockets.closeAll()
}

// dial makes the transport for one attempt; a stdio process is returned in
// *p. rc is the HTTP layer's state of a remote connection.
func (rt *Runtime) dial(ctx context.Context, s *server, r *config.Resolved, p **proc.Process, sockets *socketSet, rc *remoteConn) (mcp.Transport, error) {
	if rt.opts.Dial != nil {
		return rt.opts.Dial(ctx, s.cfg, r)
	}
	switch s.cfg.EffectiveType() {
	case config.Stdio:
		pr, err := proc.Start(s.stdoutSpec(proc.Spec{Command: s.cfg.Command, Args: s.cfg.Args, Env: r.Env, Dir: s.cfg.Cwd}), rt.clock)
		if err != nil {
			return nil, err
		}
		*p = pr
		rt.events.Emit(s.name, event.ProcessStarted, event.Int("pid", pr.PID()), event.String("command", s.cfg.Command))
		return pr.Transport(), nil
	case config.HTTP:
		client := headerClient(r.Headers, sockets, rc)
		if rc != nil {
			rc.requests = newRequestBound(client.Transport, MaxServerRequests, s.maxMessageBytes(), sockets.closeAll)
			client.Transport = rc.requests
		}
		return &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client, MaxRetries: -1}, nil
	case config.SSE:
		return longLived{inner: &mcp.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: headerClient(r.Headers, sockets, rc)}, life: s.ctx}, nil
	}
	return nil, fmt.Errorf("server %q: unknown transport %q", s.name, s.cfg.Type)
}

// stopObserver emits process.signaled for each step of stopping p.
func (s *server) stopObserver(p *proc.Process) proc.StopObserver {
	return func(step string) {
		s.emit(event.ProcessSignaled, event.Int("pid", p.PID()), event.String("step", step))
	}
}
