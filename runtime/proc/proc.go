// Package proc owns the child process of a stdio MCP server.
//
// go-sdk's CommandTransport signals only the direct child, waits on real time
// and its Close can block. This package starts the child itself, in its own
// process group, and hands go-sdk an [mcp.IOTransport] over the pipes. Every
// wait that is runtime policy (the grace periods of [Process.Stop]) runs on
// the injected [clock.Clock], so tests drive it with a fake clock.
//
// # Exit detection
//
// The process's [Watcher] (watch.go: one goroutine for all the processes
// it watches, parked in the network poller) tells when the direct child
// has exited, without reaping it (a pidfd; waitid with WNOWAIT where
// pidfds are missing). While the child is an unreaped zombie its pid
// (which is also the process group id) cannot be reused, so the group can
// be killed safely: a goroutine sends SIGKILL to the whole group
// (grandchildren left behind by wrappers such as `npm exec` -> node, field
// failure 1), then reaps the child with cmd.Wait and closes Done. After
// that no signal is ever sent to the group id again.
//
// # Draining stdout and stderr after exit
//
// stdout and stderr are os.Pipe pipes whose write ends are passed to the child
// directly (no copying goroutine in os/exec) and closed in the parent right
// after Start, so EOF arrives as soon as every process holding a write end has
// gone. A grandchild that escaped the group (setsid) can hold a write end open
// forever, which would leave go-sdk's connection, and the calls in flight on it,
// hanging (field failures 3 and 10). Instead of a timed drain, the exit
// goroutine asks the kernel how many bytes the pipe holds (FIONREAD) once the
// group has been killed:
//
//   - if the pipe is empty, a read deadline in the past wakes any blocked
//     Read, and every Read from then on returns io.EOF;
//   - otherwise Reads continue while the pipe still holds data, and return
//     io.EOF the first time it is empty (or after a safety cap of the bytes
//     buffered at exit plus 1 MiB, against a chatty escaped writer).
//
// Everything the child wrote before it exited is still readable, EOF arrives
// without waiting on any clock, and nothing depends on the escaped process.
// The exit drains stderr the same way, reading what the pipe holds; Done
// is closed only after the stderr tail has been drained, so
// [Process.StderrTail] is complete once Done is.
package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/internal/latch"
	"github.com/mcplife/mcplife/runtime/internal/readbuf"
	"github.com/mcplife/mcplife/runtime/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultStderrLimit is the number of stderr bytes kept when Spec.StderrLimit
// is zero.
const DefaultStderrLimit = 8 << 10

// Spec describes the command to run.
type Spec struct {
	// Command is the program to run. A name without a slash is looked up in
	// the PATH of Env when Env sets one, otherwise in this process's PATH;
	// relative PATH entries are ignored.
	Command string
	// Args are the arguments after the command name.
	Args []string
	// Env is the child's full environment, already filtered by the caller.
	// A nil Env inherits this process's environment (as os/exec does).
	Env []string
	// Dir is the working directory; "" means this process's.
	Dir string
	// StderrLimit is how many bytes of the stderr tail are kept; zero or
	// less means DefaultStderrLimit.
	StderrLimit int
	// MaxLineLength bounds one stdout message or non-JSON line (see package
	// wire): 0 means wire.DefaultMaxMessageBytes, negative means no cap.
	MaxLineLength int
	// OnNoise is told about every non-JSON stdout line that was dropped.
	OnNoise func(wire.Noise)
	// OnTooLarge is told once when a stdout line exceeds MaxLineLength; the
	// connection then ends with that error.
	OnTooLarge func(*wire.TooLargeError)
	// Absorb, if set, is offered every small list_changed notification on
	// stdout before go-sdk decodes it (wire.Options.Absorb), with the
	// process it came from; returning true drops it.
	Absorb func(p *Process, method string) bool
	// Watcher, when set, watches the process together with the others it
	// watches: one goroutine for all of them (see Watcher). Nil gives the
	// process a Watcher of its own.
	Watcher *Watcher
}

