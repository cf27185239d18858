package driver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
)

// ErrDriverExited is returned for requests and waits that cannot complete
// because the driver's output ended.
var ErrDriverExited = errors.New("driver: the driver's output ended")

// Client is the harness side of the protocol: it sends requests to one
// driver and keeps everything the driver sent, so tests can await events,
// call results and acquire results. It is safe for concurrent use; several
// requests may be outstanding at once (responses are matched by id).
type Client struct {
	w   io.WriteCloser
	wmu sync.Mutex

	readDone chan struct{} // closed when the reader has seen the end of the output
	exited   chan struct{} // closed when the driver has ended
	exitErr  error         // set before exited is closed
	kill     func()        // ends the driver at once
	pid      int           // the driver's process (StartCommand); 0 in-process
	stopKill func() bool   // stops the ctx watch of StartCommand/StartInProcess

	mu         sync.Mutex
	changed    chan struct{}
	nextID     int64
	pending    map[int64]*PendingRequest
	abandoned  map[int64]bool
	events     []event.Event
	lastSeq    uint64
	calls      map[string]CallResult
	acquires   map[string]AcquireResult
	unmatched  []Response
	transcript []TranscriptLine
	problems   []error
	readErr    error
	hello      *HelloResult
	shutdown   bool

	closeOnce sync.Once
	closeErr  error
}

func newClient(w io.WriteCloser) *Client {
	return &Client{
		w:         w,
		readDone:  make(chan struct{}),
		exited:    make(chan struct{}),
		changed:   make(chan struct{}),
		nextID:    1,
		pending:   map[int64]*PendingRequest{},
		abandoned: map[int64]bool{},
		calls:     map[string]CallResult{},
		acquires:  map[string]AcquireResult{},
	}
}

// StartCommand runs an external driver process: argv is its command line,
// env its environment (nil inherits this process's) and stderr receives its
// stderr (nil discards it). The driver runs in its own process group; when
// ctx ends, the group is killed.
func StartCommand(ctx context.Context, argv []string, env []string, stderr io.Writer) (*Client, error) {
	if len(argv) == 0 {
		return nil, errors.New("driver: StartCommand: empty command line")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = outW
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("driver: starting %s: %w", argv[0], err)
	}
	outW.Close()
	c := newClient(stdin)
	pid := cmd.Process.Pid
	c.pid = pid
	c.kill = func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
	}
	go c.read(outR)
	go func() {
		err := cmd.Wait()
		<-c.readDone
		outR.Close()
		if err != nil {
			err = fmt.Errorf("driver: %s: %w", argv[0], err)
		}
		c.exitErr = err
		close(c.exited)
	}()
	c.stopKill = context.AfterFunc(ctx, c.kill)
	return c, nil
}

// Pid returns the process id of a driver started with StartCommand, or 0
// for one that runs in this process.
func (c *Client) Pid() int { return c.pid }

// StartInProcess runs Serve in this process over a pair of pipes. When ctx
// ends, Serve is cancelled.
func StartInProcess(ctx context.Context, opts ServeOptions) (*Client, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sctx, cancel := context.WithCancel(ctx)
	c := newClient(inW)
	c.kill = cancel
	go c.read(outR)
	go func() {
		err := Serve(sctx, inR, outW, opts)
		inR.Close()
		outW.Close()
		<-c.readDone
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			err = fmt.Errorf("driver: Serve: %w", err)
		} else if err != nil {
			err = fmt.Errorf("driver: Serve was cancelled: %w", err)
		}
		c.exitErr = err
		close(c.exited)
	}()
	c.stopKill = func() bool { return true }
	return c, nil
}

// notifyLocked wakes every waiter; c.mu must be held.
func (c *Client) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Client) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Errorf(format, args...))
}

// read consumes the driver's output until it ends.
func (c *Client) read(r io.Reader) {
	defer close(c.readDone)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			c.handle(bytes.Clone(t))
		}
		if err != nil {
			c.mu.Lock()
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) {
				c.readErr = ErrDriverExited
			} else {
				c.readErr = fmt.Errorf("%w: %w", ErrDriverExited, err)
			}
			c.notifyLocked()
			c.mu.Unlock()
			return
		}
	}
}

