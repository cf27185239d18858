package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
	"github.com/mcplife/mcplife/runtime/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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

	// One try per protocol era at most (era.go): a handshake that a
	// modern-only server refuses ends the try, and the next asks for the
	// version it named.
	version, pinned := s.protocolRequest()
	pin := ""
	if pinned {
		pin = version
	}
	for try := 0; ; try++ {
		c, tools, next, reason, err := rt.connectTry(cctx, s, resolved, gen, version, pin, try > 0)
		if next == "" {
			return c, tools, err
		}
		s.learnProtocol(next, reason)
		version = next
	}
}

// learnProtocol notes that s speaks version (server.protocol_fallback):
// later attempts ask for it first.
func (s *server) learnProtocol(version, reason string) {
	s.mu.Lock()
	s.learnedProtocol = version
	s.mu.Unlock()
	s.emit(event.ServerProtocolFallback, event.String("protocol", version), event.String("reason", reason))
}

// learned tells whether an earlier fallback learned that s speaks version.
func (s *server) learned(version string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.learnedProtocol == version
}

// unlearnProtocol forgets version, learned from a server/discover left
// unanswered, when the handshake that followed in the same process failed
// too: the silence was a server stuck in its start (a modern server that
// hangs on discover), not one of the handshake era, so later attempts ask
// the era they asked before, as they would of a server hanging in
// initialize.
func (s *server) unlearnProtocol(version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.learnedProtocol == version {
		s.learnedProtocol = ""
	}
}