// Stop steps, as reported to a StopObserver.
const (
	StepStdinClosed = "stdin-closed"
	StepTerm        = "SIGTERM"
	StepKill        = "SIGKILL"
)

// StopObserver is told about each step Stop takes, when it takes it.
type StopObserver func(step string)

// Grace bounds each wait of Stop. A zero field takes its value from
// DefaultGraceStep; a negative one means no wait at that step.
type Grace struct {
	// Stdin is how long to wait for the child to exit after stdin closed.
	Stdin time.Duration
	// Term is how long to wait after SIGTERM to the process group.
	Term time.Duration
	// Kill is how long to wait for the reap after SIGKILL before Stop gives
	// up and reports an error status.
	Kill time.Duration
}

// DefaultGraceStep is the wait used for a zero field of a Grace.
const DefaultGraceStep = 2 * time.Second

// WithDefaults returns g with every zero field set to DefaultGraceStep and
// every negative one to 0: the waits Stop takes.
func (g Grace) WithDefaults() Grace {
	pick := func(d, def time.Duration) time.Duration {
		switch {
		case d == 0:
			return def
		case d < 0:
			return 0
		}
		return d
	}
	return Grace{
		Stdin: pick(g.Stdin, DefaultGraceStep),
		Term:  pick(g.Term, DefaultGraceStep),
		Kill:  pick(g.Kill, DefaultGraceStep),
	}
}

// ErrRunning is the Err of the status returned by Exit before Done.
var ErrRunning = errors.New("proc: process still running")

// ExitStatus is how the direct child ended.
type ExitStatus struct {
	// Code is the exit code, or -1 if the child was killed by a signal or
	// its status is unknown.
	Code int
	// Signal names the signal that killed the child ("SIGKILL"), or "".
	Signal string
	// Err is set when the status could not be determined (for example Stop
	// gave up waiting after SIGKILL).
	Err error
}

// String returns e.g. "exit status 5" or "killed by SIGKILL".
func (s ExitStatus) String() string {
	switch {
	case s.Signal != "":
		return "killed by " + s.Signal
	case s.Err != nil:
		return s.Err.Error()
	}
	return "exit status " + strconv.Itoa(s.Code)
}

// Process is a running (or finished) child process.
type Process struct {
	name  string
	pid   int
	cmd   *exec.Cmd
	clock clock.Clock

	stdin  *pipeWriter
	stdout *drainReader
	guard  *wire.Reader // filters stdout for the transport
	stderr *drainReader
	tail   *tailBuffer

	done   *latch.Latch  // closed with Done
	waited chan struct{} // closed once cmd.Wait returned (before done)
	exit   ExitStatus    // written before done is closed

	mu        sync.Mutex
	reaped    bool       // the child is (about to be) reaped: never signal pid or -pid again
	claimed   bool       // Transport was called: the transport owns the stdout reader
	stepMu    sync.Mutex // held while a Stop step is taken and announced
	stdinStep bool       // the Stop steps already taken, each at most once
	termStep  bool
	killStep  bool
}

