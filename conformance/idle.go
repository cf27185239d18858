package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/runtime/driver"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proctest"
)

// This file decides when an implementation on the virtual clock is idle:
// nothing more can happen until the harness acts. A wait for something that
// has not come by then never succeeds, so it fails at once instead of
// waiting out -await-timeout: a failing requirement costs about what a
// passing one does. The await bound stays as a liveness backstop only.
//
// Idle is decided from evidence, never from real time passing alone:
//
//   - no real I/O the implementation started is unfinished: every
//     server.connecting has its outcome, every probe, restart attempt,
//     reload, stream resumption and session re-initialization has ended,
//     every process that died has its process.exited, every process the
//     implementation is stopping with a step that ends it is gone, and every
//     tool call in flight is either cut off (its connection closed) or held
//     on purpose by its fixture (a hang, a sleep or a dropped ping longer
//     than the await bound, an initialize held by the harness);
//   - no fixture has real-time work of its own pending (a shorter hang or
//     sleep, an armed self-exit);
//   - no request is outstanding except those the protocol lets wait on the
//     virtual clock (session.open, session.close, reload, server.disconnect);
//   - all of this, the event stream, every journal, the process table and
//     the virtual clock's pending timers stay unchanged across two
//     clock.pending round trips (barriers: DRIVER.md section 3 writes every
//     event emitted before the response first) separated by a settle
//     window. The window covers the short in-process steps that leave no
//     trace (a timer's follow-up being scheduled); it grows with the round
//     trips measured on this machine, so a loaded machine waits longer.

// The idle detector's bounds.
const (
	// idleTick is how often the detector looks at the observable state.
	idleTick = 10 * time.Millisecond
	// idleSettleMin is the shortest settle window.
	idleSettleMin = 250 * time.Millisecond
	// idleSettleMax caps the settle window on a very slow machine.
	idleSettleMax = 5 * time.Second
	// idleRTTFactor scales the slowest barrier round trip seen into the
	// settle window.
	idleRTTFactor = 25
)

// IdleError is the cause of a wait ended because the implementation went
// idle before what was awaited happened.
type IdleError struct {
	// Timers are the pending virtual-clock timers when it went idle.
	Timers []time.Duration
	// Settle is the settle window that was observed.
	Settle time.Duration
}

func (e *IdleError) Error() string {
	return fmt.Sprintf("the implementation went idle: nothing in flight, no event, journal or process change and no timer due across two barriers %v apart (pending virtual-clock timers %v); nothing more can happen until the harness acts",
		e.Settle.Round(time.Millisecond), e.Timers)
}

// ContradictedError is the cause of a wait ended because the evidence
// already contradicts what the requirement says (see H.Unless).
type ContradictedError struct {
	Why string
}

func (e *ContradictedError) Error() string { return "contradicted: " + e.Why }

// isIdle reports whether err says the implementation went idle or the
// evidence contradicted the requirement: the wait cannot succeed any more.
func isIdle(err error) bool {
	var ie *IdleError
	var ce *ContradictedError
	return errors.As(err, &ie) || errors.As(err, &ce)
}

// Unless runs body with a contradiction in force: every wait in body ends
// at once, failing the spec, as soon as contradicted returns a reason. It
// turns "what the requirement forbids has already happened" into a verdict
// without waiting for the await bound, with either clock.
func (h *H) Unless(contradicted func() string, body func()) {
	h.contradictions = append(h.contradictions, contradicted)
	defer func() { h.contradictions = h.contradictions[:len(h.contradictions)-1] }()
	body()
}

// idlePace adapts the settle window to the machine: it remembers the
// slowest barrier round trip of the run.
type idlePace struct {
	mu     sync.Mutex
	maxRTT time.Duration
}

func (p *idlePace) observe(rtt time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.maxRTT = max(p.maxRTT, rtt)
}

func (p *idlePace) settle() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return min(max(idleSettleMin, idleRTTFactor*p.maxRTT), idleSettleMax)
}

