package driver

import (
	"context"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/host"
)

// DefaultShutdownTimeout bounds, in real time, how long shutdown waits for
// the runtime to stop gracefully before it kills the remaining processes.
const DefaultShutdownTimeout = 5 * time.Second

// ServeOptions configures Serve.
type ServeOptions struct {
	// Implementation is what hello reports; the zero value means
	// {"mcplife", <module version>}.
	Implementation Implementation
	// Capabilities, when not nil, replaces the announced capabilities
	// (every capability by default). Methods needing a capability that is
	// not announced answer "unsupported".
	Capabilities []Capability
	// Profiles, when not nil, replaces the claimed profiles (every profile
	// by default).
	Profiles []Profile
	// Eras, when not nil, replaces the announced MCP protocol eras (every
	// era by default: the reference runtime speaks both).
	Eras []Era
	// Configure, when set, may change the runtime options the driver built
	// from start's params just before the runtime is created. The
	// conformance suite uses it to build deliberately broken variants.
	// Clock is the driver's: replacing it detaches the runtime from
	// clock.advance. Events may be replaced; the driver streams whichever
	// recorder is set when Configure returns.
	Configure func(p *StartParams, o *host.Options) error
	// Logger receives the driver's and the runtime's logs; nil discards
	// them.
	Logger *slog.Logger
	// ShutdownTimeout bounds, in real time, the graceful part of shutdown;
	// zero means DefaultShutdownTimeout. Processes still running then are
	// killed.
	ShutdownTimeout time.Duration
}

// Serve runs the reference driver: it reads requests from in and writes
// response, event, call_result and acquire_result lines to out, with the
// reference runtime (runtime/host) behind them. It is a Conn serving the
// reference driver's Handlers, so the protocol's rules are Conn's.
//
// Serve returns after a shutdown request has been answered (nil), when in
// reaches EOF (nil), or when ctx is done (ctx's error). In every case it
// first closes the runtime, so no server process is left running, and waits
// for every goroutine it started — except that when ctx ends during a read
// that closing in (if it is an io.Closer) does not interrupt, such as a
// blocking stdin, that read's goroutine ends only when the read returns.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts ServeOptions) error {
	d := newDriver(opts)
	c := NewConn(out, &ConnOptions{Logger: d.log, ShutdownTimeout: d.opts.ShutdownTimeout})
	d.conn = c
	c.flushHook = d.flushEvents
	c.finishHook = d.stopEvents
	return c.Serve(ctx, in, d.handlers())
}

// driver is the state of one Serve: the reference runtime and what the
// protocol names in it.
type driver struct {
	opts ServeOptions
	log  *slog.Logger
	conn *Conn

	mu       sync.Mutex
	rt       *host.Runtime
	clk      clock.Clock
	fake     *clocktest.Fake    // nil with the real clock
	tracked  *clocktest.Tracked // nil with the virtual clock
	origin   time.Time
	fwd      *forwarder
	sessions map[string]*host.Session // nil value: opening
}

func newDriver(opts ServeOptions) *driver {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Implementation.Name == "" {
		opts.Implementation = Implementation{Name: "mcplife", Version: moduleVersion()}
	}
	if opts.Capabilities == nil {
		// Every capability, pending-timers included: the runtime waits on
		// nothing but its injected clock (go-sdk's own timers are not on
		// its client path: reconnection is off, MaxRetries -1, and so is
		// keep-alive), so on the real clock the tracked clock lists them
		// all.
		for _, c := range Capabilities() {
			opts.Capabilities = append(opts.Capabilities, c.Name)
		}
	}
	if opts.Profiles == nil {
		for _, p := range Profiles() {
			opts.Profiles = append(opts.Profiles, p.Name)
		}
	}
	if opts.Eras == nil {
		for _, e := range Eras() {
			opts.Eras = append(opts.Eras, e.Name)
		}
	}
	return &driver{
		opts:     opts,
		log:      opts.Logger,
		sessions: map[string]*host.Session{},
	}
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// runtime returns the runtime, or not_started (which Conn answers before
// calling a handler; this is a safety net).
func (d *driver) runtime() (*host.Runtime, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt == nil {
		return nil, rerr(CodeNotStarted, "start has not succeeded")
	}
	return d.rt, nil
}

// shutdown closes the runtime (Handlers.Shutdown): Conn has cancelled
// and waited for what was in flight and released held acquires.
//
// shutdown never waits on the virtual clock (DRIVER.md): once ctx, its
// real-time bound, has ended, every wait the runtime arms on the driver's
// fake clock runs out at once. The runtime's Close skips to SIGKILL when
// ctx ends, but waits for the reap on its clock, which nobody advances
// after shutdown.
func (d *driver) shutdown(ctx context.Context) {
	d.mu.Lock()
	rt, fake := d.rt, d.fake
	d.mu.Unlock()
	if rt == nil {
		return
	}
	closed := make(chan error, 1)
	go func() { closed <- rt.Close(ctx) }()
	var err error
	select {
	case err = <-closed:
	case <-ctx.Done():
		if fake != nil {
			done, stop := context.WithCancel(context.Background())
			defer stop()
			go runOutClock(done, fake)
		}
		err = <-closed
	}
	if err != nil {
		d.log.Warn("closing the runtime", "error", err)
	}
}

// runOutClock fires every timer fake holds or gets, one deadline after
// the other, until ctx ends.
func runOutClock(ctx context.Context, fake *clocktest.Fake) {
	for fake.WaitFor(ctx, func(pending []time.Duration) bool { return len(pending) > 0 }) == nil {
		fake.AdvanceToNext()
	}
}

// flushEvents hands every event emitted so far to the writer: each is
// written, or held to go out with the next line.
func (d *driver) flushEvents() {
	d.mu.Lock()
	f := d.fwd
	d.mu.Unlock()
	if f != nil {
		f.flush()
	}
}

// stopEvents writes the remaining events and ends the forwarder.
func (d *driver) stopEvents() {
	d.mu.Lock()
	f := d.fwd
	d.mu.Unlock()
	if f != nil {
		f.stop()
	}
}