// Start starts spec's command in its own process group. The clock (nil means
// clock.Real) times Stop's grace periods.
func Start(spec Spec, c clock.Clock) (*Process, error) {
	if c == nil {
		c = clock.Real{}
	}
	if spec.Command == "" {
		return nil, errors.New("proc: start: empty command")
	}
	path, err := lookPath(spec.Command, spec.Env)
	if err != nil {
		return nil, fmt.Errorf("proc: start %q: %w", spec.Command, err)
	}

	var files []*os.File // every pipe end, for cleanup on failure
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("proc: start %q: %w", spec.Command, err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("proc: start %q: %w", spec.Command, err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("proc: start %q: %w", spec.Command, err)
	}

	cmd := &exec.Cmd{
		Path: path,
		Args: append([]string{spec.Command}, spec.Args...),
		Env:  spec.Env,
		Dir:  spec.Dir,
		// *os.File values are handed to the child as they are: os/exec
		// starts no copying goroutines.
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("proc: start %q: %w", spec.Command, err)
	}
	// The child has its copies; the parent keeps only its own ends, so that
	// EOF arrives when the child's side is gone.
	inR.Close()
	outW.Close()
	errW.Close()

	limit := spec.StderrLimit
	if limit <= 0 {
		limit = DefaultStderrLimit
	}
	maxLine := spec.MaxLineLength
	if maxLine == 0 {
		maxLine = wire.DefaultMaxMessageBytes
	}
	stdout := &drainReader{f: outR}
	p := &Process{
		name:   spec.Command,
		pid:    cmd.Process.Pid,
		cmd:    cmd,
		clock:  c,
		stdin:  &pipeWriter{f: inW},
		stdout: stdout,
		stderr: &drainReader{f: errR},
		tail:   newTailBuffer(limit),
		done:   latch.New(),
		waited: make(chan struct{}),
	}
	wopts := wire.Options{MaxMessageBytes: max(maxLine, 0), OnNoise: spec.OnNoise, OnTooLarge: spec.OnTooLarge}
	if spec.Absorb != nil {
		wopts.Absorb = func(method string) bool { return spec.Absorb(p, method) }
	}
	p.guard = wire.NewReader(stdout, wopts)
	wt := spec.Watcher
	if wt == nil {
		wt = new(Watcher)
	}
	w, err := newWatch(p, errR)
	if err == nil {
		if err = wt.add(w); err != nil {
			w.close()
		}
	}
	if err != nil {
		stderrDone := make(chan struct{})
		go p.copyStderr(stderrDone)
		go p.waitExit(stderrDone)
	}
	return p, nil
}

// PID returns the direct child's process id, which is also its process group
// id.
func (p *Process) PID() int { return p.pid }

// Transport returns a transport over the child's stdout, filtered by a
// wire.Reader, and its stdin: a wire.Transport, which takes whole messages
// from the filter instead of decoding the stream a second time as go-sdk's
// IOTransport does. Closing the connection made from it closes the stdout
// reader and stdin, so the child sees EOF. Connect it once.
func (p *Process) Transport() mcp.Transport {
	p.mu.Lock()
	p.claimed = true
	p.mu.Unlock()
	return &wire.Transport{Stdout: p.guard, Stdin: p.stdin}
}

// IOTransport returns go-sdk's IOTransport over the same filtered stdout and
// stdin, for comparison (BenchmarkStdioTransport): the stream is decoded
// by go-sdk's own encoding/json.Decoder with its line limit off. Connect
// either it or Transport, once.
func (p *Process) IOTransport() *mcp.IOTransport {
	p.mu.Lock()
	p.claimed = true
	p.mu.Unlock()
	return &mcp.IOTransport{Reader: p.guard, Writer: p.stdin, MaxLineLength: -1}
}

// StdoutErr returns the limit failure of the stdout filter (a
// *wire.TooLargeError), or nil.
func (p *Process) StdoutErr() error { return p.guard.Err() }

// Done is closed once the direct child has exited, its process group has
// been killed, it has been reaped and its stderr drained.
func (p *Process) Done() <-chan struct{} { return p.done.Done() }

// AfterDone arranges for f to be called once Done is closed: by the
// goroutine that closes it, or at once by the caller when Done is closed
// already. f must not block. A host that watches many processes can so
// wait for their ends without a goroutine each.
func (p *Process) AfterDone(f func()) { p.done.AfterFunc(f) }

// Exit returns how the child ended. Before Done it returns a status with
// Code -1 and Err ErrRunning.
func (p *Process) Exit() ExitStatus {
	select {
	case <-p.done.Done():
		return p.exit
	default:
		return ExitStatus{Code: -1, Err: ErrRunning}
	}
}

// StderrTail returns the last bytes the child wrote to stderr, trimmed of
// surrounding white space. It is safe to call at any time.
func (p *Process) StderrTail() string { return p.tail.String() }

// Stop ends the process: it closes stdin and waits up to g.Stdin for the
// child to exit, then sends SIGTERM to the process group and waits up to
// g.Term, then sends SIGKILL to the group and waits up to g.Kill for the
// reap. The waits run on the Process's clock. When ctx is done, Stop skips
// straight to SIGKILL. observe (may be nil) is told about each step as it is
// taken.
//
// Stop is idempotent and safe for concurrent use: each step is taken, and
// observed, at most once across all calls; every call returns when the child
// has been reaped or its own waits ran out. After a natural exit Stop returns
// at once. If the child is still not reaped g.Kill after SIGKILL, Stop returns
// a status with Code -1 and an Err rather than blocking; Done closes later.
// Once the child is gone Stop also closes stdin, and the stdout pipe when
// Transport was never called (otherwise closing the transport releases it).
func (p *Process) Stop(ctx context.Context, g Grace, observe StopObserver) ExitStatus {
	g = g.WithDefaults()
	if observe == nil {
		observe = func(string) {}
	}
	if p.isDone() {
		return p.finish()
	}

	// Each step is announced after its wait is armed, so an observer that
	// drives a fake clock can advance it as soon as it hears of the step.
	if p.await(ctx, g.Stdin, func() bool {
		first := p.takeStep(&p.stdinStep)
		p.stdin.Close()
		return first
	}, StepStdinClosed, observe) {
		return p.finish()
	}
	if ctx.Err() == nil {
		if p.await(ctx, g.Term, func() bool {
			return p.signalStep(&p.termStep, syscall.SIGTERM)
		}, StepTerm, observe) {
			return p.finish()
		}
	}
	if p.await(context.Background(), g.Kill, func() bool {
		return p.signalStep(&p.killStep, syscall.SIGKILL)
	}, StepKill, observe) {
		return p.finish()
	}
	return ExitStatus{Code: -1, Err: fmt.Errorf("proc: %s (pid %d) not reaped %v after SIGKILL", p.name, p.pid, g.Kill)}
}

func (p *Process) isDone() bool {
	select {
	case <-p.done.Done():
		return true
	default:
		return false
	}
}

// await takes one Stop step and waits up to d on the clock for the child to
// be reaped, or until ctx is done. It reports whether the child has been
// reaped. take performs the step and reports whether this call was the one
// to take it; if so, name is announced to observe once the wait is armed.
// Taking and announcing happen under stepMu, so that concurrent Stop calls
// announce the steps in the order they were taken: a call that skips ahead
// to SIGKILL cannot announce it before another call announced closing stdin.
func (p *Process) await(ctx context.Context, d time.Duration, take func() bool, name string, observe StopObserver) bool {
	p.stepMu.Lock()
	taken := take()
	var t clock.Timer
	if d > 0 && ctx.Err() == nil {
		t = p.clock.NewTimer(d)
	}
	if taken {
		observe(name)
	}
	p.stepMu.Unlock()
	if t != nil {
		select {
		case <-p.done.Done():
		case <-t.C():
		case <-ctx.Done():
		}
		t.Stop()
	}
	return p.isDone()
}

// finish releases the pipes Stop is responsible for once the child is gone.
func (p *Process) finish() ExitStatus {
	p.stdin.Close()
	p.mu.Lock()
	claimed := p.claimed
	p.mu.Unlock()
	if !claimed {
		p.stdout.Close()
	}
	return p.exit
}

// takeStep marks a Stop step as taken and reports whether this call took it.
func (p *Process) takeStep(flag *bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if *flag {
		return false
	}
	*flag = true
	return true
}

// signalStep sends sig to the process group (and the child itself) unless
// the step was already taken or the child is being reaped. It reports
// whether it sent the signal.
func (p *Process) signalStep(flag *bool, sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if *flag || p.reaped {
		return false
	}
	*flag = true
	_ = syscall.Kill(-p.pid, sig)
	_ = syscall.Kill(p.pid, sig) // in case the child left its group
	return true
}

// killGroup sends SIGKILL to whatever remains of the process group and marks
// the child as reaped, so that the group id is never signalled again.
func (p *Process) killGroup() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		p.reaped = true
	}
}

