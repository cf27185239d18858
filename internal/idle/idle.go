// Package idle decides when an MCP client implementation under test, driven
// through the driver protocol (docs/DRIVER.md) on the virtual clock, is idle:
// nothing more can happen until the harness acts. A wait for something that
// has not come by then never succeeds, so the conformance suite and the
// scenario engine fail it at once instead of waiting out their real-time
// bound: a failing requirement costs about what a passing one does. The
// bound stays as a liveness backstop only.
//
// Idle is decided from evidence, never from real time passing alone:
//
//   - no real I/O the implementation started is unfinished: every
//     server.connecting has its outcome (or its process is gone and
//     collected), every probe, restart attempt, reload, stream resumption
//     (once its retry_ms has passed on the clock: before, it and the calls
//     of its server wait on the clock) and session re-initialization has
//     ended, every process that died has
//     been collected, every process the implementation is stopping with a
//     step that ends it is gone, and every tool call in flight is either cut
//     off (its connection closed; or sent after it closed, with no process
//     of the server left) or held on purpose by its fixture (a hang,
//     a sleep or a dropped ping longer than the hold bound, an initialize
//     held by the harness, a refusal with Retry-After, stdout closed while
//     the process lives on, a dead process whose escaped child holds its
//     pipes);
//   - no fixture has real-time work of its own pending (a shorter hang or
//     sleep, an armed self-exit);
//   - no request that changes the implementation is outstanding, except
//     those the protocol lets wait on its timers (session.open,
//     session.close, reload, server.disconnect): with the virtual clock,
//     or on the real clock when the implementation announces its connects
//     (server.connecting), so that the rules above see its I/O;
//   - all of this, the event stream, the results, every journal and the
//     process table stay unchanged for a settle window and across a
//     clock.pending round trip after it (a barrier: the protocol writes
//     every event emitted before a response first). The window covers the
//     short in-process steps that leave no trace (a timer's follow-up being
//     scheduled); it grows with the round trips measured on this machine
//     (25 times the slowest), so a loaded machine waits longer;
//   - no thread of the harness, the implementation or a fixture is on a
//     CPU or waiting for one (or for a disk), looked at before the barrier
//     and again a tick after it: the barrier's answer can overtake work
//     in flight inside the implementation (a process just reaped, its exit
//     not yet reported), which on a starved machine leaves no other trace.
//
// On the real clock the same rules decide idleness for an implementation
// whose driver lists its pending timers (capability pending-timers,
// timers.pending): there the last condition is that no timer is due before
// the wait's own bound, so what a timer would do comes too late either way.
//
// Contradictions are the other early end: evidence that what a requirement
// forbids has already happened ends a wait at once, with either clock.
package idle

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

	"github.com/mcplife/mcplife/conformance/driver"
	fixturejournal "github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/mcplife/mcplife/runtime/event"
)

// The detector's bounds.
const (
	// tick is how often the detector looks at the observable state.
	tick = 10 * time.Millisecond
	// settleMin is the shortest settle window.
	settleMin = 250 * time.Millisecond
	// settleMax caps the settle window on a very slow machine.
	settleMax = 5 * time.Second
	// rttFactor scales the slowest barrier round trip seen into the
	// settle window.
	rttFactor = 25
	// stallWindow is how long nothing may change before a stalled
	// exchange (a fixture blocked writing, a handshake answered and not
	// taken in) counts as the implementation's decision rather than a
	// slow reader on a loaded machine.
	stallWindow = 5 * time.Second
)

// Error is the cause of a wait ended because the implementation went idle
// before what was awaited happened.
type Error struct {
	// Timers are the pending timers when it went idle: of the virtual
	// clock, or (RealClock) the real-clock timers its driver listed.
	Timers []time.Duration
	// Settle is the settle window that was observed.
	Settle time.Duration
	// RealClock is set when the implementation runs on the real clock
	// and its driver lists its timers (Source.RealTimers); Left is then
	// what was left of the wait's bound, before which no timer was due.
	RealClock bool
	Left      time.Duration
}