// handle records one line of driver output.
func (c *Client) handle(line []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notifyLocked()
	c.transcript = append(c.transcript, TranscriptLine{Dir: Received, Line: line})
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		c.problem("driver wrote a line that is not a JSON object: %.200s", line)
		return
	}
	switch head.Type {
	case TypeResponse:
		var resp Response
		if err := json.Unmarshal(line, &resp); err != nil {
			c.problem("bad response line %.200s: %v", line, err)
			return
		}
		if resp.ID != nil {
			if p, ok := c.pending[*resp.ID]; ok {
				delete(c.pending, *resp.ID)
				p.ch <- resp
				return
			}
			if c.abandoned[*resp.ID] {
				delete(c.abandoned, *resp.ID)
				return
			}
		}
		c.unmatched = append(c.unmatched, resp)
	case TypeEvent:
		var el EventLine
		if err := json.Unmarshal(line, &el); err != nil {
			c.problem("bad event line %.200s: %v", line, err)
			return
		}
		if el.Event.Seq <= c.lastSeq {
			c.problem("event seq %d after seq %d: seqs must increase", el.Event.Seq, c.lastSeq)
		}
		c.lastSeq = max(c.lastSeq, el.Event.Seq)
		c.events = append(c.events, el.Event)
	case TypeCallResult:
		var cl CallResultLine
		if err := json.Unmarshal(line, &cl); err != nil {
			c.problem("bad call_result line %.200s: %v", line, err)
			return
		}
		if _, dup := c.calls[cl.CallID]; dup {
			c.problem("second call_result for call %q", cl.CallID)
			return
		}
		c.calls[cl.CallID] = CallResult{CallID: cl.CallID, Result: cl.Result, Error: cl.Error}
	case TypeAcquireResult:
		var al AcquireResultLine
		if err := json.Unmarshal(line, &al); err != nil {
			c.problem("bad acquire_result line %.200s: %v", line, err)
			return
		}
		if _, dup := c.acquires[al.AcquireID]; dup {
			c.problem("second acquire_result for acquire %q", al.AcquireID)
			return
		}
		c.acquires[al.AcquireID] = AcquireResult{AcquireID: al.AcquireID, OK: al.OK, Error: al.Error}
	default:
		c.problem("driver wrote a line of unknown type %q", head.Type)
	}
}

// PendingRequest is a request sent with Send whose response may not have
// arrived yet.
type PendingRequest struct {
	c      *Client
	ID     int64
	Method string
	ch     chan Response
}

// Send writes a request and returns at once; Wait collects the response.
// params may be nil (no params). Use it to keep a request outstanding while
// advancing the virtual clock, e.g. session.open at a startup gate.
func (c *Client) Send(ctx context.Context, method string, params any) (*PendingRequest, error) {
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("driver: %s: encoding params: %w", method, err)
		}
		raw = b
	}
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return nil, fmt.Errorf("driver: %s: %w", method, err)
	}
	id := c.nextID
	c.nextID++
	p := &PendingRequest{c: c, ID: id, Method: method, ch: make(chan Response, 1)}
	line, err := json.Marshal(Request{ID: id, Method: method, Params: raw})
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.pending[id] = p
	c.transcript = append(c.transcript, TranscriptLine{Dir: Sent, Line: line})
	c.mu.Unlock()
	if err := c.writeLine(ctx, line); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("driver: %s: %w", method, err)
	}
	return p, nil
}

// writeLine writes one line; ctx bounds waiting for the writer lock only.
func (c *Client) writeLine(ctx context.Context, line []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(line, '\n'))
	return err
}

// SendLine writes line as is (plus a newline), for tests of malformed
// input. Its response, if any, is collected with AwaitUnmatched.
func (c *Client) SendLine(ctx context.Context, line []byte) error {
	c.mu.Lock()
	c.transcript = append(c.transcript, TranscriptLine{Dir: Sent, Line: bytes.Clone(line), Raw: true})
	c.mu.Unlock()
	return c.writeLine(ctx, line)
}