// exited finishes the process once its Watcher saw the child exit: it
// kills the group, reaps the child and drains stderr.
func (p *Process) exited(w *watch) {
	// The child is an unreaped zombie: its pid, and with it the group id,
	// stays ours while the group is killed.
	p.killGroup()
	err := p.cmd.Wait()
	close(p.waited)
	p.stdout.markExited()
	w.drainStderr(p.tail)
	w.close()
	p.stderr.Close()
	p.exit = statusOf(p.cmd.ProcessState, err)
	p.done.Close()
}

// watchFailed hands the process over to copyStderr and waitExit: its
// Watcher could not tell its exit.
func (p *Process) watchFailed(w *watch) {
	w.close()
	stderrDone := make(chan struct{})
	go p.copyStderr(stderrDone)
	p.waitExit(stderrDone)
}

// waitExit runs until the child is reaped; see the package documentation.
func (p *Process) waitExit(stderrDone <-chan struct{}) {
	// waitid with WNOWAIT leaves the child a zombie, so that its pid, and
	// with it the group id, stays ours while the group is killed.
	exitedUnreaped := waitNoReap(p.pid) == nil
	if exitedUnreaped {
		p.killGroup()
	}
	err := p.cmd.Wait()
	close(p.waited)
	if !exitedUnreaped {
		// waitid failed (it should not on Linux): kill the orphans now,
		// accepting the tiny window in which the group id could be reused.
		p.killGroup()
	}
	p.stdout.markExited()
	p.stderr.markExited()
	<-stderrDone
	p.exit = statusOf(p.cmd.ProcessState, err)
	p.done.Close()
}