func (e *Error) Error() string {
	if e.RealClock {
		return fmt.Sprintf("the implementation went idle: nothing in flight, no event, result, journal or process change for %v and across a barrier, and none of its pending timers %v (real clock, listed by its driver) due within the %v left of the wait; nothing more can happen in time unless the harness acts",
			e.Settle.Round(time.Millisecond), e.Timers, e.Left.Round(time.Millisecond))
	}
	return fmt.Sprintf("the implementation went idle: nothing in flight, no event, result, journal or process change and no timer due for %v and across a barrier (pending virtual-clock timers %v); nothing more can happen until the harness acts",
		e.Settle.Round(time.Millisecond), e.Timers)
}

// ContradictedError is the cause of a wait ended because the evidence
// already contradicts what was awaited (Source.Contradictions).
type ContradictedError struct {
	Why string
}

func (e *ContradictedError) Error() string { return "contradicted: " + e.Why }

// Decided reports whether err (or a context's cause) says the wait can no
// longer succeed: the implementation went idle, or the evidence
// contradicted it.
func Decided(err error) bool {
	var ie *Error
	var ce *ContradictedError
	return errors.As(err, &ie) || errors.As(err, &ce)
}

// Pace adapts the settle window to the machine: it remembers the slowest
// barrier round trip of a run. Share one Pace across the waits of a run.
type Pace struct {
	mu     sync.Mutex
	maxRTT time.Duration
}

func (p *Pace) observe(rtt time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.maxRTT = max(p.maxRTT, rtt)
}

// Settle returns the current settle window.
func (p *Pace) Settle() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return min(max(settleMin, rttFactor*p.maxRTT), settleMax)
}

// Source is what the detector reads. Its maps must not change while a
// watch runs: pass copies.
type Source struct {
	// DecideIdle enables the idle decision: the implementation runs on the
	// virtual clock, so nothing happens in it unless the harness acts or
	// real I/O completes, or it has shut down (Client is nil). In real
	// time an implementation's own timers are invisible: only
	// contradictions end a wait early, unless RealTimers is set.
	DecideIdle bool
	// RealTimers says the implementation runs on the real clock and its
	// driver lists its pending timers (timers.pending): the barrier asks
	// for them, and the implementation is idle only when none is due
	// before the wait's bound.
	RealTimers bool
	// Client is the driver's client; nil once the driver has shut down
	// (then only the fixtures and the process table are watched: the
	// protocol's shutdown leaves no server process behind).
	Client *driver.Client
	// Journals maps a key to a fixture journal file; the journal whose key
	// is a server's name is that server's.
	Journals map[string]string
	// Knobs maps a journal key to its fixture's environment, where known;
	// without it a stop step that may be ignored counts as under way.
	Knobs map[string]map[string]string
	// HoldBound is how long a fixture must hold something for it to count
	// as held on purpose rather than as work it will finish by itself.
	HoldBound time.Duration
	// Contradictions end the wait as soon as one returns a reason.
	Contradictions []func() string
	// Pace adapts the settle window; nil uses a fresh one.
	Pace *Pace
	// Outside lists processes of the harness that are not the
	// implementation's (a driver started ahead for the next spec, which has
	// received nothing): their threads, and their descendants', are not
	// evidence of work under way.
	Outside []int

	// followers read the journals incrementally during one Bound's watch;
	// nil reads each journal whole.
	followers map[string]*fixturejournal.Follower
	// deadline is when the wait's real-time bound ends.
	deadline time.Time
}