// awaitCtx bounds one wait: by Config.AwaitTimeout in real time and, with
// the virtual clock, by the implementation going idle (the context's cause
// is then an *IdleError).
func (h *H) awaitCtx() (context.Context, context.CancelFunc) {
	return h.boundCtx(h.s.cfg.AwaitTimeout)
}

// boundCtx bounds a wait by d of real time and, with the virtual clock, by
// the implementation going idle.
func (h *H) boundCtx(d time.Duration) (context.Context, context.CancelFunc) {
	return h.boundCtxFrom(h.ctx, d)
}

// boundCtxFrom is boundCtx on another parent context.
func (h *H) boundCtxFrom(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, d)
	if !h.Virtual() && len(h.contradictions) == 0 {
		return ctx, cancel
	}
	v := h.idleView()
	ictx, stop := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.watch(ictx, stop)
	}()
	return ictx, func() {
		stop(nil)
		<-done
		cancel()
	}
}

// idleView is what the detector reads: a copy of the spec's state taken
// when the wait starts, so it runs beside the spec without sharing it.
type idleView struct {
	virtual   bool
	contra    []func() string
	c         *driver.Client
	pace      *idlePace
	journals  map[string]string            // key -> file
	knobs     map[string]map[string]string // key -> fixture environment
	calls     int
	acquires  int
	holdBound time.Duration
}

func (h *H) idleView() idleView {
	return idleView{
		virtual:   h.Virtual(),
		contra:    slices.Clone(h.contradictions),
		c:         h.c,
		pace:      &h.s.idle,
		journals:  maps.Clone(h.journals),
		knobs:     maps.Clone(h.knobs),
		calls:     h.calls,
		acquires:  h.acquires,
		holdBound: h.s.cfg.AwaitTimeout,
	}
}

// snapshot is the cheap observable state compared tick to tick.
type snapshot struct {
	lastSeq     uint64
	results     int
	outstanding string // requests that may change the implementation
	journals    string // sizes
	alive       string // live pids of process.started events and journals
	timers      string // from the last barrier
}

// isQuery reports whether a request only reads the implementation's state:
// the harness polls with them, and they are answered at once.
func isQuery(method string) bool {
	switch method {
	case driver.MethodToolsList, driver.MethodStatus, driver.MethodClockNow, driver.MethodClockPending, driver.MethodHello:
		return true
	}
	return false
}

func (v idleView) observe() snapshot {
	var s snapshot
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(v.journals)) {
		var n int64 = -1
		if fi, err := os.Stat(v.journals[k]); err == nil {
			n = fi.Size()
		}
		fmt.Fprintf(&b, "%s=%d;", k, n)
	}
	s.journals = b.String()
	b.Reset()
	for _, k := range slices.Sorted(maps.Keys(v.journals)) {
		j, _ := readJournalFile(v.journals[k])
		for _, pid := range j.AllPIDs() {
			fmt.Fprintf(&b, "%d:%t,", pid, proctest.Alive(pid))
		}
	}
	if v.c == nil {
		s.alive = b.String()
		return s
	}
	s.lastSeq = v.c.Last()
	var changing []string
	for _, m := range v.c.Outstanding() {
		if !isQuery(m) {
			changing = append(changing, m)
		}
	}
	s.outstanding = strings.Join(changing, ",")
	for i := 1; i <= v.calls; i++ {
		if _, ok := v.c.CallResult("call-" + strconv.Itoa(i)); ok {
			s.results++
		}
	}
	for i := 1; i <= v.acquires; i++ {
		if _, ok := v.c.AcquireResult("acq-" + strconv.Itoa(i)); ok {
			s.results++
		}
	}
	for _, e := range v.c.Events() {
		if e.Kind == event.ProcessStarted {
			if pid := attrInt(e, "pid"); pid > 0 && proctest.Alive(pid) {
				fmt.Fprintf(&b, "%d,", pid)
			}
		}
	}
	s.alive = b.String()
	return s
}