func statusOf(ps *os.ProcessState, err error) ExitStatus {
	if ps == nil {
		if err == nil {
			err = errors.New("proc: no process state")
		}
		return ExitStatus{Code: -1, Err: err}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: -1, Signal: SignalName(ws.Signal())}
	}
	var st ExitStatus
	st.Code = ps.ExitCode()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		st.Err = err
	}
	return st
}

func (p *Process) copyStderr(done chan<- struct{}) {
	defer close(done)
	defer p.stderr.Close()
	// An idle server's copy holds the buffer in a blocked Read for the
	// process's life (readbuf).
	rb := readbuf.New(1<<10, 32<<10)
	n := 0
	for {
		buf := rb.Next(n)
		var err error
		n, err = p.stderr.Read(buf)
		p.tail.Write(buf[:n])
		if err != nil {
			return
		}
	}
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP:  "SIGHUP",
	syscall.SIGINT:  "SIGINT",
	syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL:  "SIGILL",
	syscall.SIGTRAP: "SIGTRAP",
	syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS:  "SIGBUS",
	syscall.SIGFPE:  "SIGFPE",
	syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1",
	syscall.SIGSEGV: "SIGSEGV",
	syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGALRM: "SIGALRM",
	syscall.SIGTERM: "SIGTERM",
	syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ",
	syscall.SIGSYS:  "SIGSYS",
}

// SignalName names s the way events and journals write it: "SIGTERM" for
// syscall.SIGTERM, and "signal N" for a signal without a conventional name.
func SignalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}

// lookPath finds name in the PATH of env, or of this process when env sets
// none. Names with a slash are returned as they are.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathList, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			pathList, ok = v, true // the last one wins, as in os/exec
		}
	}
	if !ok {
		pathList = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			continue
		}
		cand := filepath.Join(dir, name)
		if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", exec.ErrNotFound
}
