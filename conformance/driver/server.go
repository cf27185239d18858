package driver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
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
// reference runtime (runtime/host) behind them.
//
// Serve returns after a shutdown request has been answered (nil), when in
// reaches EOF (nil), or when ctx is done (ctx's error). In every case it
// first closes the runtime, so no server process is left running, and waits
// for every goroutine it started — except that when ctx ends during a read
// that closing in (if it is an io.Closer) does not interrupt, such as a
// blocking stdin, that read's goroutine ends only when the read returns.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts ServeOptions) error {
	d := newDriver(ctx, opts, out)
	type read struct {
		line []byte
		err  error
	}
	// The reader reads one line per request on next, so that it is idle,
	// not blocked in a read, when Serve returns after shutdown or EOF.
	next := make(chan struct{})
	lines := make(chan read, 1)
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for range next {
			line, err := r.ReadBytes('\n')
			lines <- read{line, err}
			if err != nil {
				return
			}
		}
	}()
	defer close(next)
	for {
		next <- struct{}{}
		var rd read
		select {
		case rd = <-lines:
		case <-ctx.Done():
			if c, ok := in.(io.Closer); ok {
				_ = c.Close()
			}
			d.teardown()
			return ctx.Err()
		}
		if len(bytes.TrimSpace(rd.line)) > 0 {
			if d.dispatch(rd.line) {
				return nil
			}
		}
		if rd.err != nil {
			d.teardown()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(rd.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("driver: reading requests: %w", rd.err)
		}
	}
}

// driver is the state of one Serve.
type driver struct {
	opts ServeOptions
	log  *slog.Logger
	out  *lineWriter
	caps map[Capability]bool

	root       context.Context // Serve's ctx
	base       context.Context // ends at teardown: aborts calls, acquires, requests
	cancelBase context.CancelFunc
	wg         sync.WaitGroup

	mu       sync.Mutex
	closing  bool
	starting bool
	rt       *host.Runtime
	clk      clock.Clock
	fake     *clocktest.Fake // nil with the real clock
	origin   time.Time
	fwd      *forwarder
	sessions map[string]*host.Session // nil value: opening
	calls    map[string]*callEntry
	acquires map[string]*acquireEntry
}

type callEntry struct {
	cancel context.CancelCauseFunc
	done   bool
}

type acquireEntry struct {
	cancel  context.CancelCauseFunc
	release func()
	done    bool
}

// errCancelled is the cause of a call or acquire cancelled by the harness.
var errCancelled = errors.New("cancelled by the harness")

func newDriver(ctx context.Context, opts ServeOptions, out io.Writer) *driver {
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
	d := &driver{
		opts:     opts,
		log:      opts.Logger,
		out:      &lineWriter{w: out},
		caps:     map[Capability]bool{},
		root:     ctx,
		sessions: map[string]*host.Session{},
		calls:    map[string]*callEntry{},
		acquires: map[string]*acquireEntry{},
	}
	for _, c := range opts.Capabilities {
		d.caps[c] = true
	}
	d.base, d.cancelBase = context.WithCancel(ctx)
	return d
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// goRun runs f in a goroutine that teardown waits for.
func (d *driver) goRun(f func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
}

// runtime returns the runtime, or not_started.
func (d *driver) runtime() (*host.Runtime, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt == nil {
		return nil, rerr(CodeNotStarted, "start has not succeeded")
	}
	return d.rt, nil
}

// teardown cancels everything in flight, closes the runtime and waits for
// every goroutine; the remaining events are written.
func (d *driver) teardown() {
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return
	}
	d.closing = true
	d.mu.Unlock()
	d.cancelBase()

	// In-flight requests, calls and acquires end on the cancelled context;
	// the runtime's Close below unblocks anything that does not.
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(d.opts.ShutdownTimeout)
	select {
	case <-done:
	case <-timer.C:
		d.log.Warn("requests still running at shutdown; closing the runtime under them")
	}
	timer.Stop()

	d.mu.Lock()
	rt := d.rt
	var releases []func()
	for _, a := range d.acquires {
		if a.release != nil {
			releases = append(releases, a.release)
			a.release = nil
		}
	}
	d.mu.Unlock()
	for _, r := range releases {
		r()
	}
	if rt != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(d.root), d.opts.ShutdownTimeout)
		if err := rt.Close(ctx); err != nil {
			d.log.Warn("closing the runtime", "error", err)
		}
		cancel()
	}
	<-done
	d.mu.Lock()
	f := d.fwd
	d.mu.Unlock()
	if f != nil {
		f.stop()
	}
}
