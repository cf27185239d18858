package host

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mcplife/mcplife/runtime/event"
)

// This file holds two things a host watching its servers needs (issue 31):
//
//   - the idle health probe (Options.IdleProbeInterval, off by default): a
//     server wedged while nobody calls it is otherwise found only when a
//     call meets it and times out. Every interval, on the runtime's clock,
//     each connected server with no tool call in flight and no probe
//     running is probed (ping, then tools/list: the probe of a tool
//     timeout); one that fails is restarted with reason idle-probe-failure.
//   - RetryNow: a host that knows a server is back (the user said so) ends
//     the restart loop's backoff wait at once instead of waiting for the
//     next slot of the schedule.
//
// Hooks elsewhere: server.idleProbe (server.go), the call count in callTool
// (call.go), startIdleProbe in New (runtime.go) and the retry case of the
// restart loop's wait (restart.go).

// ErrNotRetrying is matched (errors.Is) by the error of RetryNow for a
// server that is not waiting to retry: connected, making an attempt right
// now, or given up by its restart policy.
var ErrNotRetrying = errors.New("not waiting to retry")

// idleState is a server's part of the idle probe and of RetryNow. The zero
// value is ready.
type idleState struct {
	mu    sync.Mutex
	calls int           // tool calls in flight (callTool)
	retry chan struct{} // RetryNow's signal to the restart loop (buffered, 1)
}

// busy counts a tool call in flight until the returned function runs.
func (st *idleState) busy() func() {
	st.mu.Lock()
	st.calls++
	st.mu.Unlock()
	return func() {
		st.mu.Lock()
		st.calls--
		st.mu.Unlock()
	}
}

// idle reports whether no tool call is in flight.
func (st *idleState) idle() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.calls == 0
}

// retryC is the channel the restart loop's backoff wait selects on.
func (st *idleState) retryC() chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.retry == nil {
		st.retry = make(chan struct{}, 1)
	}
	return st.retry
}

// startIdleProbe starts the idle probe loop when Options.IdleProbeInterval
// asks for one.
func (rt *Runtime) startIdleProbe() {
	if rt.opts.IdleProbeInterval > 0 {
		rt.goRun(rt.idleProbeLoop)
	}
}

// idleProbeLoop runs rounds of idle probes until the runtime closes: it
// arms the interval's timer on the runtime's clock (then announces it with
// probe.idle_scheduled, so a test can advance the clock once it sees the
// event), probes every idle server at once and waits for those probes
// (each bounded by the probe timeout, on the same clock) before the next
// round.
func (rt *Runtime) idleProbeLoop() {
	every := rt.opts.IdleProbeInterval
	for {
		timer := rt.clock.NewTimer(every)
		rt.events.Emit("", event.ProbeIdleScheduled, event.Millis("delay_ms", every))
		select {
		case <-timer.C():
		case <-rt.ctx.Done():
			timer.Stop()
			return
		}
		var wg sync.WaitGroup
		for _, s := range rt.probeCandidates() {
			s.mu.Lock()
			c := s.conn
			ok := c != nil && s.state == StateConnected && !s.restarting && !s.closed && s.probing == nil
			s.mu.Unlock()
			if !ok || !s.idleProbe.idle() {
				continue
			}
			wg.Add(1)
			rt.goRun(func() {
				defer wg.Done()
				s.emit(event.ProbeIdleStarted)
				if !s.probe(rt.ctx, c) && rt.ctx.Err() == nil {
					s.triggerRestart("idle-probe-failure", c)
				}
			})
		}
		wg.Wait()
	}
}

// probeCandidates returns the servers of the pool and the private servers
// of open sessions, sorted by name so rounds probe in a stable order.
func (rt *Runtime) probeCandidates() []*server {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return nil
	}
	out := make([]*server, 0, len(rt.servers))
	for _, s := range rt.servers {
		out = append(out, s)
	}
	for sess := range rt.sessions {
		out = append(out, sess.privateServers()...)
	}
	slices.SortFunc(out, func(a, b *server) int { return strings.Compare(a.name, b.name) })
	return out
}

// RetryNow ends the backoff wait of server name's restart loop at once, so
// its next attempt starts now instead of at the next slot of the restart
// schedule: a host whose user knows the server is back (harness doctor
// -watch's retry key, SIGUSR1) does not wait up to a minute. It emits
// restart.retry_now with the attempt about to run. It fails with an error
// matching ErrNotRetrying when the server is connected, is making an
// attempt right now, or its restart policy gave up, and with another error
// when no running server has that name.
func (rt *Runtime) RetryNow(name string) error {
	targets := rt.running(name)
	if len(targets) == 0 {
		return fmt.Errorf("retry: no running server named %q", name)
	}
	var errs []error
	for _, s := range targets {
		s.mu.Lock()
		waiting := s.restarting && !s.connecting && !s.closed
		attempt, state := s.step+1, s.state
		s.mu.Unlock()
		if !waiting {
			why := "state " + string(state)
			if s.connecting {
				why = "an attempt is running"
			}
			errs = append(errs, fmt.Errorf("retry %s: %w (%s)", name, ErrNotRetrying, why))
			continue
		}
		s.emit(event.RestartRetryNow, event.Int("attempt", attempt))
		select {
		case s.idleProbe.retryC() <- struct{}{}:
		default: // a retry is already asked for
		}
	}
	return errors.Join(errs...)
}