// watch cancels ctx with an *IdleError once the implementation is idle.
func (v idleView) watch(ctx context.Context, stop context.CancelCauseFunc) {
	tick := time.NewTicker(idleTick)
	defer tick.Stop()
	var last snapshot
	since := time.Now()
	barriers := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, c := range v.contra {
			if why := c(); why != "" {
				stop(&ContradictedError{Why: why})
				return
			}
		}
		if !v.virtual {
			continue
		}
		s := v.observe()
		s.timers = last.timers
		if s != last {
			last, since, barriers = s, time.Now(), 0
			continue
		}
		settle := v.pace.settle()
		if time.Since(since) < settle {
			continue
		}
		if v.busy() != "" {
			since, barriers = time.Now(), 0
			continue
		}
		var timers []time.Duration
		if v.c != nil {
			t0 := time.Now()
			var err error
			if timers, err = v.c.Pending(ctx); err != nil {
				return
			}
			v.pace.observe(time.Since(t0))
		}
		after := v.observe()
		after.timers = fmt.Sprint(timers)
		if barriers > 0 && after == last && v.busy() == "" {
			stop(&IdleError{Timers: timers, Settle: settle})
			return
		}
		last, since = after, time.Now()
		barriers = 1
	}
}

// busy names real I/O still in flight, or "" when there is none. Without a
// driver (it has shut down) only the fixtures' own work counts: the
// protocol's shutdown leaves no server process behind.
func (v idleView) busy() string {
	if v.c != nil {
		for _, m := range v.c.Outstanding() {
			switch {
			case isQuery(m):
			case m == driver.MethodSessionOpen, m == driver.MethodSessionClose, m == driver.MethodReload, m == driver.MethodServerDisconnect:
				// These may wait on the virtual clock (DRIVER.md section 3).
			default:
				return "request " + m + " outstanding"
			}
		}
	}
	journals := map[string]JournalEntries{}
	for k, p := range v.journals {
		j, err := readJournalFile(p)
		if err != nil {
			return "journal " + k + " unreadable"
		}
		journals[k] = j
		if why := v.fixtureWorking(k, j); why != "" {
			return why
		}
	}
	if v.c == nil {
		return ""
	}
	journalOf := func(server string) (string, JournalEntries) {
		if j, ok := journals[server]; ok {
			return server, j
		}
		return "", nil
	}
	evs := v.c.Events()
	type open struct {
		seq  uint64
		what string
	}
	opens := map[string]open{} // server + "\x00" + what -> latest opening
	closedAt := map[string]uint64{}
	calls := map[string]event.Event{}
	exited := map[int]bool{}
	var started []event.Event
	var signaled []event.Event
	set := func(e event.Event, what string) { opens[e.Server+"\x00"+what] = open{e.Seq, what} }
	clear := func(e event.Event, what string) { delete(opens, e.Server+"\x00"+what) }
	for _, e := range evs {
		switch e.Kind {
		case event.ServerConnecting:
			set(e, "connect")
		case event.ServerConnected, event.ServerFailed, event.ServerBlocked, event.ServerDisconnected, event.ServerDisabled:
			clear(e, "connect")
			if e.Kind != event.ServerConnected {
				closedAt[e.Server] = e.Seq
			}
		case event.RestartAttempt:
			set(e, "restart attempt")
		case event.RestartSucceeded, event.RestartFailed, event.RestartGaveUp:
			clear(e, "restart attempt")
		case event.ProbeStarted:
			set(e, "probe")
		case event.ProbeFinished:
			clear(e, "probe")
		case event.ReloadStarted:
			set(e, "reload")
		case event.ReloadFinished:
			clear(e, "reload")
		case event.RemoteStreamDropped:
			set(e, "stream resumption")
		case event.RemoteStreamResumed, event.RemoteStreamResumeFailed:
			clear(e, "stream resumption")
		case event.RemoteSessionExpired:
			set(e, "session re-initialization")
		case event.RemoteSessionReinitialized, event.RemoteSessionReinitFailed:
			clear(e, "session re-initialization")
		case event.ToolCallStarted:
			if id, ok := e.Get("call"); ok {
				calls[id] = e
			}
		case event.ToolCallFinished:
			if id, ok := e.Get("call"); ok {
				delete(calls, id)
			}
		case event.TransportClosed:
			closedAt[e.Server] = e.Seq
			clear(e, "stream resumption")
		case event.ProcessExited:
			closedAt[e.Server] = e.Seq
			exited[attrInt(e, "pid")] = true
		case event.ProcessStarted:
			started = append(started, e)
		case event.ProcessSignaled:
			signaled = append(signaled, e)
		}
	}
	// reapedSince reports whether a process of server started after seq
	// has exited and been reaped: the implementation has its exit.
	reapedSince := func(server string, seq uint64) bool {
		for _, e := range started {
			if e.Server == server && e.Seq > seq && proctest.Reaped(attrInt(e, "pid")) {
				return true
			}
		}
		return false
	}
	for key, o := range opens {
		server, _, _ := strings.Cut(key, "\x00")
		if o.what == "connect" || o.what == "restart attempt" {
			if k, j := journalOf(server); k != "" && handshakeHeld(j) {
				continue
			}
			if reapedSince(server, o.seq) {
				continue // the handshake's process is gone and collected
			}
			if o.what == "restart attempt" && opens[server+"\x00connect"].seq > 0 {
				continue // the connect decides
			}
		}
		if o.what == "probe" {
			if k, j := journalOf(server); k != "" && probeHeld(j, v.holdBound) {
				continue
			}
		}
		return fmt.Sprintf("server %s: %s in progress", server, o.what)
	}
	for id, e := range calls {
		if closedAt[e.Server] > e.Seq {
			continue // cut off: what happens to it is the implementation's decision
		}
		if k, j := journalOf(e.Server); k != "" && callHeld(j, v.holdBound) {
			continue
		}
		return fmt.Sprintf("call %s on %s in flight", id, e.Server)
	}
	for _, e := range started {
		pid := attrInt(e, "pid")
		if pid > 0 && !exited[pid] && !proctest.Alive(pid) && !proctest.Reaped(pid) {
			return fmt.Sprintf("server %s: pid %d exited and is not yet collected", e.Server, pid)
		}
	}
	for _, e := range signaled {
		pid := attrInt(e, "pid")
		if pid <= 0 || exited[pid] || !proctest.Alive(pid) {
			continue
		}
		step, _ := e.Get("step")
		if k, j := journalOf(e.Server); k != "" && !v.stepIgnored(k, j, step) {
			return fmt.Sprintf("server %s: stop step %s of pid %d under way", e.Server, step, pid)
		}
	}
	return ""
}