// Bound returns a context that ends when parent does, after d, when the
// implementation goes idle (cause *Error) or when a contradiction holds
// (cause *ContradictedError). Call the CancelFunc when the wait is over.
func Bound(parent context.Context, d time.Duration, src Source) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, d)
	src.deadline, _ = ctx.Deadline()
	if !src.DecideIdle && len(src.Contradictions) == 0 {
		return ctx, cancel
	}
	if src.Pace == nil {
		src.Pace = &Pace{}
	}
	// The watch reads every journal each tick: only what was appended.
	src.followers = make(map[string]*fixturejournal.Follower, len(src.Journals))
	for _, p := range src.Journals {
		src.followers[p] = fixturejournal.NewFollower(p)
	}
	ictx, stop := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.watch(ictx, stop)
	}()
	return ictx, func() {
		stop(nil)
		<-done
		cancel()
	}
}

// snapshot is the cheap observable state compared tick to tick.
type snapshot struct {
	lastSeq     uint64
	results     int
	outstanding string // requests that may change the implementation
	journals    string // sizes
	alive       string // live pids of process.started events and journals
}

// isQuery reports whether a request only reads the implementation's state:
// harnesses poll with them, and they are answered at once.
func isQuery(method string) bool {
	switch method {
	case driver.MethodToolsList, driver.MethodStatus, driver.MethodClockNow, driver.MethodClockPending, driver.MethodTimersPending, driver.MethodHello:
		return true
	}
	return false
}

func (src Source) observe() snapshot {
	var s snapshot
	var b strings.Builder
	keys := slices.Sorted(maps.Keys(src.Journals))
	for _, k := range keys {
		var n int64 = -1
		if fi, err := os.Stat(src.Journals[k]); err == nil {
			n = fi.Size()
		}
		fmt.Fprintf(&b, "%s=%d;", k, n)
	}
	s.journals = b.String()
	b.Reset()
	for _, k := range keys {
		j, _ := src.read(src.Journals[k])
		for _, pid := range j.allPIDs() {
			// Bytes moved by a fixture are progress even when no journal
			// line or event says so (a long line, a flood of stderr).
			r, w, _ := proctest.IOCounts(pid)
			fmt.Fprintf(&b, "%d:%t:%d:%d,", pid, proctest.Alive(pid), r, w)
		}
	}
	if src.Client == nil {
		s.alive = b.String()
		return s
	}
	c := src.Client
	s.lastSeq = c.Last()
	s.results = c.Results()
	var changing []string
	for _, m := range c.Outstanding() {
		if !isQuery(m) {
			changing = append(changing, m)
		}
	}
	s.outstanding = strings.Join(changing, ",")
	for _, e := range c.Events() {
		if e.Kind == event.ProcessStarted {
			if pid := attrInt(e, "pid"); pid > 0 && proctest.Alive(pid) {
				fmt.Fprintf(&b, "%d,", pid)
			}
		}
	}
	s.alive = b.String()
	return s
}

// watch cancels ctx with an *Error once the implementation is idle, or
// with a *ContradictedError once a contradiction holds.
func (src Source) watch(ctx context.Context, stop context.CancelCauseFunc) {
	t := time.NewTicker(tick)
	defer t.Stop()
	last := src.observe()
	since := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, c := range src.Contradictions {
			if why := c(); why != "" {
				stop(&ContradictedError{Why: why})
				return
			}
		}
		if !src.DecideIdle {
			continue
		}
		if s := src.observe(); s != last {
			last, since = s, time.Now()
			continue
		}
		settle := src.Pace.Settle()
		if time.Since(since) < settle {
			continue
		}
		if src.busy(ctx, time.Since(since)) != "" {
			continue // since stays: a stall is measured from the last change
		}
		// CPU evidence: on a starved machine an implementation with work
		// left (a goroutine writing the tool cache, a fixture on its way
		// out, a shell running a !command) is as silent as one that
		// stopped, but its threads are running, waiting for a CPU or
		// waiting on a disk. Looked at once per decision, before the
		// barrier (which itself wakes the driver).
		if proctest.Working(src.Outside...) != "" {
			continue
		}
		// The barrier: every event the implementation emitted before it
		// answers is written before the answer.
		var timers []time.Duration
		// What is left of the bound, taken before the driver is asked: a
		// timer it lists fires no sooner than that long after now.
		left := time.Until(src.deadline)
		if src.Client != nil {
			t0 := time.Now()
			var err error
			if src.RealTimers {
				timers, err = src.Client.PendingTimers(ctx)
			} else {
				timers, err = src.Client.Pending(ctx)
			}
			if err != nil {
				return
			}
			src.Pace.observe(time.Since(t0))
		}
		if s := src.observe(); s != last || src.busy(ctx, time.Since(since)) != "" {
			last, since = s, time.Now()
			continue
		}
		// Once more, a tick after the barrier: work its answer overtook
		// (a server process just reaped whose exit is not reported yet, on
		// a starved machine) shows as a change or as threads on a CPU, once
		// those that only answered the barrier have parked.
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s := src.observe(); s != last {
			last, since = s, time.Now()
			continue
		}
		if proctest.Working(src.Outside...) != "" {
			continue
		}
		if src.RealTimers && src.Client != nil {
			if soonest := slices.Min(append(slices.Clone(timers), left)); soonest < left {
				// A timer fires before the bound: what it does may be
				// what the wait is for. Look again once it is due.
				select {
				case <-ctx.Done():
					return
				case <-time.After(soonest):
				}
				last, since = src.observe(), time.Now()
				continue
			}
		}
		stop(&Error{Timers: timers, Settle: settle, RealClock: src.RealTimers && src.Client != nil, Left: left})
		return
	}
}