// Wait waits for the response and decodes its result into result (may be
// nil). An error response is returned as a *RemoteError.
func (p *PendingRequest) Wait(ctx context.Context, result any) error {
	c := p.c
	var resp Response
	select {
	case resp = <-p.ch:
	case <-ctx.Done():
		c.mu.Lock()
		if _, ok := c.pending[p.ID]; ok {
			delete(c.pending, p.ID)
			c.abandoned[p.ID] = true
		}
		c.mu.Unlock()
		select {
		case resp = <-p.ch:
		default:
			return fmt.Errorf("driver: %s: waiting for the response: %w", p.Method, context.Cause(ctx))
		}
	case <-c.readDone:
		select {
		case resp = <-p.ch:
		default:
			return fmt.Errorf("driver: %s: no response: %w", p.Method, ErrDriverExited)
		}
	}
	if resp.Error != nil {
		e := *resp.Error
		e.Method = p.Method
		return &e
	}
	if result != nil {
		if err := json.Unmarshal(resp.Result, result); err != nil {
			return fmt.Errorf("driver: %s: decoding the result: %w", p.Method, err)
		}
	}
	return nil
}

// Request sends a request and waits for its response, decoding the result
// into result (may be nil). An error response is returned as a
// *RemoteError.
func (c *Client) Request(ctx context.Context, method string, params, result any) error {
	p, err := c.Send(ctx, method, params)
	if err != nil {
		return err
	}
	return p.Wait(ctx, result)
}

// wait blocks until cond (run under c.mu) reports done, the driver's output
// ends, or ctx is done.
func (c *Client) wait(ctx context.Context, what string, cond func() bool) error {
	for {
		c.mu.Lock()
		ok := cond()
		ch, readErr := c.changed, c.readErr
		c.mu.Unlock()
		if ok {
			return nil
		}
		if readErr != nil {
			return fmt.Errorf("driver: awaiting %s: %w", what, readErr)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("driver: awaiting %s: %w", what, context.Cause(ctx))
		}
	}
}

// Outstanding returns the methods of the requests sent and not answered
// yet, oldest first.
func (c *Client) Outstanding() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := slices.Sorted(maps.Keys(c.pending))
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = c.pending[id].Method
	}
	return out
}

// Results returns how many call_result and acquire_result lines arrived.
func (c *Client) Results() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls) + len(c.acquires)
}

// Events returns every event received so far, in order.
func (c *Client) Events() []event.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event.Event(nil), c.events...)
}

// Last returns the seq of the latest event received, for Await's after.
func (c *Client) Last() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastSeq
}

// Await returns the first received event with seq greater than after that
// matches m: it checks the history first, then waits.
func (c *Client) Await(ctx context.Context, after uint64, m event.Matcher) (event.Event, error) {
	var found event.Event
	err := c.wait(ctx, m.String(), func() bool {
		for _, e := range c.events {
			if e.Seq > after && m.Match(e) {
				found = e
				return true
			}
		}
		return false
	})
	return found, err
}

// Count returns how many received events match m.
func (c *Client) Count(m event.Matcher) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.events {
		if m.Match(e) {
			n++
		}
	}
	return n
}

// CallResult returns the call_result of callID, if it has arrived.
func (c *Client) CallResult(id string) (CallResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.calls[id]
	return r, ok
}

// AwaitCall waits for the call_result of callID.
func (c *Client) AwaitCall(ctx context.Context, id string) (CallResult, error) {
	var r CallResult
	err := c.wait(ctx, "call_result "+id, func() bool {
		var ok bool
		r, ok = c.calls[id]
		return ok
	})
	return r, err
}

// AcquireResult returns the acquire_result of acquireID, if it has arrived.
func (c *Client) AcquireResult(id string) (AcquireResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.acquires[id]
	return r, ok
}