// fixtureWorking names real-time work a fixture will finish by itself: a
// hang, a sleep or an armed self-exit due within the hold bound.
func (v idleView) fixtureWorking(key string, j JournalEntries) string {
	l := latestLaunch(j)
	if len(l) == 0 || !proctest.Alive(l[0].PID) {
		return ""
	}
	h, hanging := openHang(l)
	if hanging && time.Duration(h.Int("ms"))*time.Millisecond < v.holdBound {
		return "fixture " + key + ": a hang ends by itself"
	}
	if hanging && h.Bool("blocking") {
		return "" // wedged: nothing else fires until the hang ends
	}
	if ms, ok := openSleep(l); ok && ms < v.holdBound {
		return "fixture " + key + ": a sleep ends by itself"
	}
	if a := l.Last("exit-armed"); a.Seq > 0 && l.Last("exit").Seq < a.Seq && time.Duration(a.Int("delayMs"))*time.Millisecond < v.holdBound {
		return "fixture " + key + ": a self-exit is armed"
	}
	return ""
}

// stepIgnored reports whether the fixture carries on after the stop step
// (the fixture's documented behaviour; see H.stepIgnored).
func (v idleView) stepIgnored(key string, j JournalEntries, step string) bool {
	k := v.knobs[key]
	switch step {
	case "SIGKILL":
		return false
	case "SIGTERM":
		return k["MCP_FIXTURE_IGNORE_SIGTERM"] == "1"
	}
	if k["MCP_FIXTURE_IGNORE_STDIN_EOF"] == "1" {
		return true
	}
	h, ok := openHang(latestLaunch(j))
	return k["MCP_FIXTURE_BLOCK_EVENT_LOOP"] == "1" && ok && h.Bool("blocking")
}