// connectTry is one try of a connect attempt, asking for protocol version:
// dial, handshake (or server/discover), list tools. When a modern-only
// server refuses the handshake it returns the version to try next and why
// (fallbackFor), having stopped what it started, unless it is the last
// try. pin is the config's protocolVersion ("" when unpinned).
func (rt *Runtime) connectTry(cctx context.Context, s *server, resolved *config.Resolved, gen int, version, pin string, last bool) (_ *connection, _ []*mcp.Tool, next, reason string, _ error) {
	// The try's own context: the exit of its process ends its handshake,
	// not the attempt (a fallback goes on after it).
	tctx, tcancel := context.WithCancelCause(cctx)
	defer tcancel(nil)
	var p *proc.Process
	sockets := &socketSet{}
	rc := s.sessions.newConn(resolved)
	transport, err := rt.dial(tctx, s, resolved, &p, sockets, rc)
	if err == nil {
		transport = s.strayGuard(transport)
	}
	if err != nil {
		return nil, nil, "", "", rt.connectFailed(s, failedAttempt{ctx: tctx, err: err, proc: p, remote: rc})
	}
	stray, _ := transport.(*strayTransport) // before the discover watch wraps it
	keeper := s.listenGuard(transport)
	if keeper != nil {
		transport = keeper
	}
	// A server/discover the server will not answer is answered by the
	// runtime and the handshake goes on (discoverWatch; stdio only: over
	// HTTP the status of the reply tells the eras apart).
	var dw *discoverWatch
	if p != nil && IsModern(version) && !s.learned(version) {
		dw = &discoverWatch{inner: transport, clock: rt.clock, timeout: rt.opts.ProbeTimeout,
			step: discoverStep(rt.opts.ProbeTimeout), unread: p.StdinUnread,
			expired: func() { s.learnProtocol(ProtocolLegacy, FallbackDiscoverUnanswered) }}
		transport = dw
	}
	if p != nil {
		// An immediate exit of the child ends the handshake at once instead
		// of at the connect timeout (endOnExit).
		var readEnded <-chan struct{}
		if stray != nil {
			readEnded = stray.readEnded.Done()
		}
		stop := endOnExit(p, readEnded, rt.clock, rt.stopGrace().Stdin, func() { tcancel(nil) })
		defer stop()
	}

	c := &connection{srv: s, gen: gen, proc: p, closing: make(chan struct{}), done: make(chan struct{}), remote: rc, lost: make(chan struct{})}
	if p == nil {
		c.sockets = sockets
	}
	if rc != nil {
		rc.conn = c
	}
	if keeper != nil {
		keeper.conn = c
	}
	c.stray = stray
	client := s.newClient(c) // handlers_client.go
	c.client = client
	cs, err := client.Connect(tctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	guessed := dw != nil && dw.stop()
	if guessed {
		version = ProtocolLegacy // go-sdk went on with initialize
	}
	if err != nil {
		sockets.closeAll()
		if guessed && dw.answeredLate() && pin == "" && !last && s.ctx.Err() == nil && cctx.Err() == nil {
			// A server of both eras slower than the probe timeout: its own
			// discover result came after the runtime's made-up reply, and
			// it refused the initialize that followed (a go-sdk server
			// takes an initialize after server/discover for a duplicate).
			// A new process asks the stateless revision, its discover no
			// longer bounded by the probe timeout: the server answers it.
			rt.endTry(s, p)
			return nil, nil, ProtocolModern, FallbackInitializeRefused, nil
		}
		if next, reason := fallbackFor(version, pin, err); next != "" && !last && s.ctx.Err() == nil && cctx.Err() == nil {
			rt.endTry(s, p)
			return nil, nil, next, reason, nil
		}
		if guessed {
			s.unlearnProtocol(ProtocolLegacy)
		}
		return nil, nil, "", "", rt.connectFailed(s, failedAttempt{ctx: tctx, err: err, proc: p, stray: c.stray, remote: rc})
	}
	c.cs = cs
	tools, hint, err := s.listToolsHinted(tctx, cs)
	c.toolsHint = hint
	if err != nil {
		if guessed {
			s.unlearnProtocol(ProtocolLegacy)
		}
		sockets.closeAll()
		closeSession(cs)
		return nil, nil, "", "", rt.connectFailed(s, failedAttempt{ctx: tctx, err: err, proc: p, stray: c.stray, remote: rc})
	}
	c.ctx, c.cancel = context.WithCancelCause(s.ctx)
	c.armWatch()
	if ir := cs.InitializeResult(); ir != nil {
		c.protocol = ir.ProtocolVersion
	}
	if rc != nil && pin == "" && IsModern(version) && c.protocol != "" && !IsModern(c.protocol) {
		// An http server refused server/discover and go-sdk went on with
		// initialize on the same connection: later attempts ask for the
		// handshake at once.
		s.learnProtocol(c.protocol, FallbackDiscoverRefused)
	}
	return c, tools, "", "", nil
}

// endTry stops the process of a try that ends in a fallback: a planned
// stop, since the runtime goes on with a new process.
func (rt *Runtime) endTry(s *server, p *proc.Process) {
	if p == nil {
		return
	}
	p.Stop(s.ctx, rt.stopGrace(), s.stopObserver(p))
	rt.events.Emit(s.name, event.ProcessExited, event.Int("pid", p.PID()), event.String("status", procStatus(p)), event.Bool("planned", true))
}

// endOnExit ends a handshake when the server process p exits: its stdout
// ends with it, and once the reader has taken what the process wrote before
// it exited (readEnded closes), go-sdk fails the request in flight by
// itself, so an answer written just before the exit is still delivered
// rather than lost to a cancellation racing it. Only when stdout outlives
// the process (a descendant holds it open) is the handshake cancelled,
// grace after the exit on clock c. stop ends the watch.
func endOnExit(p *proc.Process, readEnded <-chan struct{}, c clock.Clock, grace time.Duration, cancel func()) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-p.Done():
		case <-quit:
			return
		}
		t := c.NewTimer(grace)
		defer t.Stop()
		select {
		case <-readEnded:
		case <-t.C():
			cancel()
		case <-quit:
		}
	}()
	return func() { close(quit); <-done }
}

// failedAttempt is what a failed connect attempt leaves behind: the error
// that ended it and where to look for its real cause.
type failedAttempt struct {
	ctx    context.Context // the attempt's context (connect timeout)
	err    error           // what failed: the dial, the handshake or tools/list
	proc   *proc.Process   // the stdio server's process, or nil
	stray  *strayTransport // the stdio connection's transport (readfail.go), or nil
	remote *remoteConn     // the HTTP layer of a remote connection, or nil
}