// AwaitAcquire waits for the acquire_result of acquireID.
func (c *Client) AwaitAcquire(ctx context.Context, id string) (AcquireResult, error) {
	var r AcquireResult
	err := c.wait(ctx, "acquire_result "+id, func() bool {
		var ok bool
		r, ok = c.acquires[id]
		return ok
	})
	return r, err
}

// AwaitUnmatched waits for a response that answers no outstanding request
// of this client (a reply to SendLine, or one with a null id) and matches
// pred (nil matches any).
func (c *Client) AwaitUnmatched(ctx context.Context, pred func(Response) bool) (Response, error) {
	var found Response
	err := c.wait(ctx, "an unmatched response", func() bool {
		for _, r := range c.unmatched {
			if pred == nil || pred(r) {
				found = r
				return true
			}
		}
		return false
	})
	return found, err
}

// Transcript returns every line exchanged so far, in order.
func (c *Client) Transcript() []TranscriptLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]TranscriptLine(nil), c.transcript...)
}

// Problems returns the protocol violations seen in the driver's output:
// lines that are not JSON or of no known type, event seqs that do not
// increase, duplicate results.
func (c *Client) Problems() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.problems...)
}

// HelloResult returns the result of the last successful Hello, or nil.
func (c *Client) HelloResult() *HelloResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hello
}

// ---- typed helpers ----

// Hello exchanges protocol versions. It fails with a *VersionError when the
// driver speaks another version, and with an error when the driver
// announces capabilities or profiles outside the vocabulary or claims a
// profile without its required capabilities.
func (c *Client) Hello(ctx context.Context) (*HelloResult, error) {
	var h HelloResult
	if err := c.Request(ctx, MethodHello, HelloParams{Protocol: ProtocolVersion}, &h); err != nil {
		return nil, err
	}
	if err := h.validate(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.hello = &h
	c.mu.Unlock()
	return &h, nil
}

// Start creates the runtime.
func (c *Client) Start(ctx context.Context, p StartParams) error {
	return c.Request(ctx, MethodStart, p, nil)
}

// OpenSession opens a session and returns its start report. It waits for
// the startup gate; with the virtual clock, use Send to advance the clock
// meanwhile.
func (c *Client) OpenSession(ctx context.Context, name string) (*StartReport, error) {
	var r SessionOpenResult
	if err := c.Request(ctx, MethodSessionOpen, SessionParams{Session: name}, &r); err != nil {
		return nil, err
	}
	return &r.Report, nil
}

// CloseSession closes a session.
func (c *Client) CloseSession(ctx context.Context, name string) error {
	return c.Request(ctx, MethodSessionClose, SessionParams{Session: name}, nil)
}

// Tools lists a session's tools.
func (c *Client) Tools(ctx context.Context, session string) ([]Tool, error) {
	var r ToolsListResult
	if err := c.Request(ctx, MethodToolsList, SessionParams{Session: session}, &r); err != nil {
		return nil, err
	}
	return r.Tools, nil
}

// CallTool starts a tool call; collect its outcome with AwaitCall.
func (c *Client) CallTool(ctx context.Context, p ToolCallParams) error {
	var r AcceptedResult
	if err := c.Request(ctx, MethodToolCall, p, &r); err != nil {
		return err
	}
	if !r.Accepted {
		return fmt.Errorf("driver: tool.call %s: not accepted", p.CallID)
	}
	return nil
}

// Cancel aborts a tool call. It reports whether the call was still running.
func (c *Client) Cancel(ctx context.Context, callID string) (bool, error) {
	var r CancelResult
	err := c.Request(ctx, MethodToolCancel, CancelParams{CallID: callID}, &r)
	return r.Running, err
}

// Acquire starts acquiring a shared server; collect the outcome with
// AwaitAcquire.
func (c *Client) Acquire(ctx context.Context, acquireID, server string) error {
	var r AcceptedResult
	if err := c.Request(ctx, MethodAcquire, AcquireParams{AcquireID: acquireID, Server: server}, &r); err != nil {
		return err
	}
	if !r.Accepted {
		return fmt.Errorf("driver: acquire %s: not accepted", acquireID)
	}
	return nil
}

// Release releases an acquired server, or cancels a pending acquire.
func (c *Client) Release(ctx context.Context, acquireID string) error {
	return c.Request(ctx, MethodRelease, ReleaseParams{AcquireID: acquireID}, nil)
}

// Status returns the status of every configured server.
func (c *Client) Status(ctx context.Context) ([]ServerStatus, error) {
	var r StatusResult
	if err := c.Request(ctx, MethodStatus, nil, &r); err != nil {
		return nil, err
	}
	return r.Servers, nil
}

// Reload disconnects everything, rediscovers and reconnects.
func (c *Client) Reload(ctx context.Context) error {
	return c.Request(ctx, MethodReload, nil, nil)
}

// Disconnect stops a server on purpose.
func (c *Client) Disconnect(ctx context.Context, server string) error {
	return c.Request(ctx, MethodServerDisconnect, ServerParams{Server: server}, nil)
}

// Advance advances the virtual clock by d (whole milliseconds) and returns
// the clock's new offset.
func (c *Client) Advance(ctx context.Context, d time.Duration) (time.Duration, error) {
	var r ClockResult
	if err := c.Request(ctx, MethodClockAdvance, AdvanceParams{Ms: d.Milliseconds()}, &r); err != nil {
		return 0, err
	}
	return time.Duration(r.NowMs) * time.Millisecond, nil
}

// Now returns the offset of the implementation's clock.
func (c *Client) Now(ctx context.Context) (time.Duration, error) {
	var r ClockResult
	if err := c.Request(ctx, MethodClockNow, nil, &r); err != nil {
		return 0, err
	}
	return time.Duration(r.NowMs) * time.Millisecond, nil
}

// Pending returns the time left until each pending timer of the virtual
// clock fires, soonest first.
func (c *Client) Pending(ctx context.Context) ([]time.Duration, error) {
	var r PendingResult
	if err := c.Request(ctx, MethodClockPending, nil, &r); err != nil {
		return nil, err
	}
	return r.durations(), nil
}

// PendingTimers returns the time left until each pending timer of the
// implementation fires on the real clock, soonest first (timers.pending,
// capability pending-timers).
func (c *Client) PendingTimers(ctx context.Context) ([]time.Duration, error) {
	var r PendingResult
	if err := c.Request(ctx, MethodTimersPending, nil, &r); err != nil {
		return nil, err
	}
	return r.durations(), nil
}

// Shutdown asks the driver to close everything; it returns once the driver
// answered (the driver then exits). Close calls it.
func (c *Client) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	c.shutdown = true
	c.mu.Unlock()
	return c.Request(ctx, MethodShutdown, nil, nil)
}