// latestLaunch returns the entries of the journal's latest launch.
func latestLaunch(j JournalEntries) JournalEntries {
	last := 0
	for _, e := range j {
		last = max(last, e.Launch)
	}
	var out JournalEntries
	for _, e := range j {
		if e.Launch == last {
			out = append(out, e)
		}
	}
	return out
}

// openHang returns the launch's hang that has not ended.
func openHang(l JournalEntries) (h fixture.Entry, ok bool) {
	s, e := l.Last("hang-start"), l.Last("hang-end")
	return s, s.Seq > 0 && s.Seq > e.Seq
}

// openSleep returns the shortest duration among the launch's sleep calls
// that have not ended.
func openSleep(l JournalEntries) (time.Duration, bool) {
	starts := l.Where("call-start", "tool", "sleep")
	ends := l.Where("call-end", "tool", "sleep")
	if len(starts) <= len(ends) {
		return 0, false
	}
	shortest := time.Duration(-1)
	for _, s := range starts[len(ends):] {
		var args struct {
			MS int64 `json:"ms"`
		}
		_ = json.Unmarshal([]byte(s.Str("args")), &args)
		d := time.Duration(args.MS) * time.Millisecond
		if shortest < 0 || d < shortest {
			shortest = d
		}
	}
	return shortest, true
}

// handshakeHeld reports whether the server's latest launch waits for the
// harness to release its initialize (MCP_FIXTURE_INIT_WAIT_FILE).
func handshakeHeld(j JournalEntries) bool {
	l := latestLaunch(j)
	if len(l) == 0 || !proctest.Alive(l[0].PID) {
		return false
	}
	w := l.Last("init-wait")
	if w.Seq == 0 || l.Last("initialize").Seq > w.Seq {
		return false
	}
	_, err := os.Stat(w.Str("file"))
	return err != nil
}

// callHeld reports whether the server's latest launch holds a tool call on
// purpose for longer than bound: a hang or a sleep.
func callHeld(j JournalEntries, bound time.Duration) bool {
	l := latestLaunch(j)
	if len(l) == 0 || !proctest.Alive(l[0].PID) {
		return false
	}
	if h, ok := openHang(l); ok && time.Duration(h.Int("ms"))*time.Millisecond >= bound {
		return true
	}
	ms, ok := openSleep(l)
	return ok && ms >= bound
}

// probeHeld reports whether the server's latest launch leaves a probe
// unanswered on purpose: a dropped ping, or a process wedged by a blocking
// hang.
func probeHeld(j JournalEntries, bound time.Duration) bool {
	l := latestLaunch(j)
	if len(l) == 0 || !proctest.Alive(l[0].PID) {
		return false
	}
	if p := l.Last("ping"); p.Seq > 0 && p.Str("action") == "dropped" {
		return true
	}
	h, ok := openHang(l)
	return ok && h.Bool("blocking") && time.Duration(h.Int("ms"))*time.Millisecond >= bound
}

// attrInt reads an integer attribute of an event.
func attrInt(e event.Event, k string) int {
	switch v := e.Attrs[k].(type) {
	case int64:
		return int(v)
	case float64:
		return int(v)
	case int:
		return v
	case json.Number:
		n, _ := v.Int64()
		return int(n)
	}
	s, _ := e.Get(k)
	n, _ := strconv.Atoi(s)
	return n
}
