package host

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
	"github.com/mcplife/mcplife/runtime/toolcache"
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
	// installed and lossTaken are guarded by srv.mu: attempt installed
	// the connection as the server's, and connectionLost took its
	// unplanned end. An end that races with the install is reported
	// twice (by watch and by attempt); only the first report is handled.
	installed bool
	lossTaken bool

	// ctx ends when the connection ends; calls in flight derive from it so
	// they fail at once when the server goes away.
	ctx    context.Context
	cancel context.CancelCauseFunc

	protocol string // negotiated protocol version
	// toolsHint is the cache hint of the tools/list made at connect
	// (cachehints.go), whatever the era; hintFor applies the era.
	toolsHint toolcache.Hint

	mu        sync.Mutex
	planned   bool
	ended     bool
	lostCause error         // why an unplanned end happened (watch)
	closing   chan struct{} // closed by close()
	done      chan struct{} // closed when watch returns
	closed    sync.Once
	watching  sync.Once // startWatch
}

// startWatch starts the watch of c, once. A remote connection's starts
// with the connection. A stdio connection's starts when there is
// something to watch: its reads ended (every end of the server ends them:
// the process's stdout reader returns EOF once the process has exited),
// its process exited, or it is being closed; until then a live stdio
// server costs no goroutine of the runtime's.
func (c *connection) startWatch() {
	c.watching.Do(func() { c.srv.rt.goRun(c.watch) })
}

// armWatch starts the watch of c at once, or, for a stdio connection, on
// the first sign of its end (startWatch).
func (c *connection) armWatch() {
	if c.proc == nil || c.remote != nil || c.stray == nil {
		c.startWatch()
		return
	}
	c.stray.readEnded.AfterFunc(c.startWatch)
	c.proc.AfterDone(c.startWatch)
}

// unplannedEnd returns why the connection ended when watch saw it end
// without being asked to, and nil otherwise.
func (c *connection) unplannedEnd() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended || c.planned {
		return nil
	}
	return c.lostCause
}

// closeSession closes cs without waiting on a hung peer forever: calls in
// flight were cancelled before, so Close returns once the transport is gone.
func closeSession(cs *mcp.ClientSession) { _ = cs.Close() }

// watch waits for the connection to end and reports an unplanned end.
//
// go-sdk tells the end of a session only by returning from Wait, which
// takes a goroutine. A stdio connection starts it once a read has failed
// (strayTransport.readEnded: go-sdk ends a session only after its reads
// end), and its watch itself starts only on a sign of the end
// (startWatch), so a live stdio server costs no goroutine for either.
func (c *connection) watch() {
	defer close(c.done)
	ended := make(chan error, 1)
	waiting := false
	startWait := func() {
		if !waiting {
			waiting = true
			go func() { ended <- c.cs.Wait() }()
		}
	}
	var readEnded <-chan struct{}
	if c.stray != nil {
		readEnded = c.stray.readEnded.Done()
	} else {
		startWait()
	}
	var cause error
	var procDone <-chan struct{}
	if c.proc != nil {
		procDone = c.proc.Done()
	}
	waited := false
wait:
	for {
		select {
		case <-readEnded:
			readEnded = nil
			startWait()
			continue
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
		case <-c.remote.listenEnded():
			// A stateless connection has no GET stream whose end go-sdk
			// would report: the listen stream's end says the server went
			// away (listen.go).
			cause = c.remote.listenFailure()
		case <-c.closing:
			startWait()
			<-ended
			return
		}
		break wait
	}
	cause = stdoutCause(c.proc, withReadFailure(cause, readFailure(c.proc, c.stray)))
	cause = withReadFailure(cause, c.remote.boundFailure())
	c.mu.Lock()
	planned := c.planned
	c.ended = true
	c.lostCause = cause
	c.mu.Unlock()
	c.cancel(fmt.Errorf("%w: %w", ErrConnectionLost, cause))
	if !planned {
		c.srv.connectionLost(c, cause)
	} else {
		c.markLost()
	}
	// Reap the session and whatever is left of the process.
	closeSession(c.cs)
	if c.proc != nil {
		c.proc.Stop(c.srv.ctx, c.srv.rt.stopGrace(), c.srv.stopObserver(c.proc))
		c.srv.refreshStderr(c)
		c.srv.rt.events.Emit(c.srv.name, event.ProcessExited, event.Int("pid", c.proc.PID()), event.String("status", procStatus(c.proc)), event.Bool("planned", planned)) // once reaped: the status as it was (issue 31)
	}
	if !waited {
		startWait()
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
		c.startWatch()
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

// stopObserver emits process.signaled for each step of stopping p.
func (s *server) stopObserver(p *proc.Process) proc.StopObserver {
	return func(step string) {
		s.emit(event.ProcessSignaled, event.Int("pid", p.PID()), event.String("step", step))
	}
}