// connectFailed ends a failed attempt: it stops the attempt's process, names
// the failure's cause (cause), records the stderr tail and emits
// server.failed. It returns the error the attempt fails with.
func (rt *Runtime) connectFailed(s *server, a failedAttempt) error {
	p := a.proc
	if s.ctx.Err() != nil {
		// The server is being closed; this is no failure of its own.
		if p != nil {
			p.Stop(s.ctx, rt.stopGrace(), s.stopObserver(p))
		}
		return ErrClosed
	}
	stderr := ""
	exitedByItself := false
	if p != nil {
		doneBefore := false
		select {
		case <-p.Done():
			doneBefore = true
		default:
		}
		signaled := false
		observe := s.stopObserver(p)
		p.Stop(context.Background(), rt.stopGrace(), func(step string) {
			signaled = signaled || step == proc.StepTerm || step == proc.StepKill
			observe(step)
		})
		st := p.Exit()
		// It ended by itself when it had before the failure was handled, or
		// when the failure was the end of the pipe (or the cancellation its
		// exit caused) and the stop needed no signal.
		ended := errors.Is(a.err, context.Canceled) || isConnectionError(a.err)
		exitedByItself = !signaled && (doneBefore || ended)
		stderr = p.StderrTail()
		s.mu.Lock()
		s.stderr = stderr
		s.stderrConn = nil
		s.mu.Unlock()
		rt.events.Emit(s.name, event.ProcessExited, event.Int("pid", p.PID()), event.String("status", st.String()), event.Bool("planned", false))
	}
	err := s.sessions.connectErr(a.remote, a.cause(exitedByItself))
	if stderr != "" {
		err = fmt.Errorf("%w\nstderr:\n%s", err, stderr)
	}
	s.emit(event.ServerFailed, event.String("transport", string(s.cfg.EffectiveType())), event.Err(err), event.String("stderr", stderr))
	return err
}

// cause names why the attempt failed, the first that applies:
//
//   - the stdout guard's failure (a line over the limit, wire), over what
//     go-sdk made of it;
//   - the connection's read failure (readfail.go);
//   - the connect timeout;
//   - the server process's exit, when it ended by itself (not by the stop
//     that followed the failure): the same words whichever of the exit and
//     the closed pipe the runtime saw first, and never the runtime's own
//     cancellation of the handshake that the exit caused;
//   - the attempt context's cause, unless the server answered with a
//     JSON-RPC error;
//   - the error itself.
//
// What a remote server's HTTP layer saw is added by the session strategy
// (sessions.go).
func (a failedAttempt) cause(exitedByItself bool) error {
	err := a.err
	if rf := readFailure(a.proc, a.stray); rf != nil {
		err = withReadFailure(err, rf)
	} else if te := (*clock.TimeoutError)(nil); errors.As(context.Cause(a.ctx), &te) {
		err = fmt.Errorf("%w (%v)", context.Cause(a.ctx), err)
	} else if exitedByItself {
		err = exitedError(a.proc, err)
	} else if cause := context.Cause(a.ctx); cause != nil && a.ctx.Err() != nil && !errors.As(err, new(*jsonrpc.Error)) {
		// A JSON-RPC error is the server's own answer (a refused
		// initialize): the exit that followed it does not hide it.
		err = cause
	}
	return stdoutCause(a.proc, err)
}

// exitedError says that p exited during the handshake, adding what go-sdk
// saw only when it is more than the end of the pipe or the cancellation
// the exit caused. %v, not %w: wrapping a cancellation would make a restart
// failure look like the caller's own abort (errors.Is(err,
// context.Canceled)) to the bridge and the driver.
func exitedError(p *proc.Process, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || isConnectionError(err) {
		return fmt.Errorf("server process exited during the handshake (%s)", p.Exit())
	}
	return fmt.Errorf("server process exited during the handshake (%s): %v", p.Exit(), err)
}

// stdoutCause prefers the stdout guard's failure over what go-sdk made of
// it (an EOF or a closed connection).
func stdoutCause(p *proc.Process, err error) error {
	if p == nil {
		return err
	}
	se := p.StdoutErr()
	if se == nil || errors.Is(err, wire.ErrTooLarge) {
		return err
	}
	if err == nil {
		return se
	}
	return fmt.Errorf("%w (%v)", se, err)
}

// dial makes the transport for one attempt; a stdio process is returned in
// *p. rc is the HTTP layer's state of a remote connection.
func (rt *Runtime) dial(ctx context.Context, s *server, r *config.Resolved, p **proc.Process, sockets *socketSet, rc *remoteConn) (mcp.Transport, error) {
	if rt.opts.Dial != nil {
		return rt.opts.Dial(ctx, s.cfg, r)
	}
	switch s.cfg.EffectiveType() {
	case config.Stdio:
		pr, err := proc.Start(s.stdoutSpec(proc.Spec{Command: s.cfg.Command, Args: s.cfg.Args, Env: r.Env, Dir: s.cfg.Cwd, Watcher: &rt.watcher}), rt.clock)
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