// Kill ends the driver at once, without a shutdown request: its process
// group is killed (a driver in this process is cancelled). It returns when
// the driver has exited.
func (c *Client) Kill() {
	c.kill()
	<-c.exited
	c.stopKill()
}

// Close shuts the driver down and waits for it to end: it sends shutdown
// (unless Shutdown was called), closes the driver's stdin and waits for the
// exit. When ctx ends first, the driver is killed. It returns the shutdown
// error or the driver's exit error. Close is idempotent.
func (c *Client) Close(ctx context.Context) error {
	c.closeOnce.Do(func() { c.closeErr = c.close(ctx) })
	return c.closeErr
}

func (c *Client) close(ctx context.Context) error {
	var errs []error
	c.mu.Lock()
	needShutdown := !c.shutdown && c.readErr == nil
	c.mu.Unlock()
	if needShutdown {
		if err := c.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// Not under wmu: closing unblocks a write stuck on a driver that does
	// not read.
	_ = c.w.Close()
	select {
	case <-c.exited:
	case <-ctx.Done():
		c.kill()
		<-c.exited
		errs = append(errs, fmt.Errorf("driver: killed after %w", context.Cause(ctx)))
	}
	c.stopKill()
	if c.exitErr != nil {
		errs = append(errs, c.exitErr)
	}
	return errors.Join(errs...)
}