// Busy names real I/O still in flight, or "" when there is none. Without
// a client (the driver has shut down) only the fixtures' own work counts:
// the protocol's shutdown leaves no server process behind.
func (src Source) Busy(ctx context.Context) string {
	if why := src.busy(ctx, 0); why != "" {
		return why
	}
	if w := proctest.Working(src.Outside...); w != "" {
		return "work under way: " + w
	}
	return ""
}

// busy is Busy once nothing observable has changed for stableFor: the
// rules that read a stall as the implementation's own decision (a fixture
// blocked writing into a pipe, a handshake answered but not taken in) need
// a longer stall (stallWindow) than the settle window, so a reader that is
// only slow on a loaded machine is not taken for one that stopped.
func (src Source) busy(ctx context.Context, stableFor time.Duration) string {
	stalled := stableFor >= stallWindow
	if src.Client != nil {
		// An implementation that announces its connects (server.connecting)
		// has its I/O judged by the rules below.
		announces := slices.ContainsFunc(src.Client.Events(), func(e event.Event) bool { return e.Kind == event.ServerConnecting })
		for _, m := range src.Client.Outstanding() {
			switch {
			case isQuery(m):
			case (!src.RealTimers || announces) && (m == driver.MethodSessionOpen || m == driver.MethodSessionClose || m == driver.MethodReload || m == driver.MethodServerDisconnect):
				// These may wait on the implementation's timers (DRIVER.md
				// section 3): on the virtual clock, or on the real one
				// where the driver lists them. On the real clock a client
				// that announces nothing while it connects (no
				// server.connecting) is at work, not idle, until they
				// answer.
			default:
				return "request " + m + " outstanding"
			}
		}
	}
	journals := map[string]journal{}
	for k, p := range src.Journals {
		j, err := src.read(p)
		if err != nil {
			return "journal " + k + " unreadable"
		}
		journals[k] = j
		if why := src.fixtureWorking(k, j); why != "" {
			return why
		}
	}
	if src.Client == nil {
		return ""
	}
	journalOf := func(server string) (string, journal) {
		if j, ok := journals[server]; ok {
			return server, j
		}
		return "", nil
	}
	evs := src.Client.Events()
	type open struct {
		seq  uint64
		what string
	}
	opens := map[string]open{} // server + "\x00" + what -> latest opening
	closedAt := map[string]uint64{}
	connectedAt := map[string]uint64{}
	calls := map[string]event.Event{}
	exited := map[int]bool{}
	var started []event.Event
	var signaled []event.Event
	connects := map[string]event.Event{} // server -> its latest server.connecting
	drops := map[string]event.Event{}    // server -> its latest remote.stream_dropped
	set := func(e event.Event, what string) { opens[e.Server+"\x00"+what] = open{e.Seq, what} }
	end := func(e event.Event, what string) { delete(opens, e.Server+"\x00"+what) }
	for _, e := range evs {
		switch e.Kind {
		case event.ServerConnecting:
			set(e, "connect")
			connects[e.Server] = e
		case event.ServerConnected, event.ServerFailed, event.ServerBlocked, event.ServerDisconnected, event.ServerDisabled:
			end(e, "connect")
			if e.Kind != event.ServerConnected {
				closedAt[e.Server] = e.Seq
			} else {
				connectedAt[e.Server] = e.Seq
			}
		case event.RestartAttempt:
			set(e, "restart attempt")
		case event.RestartSucceeded, event.RestartFailed, event.RestartGaveUp:
			end(e, "restart attempt")
		case event.ProbeStarted:
			set(e, "probe")
		case event.ProbeFinished:
			end(e, "probe")
		case event.ReloadStarted:
			set(e, "reload")
		case event.ReloadFinished:
			end(e, "reload")
		case event.RemoteStreamDropped:
			set(e, "stream resumption")
			drops[e.Server] = e
		case event.RemoteStreamResumed, event.RemoteStreamResumeFailed:
			end(e, "stream resumption")
		case event.RemoteSessionExpired:
			set(e, "session re-initialization")
		case event.RemoteSessionReinitialized, event.RemoteSessionReinitFailed:
			end(e, "session re-initialization")
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
			end(e, "stream resumption")
		case event.ProcessExited:
			closedAt[e.Server] = e.Seq
			exited[attrInt(e, "pid")] = true
		case event.ProcessStarted:
			started = append(started, e)
		case event.ProcessSignaled:
			signaled = append(signaled, e)
		}
	}
	var now time.Duration = -1
	clockNow := func() (time.Duration, string) {
		if now < 0 {
			n, err := src.Client.Now(ctx)
			if err != nil {
				return 0, "clock.now failed: " + err.Error()
			}
			now = n
		}
		return now, ""
	}
	// A dropped stream's resumption starts with a wait on the clock
	// (retry_ms, the armed-timer rule): until it is due, the resumption
	// and the calls on that server wait for the clock, not for I/O.
	resumeWaits := map[string]bool{}
	for server, e := range drops {
		if _, open := opens[server+"\x00stream resumption"]; !open {
			continue
		}
		n, why := clockNow()
		if why != "" {
			return why
		}
		if e.At+time.Duration(attrInt(e, "retry_ms"))*time.Millisecond > n {
			resumeWaits[server] = true
		}
	}
	for key, o := range opens {
		server, _, _ := strings.Cut(key, "\x00")
		if o.what == "stream resumption" && resumeWaits[server] {
			continue
		}
		if o.what == "restart attempt" && opens[server+"\x00connect"].seq > 0 {
			continue // the connect decides
		}
		if o.what == "connect" && src.connectSettled(connects[server], started, journals[server], stalled) {
			continue
		}
		if o.what == "probe" {
			if k, j := journalOf(server); k != "" && (probeHeld(j, src.HoldBound) || stalled && stuckWriting(j)) {
				continue
			}
		}
		return fmt.Sprintf("server %s: %s in progress", server, o.what)
	}
	// A wait the implementation announced (the armed-timer rule) whose
	// deadline the virtual clock has passed has fired: its follow-up is
	// under way until the event that resolves it arrives.
	for _, e := range evs {
		var armed string
		switch e.Kind {
		case event.RestartScheduled:
			armed = "delay_ms"
		case event.ToolsUnregisterScheduled:
			armed = "grace_ms"
		default:
			continue
		}
		if resolvedAfter(evs, e) {
			continue
		}
		n, why := clockNow()
		if why != "" {
			return why
		}
		if e.At+time.Duration(attrInt(e, armed))*time.Millisecond <= n {
			return fmt.Sprintf("server %s: the wait %s announced is due and its follow-up not seen", e.Server, e.Kind)
		}
	}
	for id, e := range calls {
		if closedAt[e.Server] > e.Seq {
			continue // cut off: what happens to it is the implementation's decision
		}
		if resumeWaits[e.Server] && e.Seq < drops[e.Server].Seq {
			continue // its answer waits for the resumption, which waits for the clock
		}
		k, j := journalOf(e.Server)
		if k != "" && closedAt[e.Server] > connectedAt[e.Server] && !launchAlive(j) {
			// Sent after the server's connection closed, with no process
			// of the server left and no connect under way (the rule
			// above): nothing but the implementation can end it.
			continue
		}
		if k != "" && (callHeld(j, src.HoldBound) || stalled && stuckWriting(j) || escapedHolds(j)) {
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
		if k, j := journalOf(e.Server); k == "" || !src.stepIgnored(k, j, step) {
			return fmt.Sprintf("server %s: stop step %s of pid %d under way", e.Server, step, pid)
		}
	}
	return ""
}

// connectSettled reports whether what is left of the connect c is the
// implementation's own: its fixture holds the handshake for the harness,
// refused it with Retry-After (remote), has answered its last tools/list
// page, or is blocked writing into a pipe
// the implementation does not read, or its process is gone and collected.
// A stdio connect is in flight while its process has not started or not
// journaled its launch yet; a remote one is judged by its journal's latest
// launch.
func (src Source) connectSettled(c event.Event, started []event.Event, j journal, stalled bool) bool {
	if c.Kind == "" {
		return false
	}
	if t, _ := c.Get("transport"); t != "stdio" {
		// Its server's last word refused the handshake with Retry-After:
		// when to try again is the implementation's decision.
		l := latestLaunch(j)
		return len(l) > 0 && (handshakeHeld(l) || l[len(l)-1].Kind == "throttled" || stalled && handshakeAnswered(l))
	}
	pid := 0
	for _, e := range started {
		if e.Server == c.Server && e.Seq > c.Seq {
			pid = attrInt(e, "pid")
		}
	}
	switch {
	case pid <= 0:
		return false
	case proctest.Reaped(pid):
		return true
	case stalled && proctest.BlockedOnPipeWrite(pid):
		return true
	}
	l := launchOf(j, pid)
	return len(l) > 0 && (handshakeHeld(l) || stalled && handshakeAnswered(l))
}

// fixtureWorking names real-time work a fixture will finish by itself: a
// hang, a sleep, an armed self-exit or idle exit due within the hold bound.
func (src Source) fixtureWorking(key string, j journal) string {
	l := latestLaunch(j)
	if len(l) == 0 || !proctest.Alive(l[0].PID) {
		return ""
	}
	h, hanging := openHang(l)
	if hanging && time.Duration(h.Int("ms"))*time.Millisecond < src.HoldBound {
		return "fixture " + key + ": a hang ends by itself"
	}
	if hanging && h.Bool("blocking") {
		return "" // wedged: nothing else fires until the hang ends
	}
	if ms, ok := openSleep(l); ok && ms < src.HoldBound {
		return "fixture " + key + ": a sleep ends by itself"
	}
	if a := l.last("exit-armed"); a.Seq > 0 && l.last("exit").Seq < a.Seq && time.Duration(a.Int("delayMs"))*time.Millisecond < src.HoldBound {
		return "fixture " + key + ": a self-exit is armed"
	}
	// MCP_FIXTURE_IDLE_EXIT_MS: the first launch exits by itself once idle
	// that long after its first tools/list (the timer is not journaled: it
	// restarts with every request).
	if ms, err := strconv.Atoi(src.Knobs[key]["MCP_FIXTURE_IDLE_EXIT_MS"]); err == nil && ms > 0 &&
		time.Duration(ms)*time.Millisecond < src.HoldBound && l[0].Launch == 1 && l.last("tools-list").Seq > 0 && l.last("exit").Seq == 0 {
		return "fixture " + key + ": an idle exit is armed"
	}
	return ""
}

// stepIgnored reports whether the fixture of journal key carries on after
// the stop step; without its knobs, it does not.
func (src Source) stepIgnored(key string, j journal, step string) bool {
	k, known := src.Knobs[key]
	return known && StepIgnored(k, j, step)
}

// StepIgnored reports whether a fixture with the environment knobs, whose
// journal holds entries, carries on after the stop step (SIGKILL, SIGTERM,
// or stdin-closed), as its knobs document (docs/TESTING.md): SIGKILL always
// ends it; SIGTERM unless MCP_FIXTURE_IGNORE_SIGTERM; closing stdin unless
// MCP_FIXTURE_IGNORE_STDIN_EOF or the latest launch is wedged in a blocking
// hang (MCP_FIXTURE_BLOCK_EVENT_LOOP).
func StepIgnored(knobs map[string]string, entries []fixturejournal.Entry, step string) bool {
	switch step {
	case "SIGKILL":
		return false
	case "SIGTERM":
		return knobs["MCP_FIXTURE_IGNORE_SIGTERM"] == "1"
	}
	if knobs["MCP_FIXTURE_IGNORE_STDIN_EOF"] == "1" {
		return true
	}
	h, ok := openHang(latestLaunch(entries))
	return knobs["MCP_FIXTURE_BLOCK_EVENT_LOOP"] == "1" && ok && h.Bool("blocking")
}

// latestLaunch returns the entries of the journal's latest launch.
func latestLaunch(j journal) journal {
	last := 0
	for _, e := range j {
		last = max(last, e.Launch)
	}
	var out journal
	for _, e := range j {
		if e.Launch == last {
			out = append(out, e)
		}
	}
	return out
}

// openHang returns the launch's hang that has not ended.
func openHang(l journal) (h fixturejournal.Entry, ok bool) {
	s, e := l.last("hang-start"), l.last("hang-end")
	return s, s.Seq > 0 && s.Seq > e.Seq
}

// openSleep returns the shortest duration among the launch's sleep calls
// that have not ended.
func openSleep(l journal) (time.Duration, bool) {
	starts := l.where("call-start", "tool", "sleep")
	ends := l.where("call-end", "tool", "sleep")
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

// launchOf returns the entries of the journal's launch by process pid.
func launchOf(j journal, pid int) journal {
	var out journal
	for _, e := range j {
		if e.PID == pid {
			out = append(out, e)
		}
	}
	return out
}

// handshakeHeld reports whether the launch l waits for the harness to
// release its initialize (MCP_FIXTURE_INIT_WAIT_FILE).
func handshakeHeld(l journal) bool {
	if len(l) == 0 || !proctest.Alive(l[0].PID) {
		return false
	}
	w := l.last("init-wait")
	if w.Seq == 0 || l.last("initialize").Seq > w.Seq {
		return false
	}
	_, err := os.Stat(w.Str("file"))
	return err != nil
}

// handshakeAnswered reports whether the launch l has answered the
// handshake's last tools/list page: what is left of the connect is the
// implementation's own.
func handshakeAnswered(l journal) bool {
	init := l.last("initialize")
	list := l.last("tools-list")
	return init.Seq > 0 && list.Seq > init.Seq && !list.Bool("more")
}

// launchAlive reports whether the process of the journal's latest launch
// runs.
func launchAlive(j journal) bool {
	l := latestLaunch(j)
	return len(l) > 0 && proctest.Alive(l[0].PID)
}

// stuckWriting reports whether the server's latest launch is alive and
// blocked writing into a full pipe: the implementation does not read it.
// (The snapshot's I/O counters tell a stuck reader from a slow one.)
func stuckWriting(j journal) bool {
	l := latestLaunch(j)
	return len(l) > 0 && proctest.Alive(l[0].PID) && proctest.BlockedOnPipeWrite(l[0].PID)
}

// callHeld reports whether the server's latest launch holds a tool call on
// purpose for longer than bound (a hang or a sleep), or has refused it
// with Retry-After.
func callHeld(j journal, bound time.Duration) bool {
	l := latestLaunch(j)
	if len(l) == 0 || !proctest.Alive(l[0].PID) {
		return false
	}
	if h, ok := openHang(l); ok && time.Duration(h.Int("ms"))*time.Millisecond >= bound {
		return true
	}
	if ms, ok := openSleep(l); ok && ms >= bound {
		return true
	}
	// The fixture closed its stdout and lives on: nothing of the call can
	// come from it any more, and the end of the stream has reached the
	// implementation. Or its last word refused the request with
	// Retry-After. What happens next is the implementation's own decision.
	if c := l.last("corrupt"); c.Seq > 0 && c.Str("what") == "close-stdout" {
		return true
	}
	return l[len(l)-1].Kind == "throttled"
}

// escapedHolds reports whether the server's latest launch is dead and left
// a live process outside its process group that holds its stdout and stderr
// (MCP_FIXTURE_ESCAPED_CHILD): nothing more can come from the server, and
// its pipes do not end while that process lives. What happens to a call in
// flight is the implementation's own decision.
func escapedHolds(j journal) bool {
	l := latestLaunch(j)
	if len(l) == 0 || proctest.Alive(l[0].PID) {
		return false
	}
	c := l.last("child-started")
	return c.Seq > 0 && c.Bool("escaped") && proctest.Alive(c.Int("childPid"))
}

// probeHeld reports whether the server's latest launch leaves a probe
// unanswered on purpose: a dropped ping, or a process wedged by a blocking
// hang.
func probeHeld(j journal, bound time.Duration) bool {
	l := latestLaunch(j)
	if len(l) == 0 || !proctest.Alive(l[0].PID) {
		return false
	}
	if p := l.last("ping"); p.Seq > 0 && p.Str("action") == "dropped" {
		return true
	}
	h, ok := openHang(l)
	return ok && h.Bool("blocking") && time.Duration(h.Int("ms"))*time.Millisecond >= bound
}

// resolvedAfter reports whether the wait armed by e has its resolving
// event later in evs.
func resolvedAfter(evs []event.Event, e event.Event) bool {
	var ends []event.Kind
	switch e.Kind {
	case event.RestartScheduled:
		ends = []event.Kind{event.RestartAttempt, event.RestartGaveUp, event.ServerDisconnected}
	case event.ToolsUnregisterScheduled:
		ends = []event.Kind{event.ToolsUnregistered, event.ToolsUnregisterCancelled, event.ServerDisconnected}
	}
	for _, l := range evs {
		if l.Seq > e.Seq && l.Server == e.Server && slices.Contains(ends, l.Kind) {
			return true
		}
	}
	return false
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

// journal is a fixture journal.
type journal []fixturejournal.Entry

// read reads a journal file, through its follower when the watch has one;
// a missing one has no entries.
func (src Source) read(path string) (journal, error) {
	var es []fixturejournal.Entry
	var err error
	if f, ok := src.followers[path]; ok {
		es, err = f.Read()
	} else {
		es, err = fixturejournal.Read(path)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return es, nil
}

// last returns the last entry of kind, or a zero entry.
func (j journal) last(kind string) fixturejournal.Entry {
	for i := len(j) - 1; i >= 0; i-- {
		if j[i].Kind == kind {
			return j[i]
		}
	}
	return fixturejournal.Entry{}
}

// where returns the entries of kind whose field key formats as val.
func (j journal) where(kind, key, val string) journal {
	var out journal
	for _, e := range j {
		if e.Kind == kind && fmt.Sprint(e.Fields[key]) == val {
			out = append(out, e)
		}
	}
	return out
}

// allPIDs returns every process the journal knows of: launches and
// spawned children.
func (j journal) allPIDs() []int {
	seen := map[int]bool{}
	var out []int
	for _, e := range j {
		for _, p := range []int{e.PID, e.Int("childPid")} {
			if p > 0 && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}
