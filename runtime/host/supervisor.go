package host

import (
	"context"
	"errors"
	"time"

	"github.com/mcplife/mcplife/runtime/backoff"
	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/event"
)

// supervisor is a server's restart supervision: the backoff policy and
// where it stands, the restart loop and the attempts it finished, the
// stability timer that returns the backoff to its first step, and the
// probe gate that lets one health probe run per connection (probe.go). A
// server embeds it; its fields are guarded by server.mu.
type supervisor struct {
	policy     backoff.Policy
	restarting bool        // the restart loop is running
	attempts   int         // restart attempts finished (for waiters)
	step       int         // backoff step; zero after StabilityWindow of uptime
	stable     clock.Timer // armed at each connect, resets step
	probing    *probeRun   // the probe running, if any (probe.go)
	pingless   bool        // the server answered ping with method-not-found
	// learnedProtocol is the version a protocol fallback found the server
	// speaks (era.go); later attempts ask for it first.
	learnedProtocol string
}

// afterTimeout decides what a call that hit its tool timeout on c gets: a
// healthy server (probe) keeps the timeout error; an unhealthy one is
// restarted and, when the first attempt runs at once and succeeds, retry is
// true (unless Options.NoRetryAfterRestart); otherwise err says where the
// restart stands.
func (s *server) afterTimeout(ctx context.Context, c *connection, timeoutErr error) (retry bool, err error) {
	if s.probe(ctx, c) {
		return false, timeoutErr
	}
	before, immediate := s.triggerRestart("probe-failure", c)
	if !immediate {
		// Another trigger's loop, or a backoff sleep (a crash loop): the
		// caller must not wait through it; report where the restart stands.
		return false, s.restartState(timeoutErr)
	}
	ok, werr := s.awaitAttempt(ctx, before)
	if werr != nil {
		return false, errors.Join(timeoutErr, werr)
	}
	if !ok {
		s.mu.Lock()
		last := s.lastErr
		s.mu.Unlock()
		if last == nil {
			last = timeoutErr
		}
		return false, restartFailed(s.name, last)
	}
	if s.rt.opts.NoRetryAfterRestart {
		return false, timeoutErr
	}
	return true, nil
}

// restartState reports a restart's state to a caller that will not wait for
// it: in progress while an attempt runs or before the first one, failed with
// the last cause during a backoff sleep after a failure.
func (s *server) restartState(fallback error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.conn != nil:
		return fallback
	case s.restarting && !s.connecting && s.lastErr != nil:
		return restartFailed(s.name, s.lastErr)
	case s.restarting:
		return restartInProgress(s.name)
	case s.lastErr != nil:
		return &ServerError{Code: CodeFailed, Server: s.name, Kind: ErrFailed, Cause: s.lastErr}
	}
	return fallback
}

// triggerRestart starts the restart loop unless it is already running;
// concurrent triggers share one loop. When old is not nil the loop first
// closes that connection (a planned close, so its end is not taken for a
// crash). It returns the number of attempts finished before the trigger and
// whether this trigger started a loop whose first attempt runs at once, so a
// caller knows whether waiting for the next outcome is short.
func (s *server) triggerRestart(reason string, old *connection) (before int, immediate bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before = s.attempts
	if s.closed || s.restarting {
		return before, false
	}
	if old != nil && s.conn != old {
		// Someone else already replaced that connection.
		return before, false
	}
	delay, ok := s.policy.Delay(s.step)
	if !ok {
		s.giveUpLocked()
		return before, false
	}
	s.restarting = true
	if old != nil {
		s.conn = nil
		s.startGraceLocked()
	}
	s.setStateLocked(StateRestarting)
	s.rt.goRun(func() { s.restartLoop(reason, old) })
	return before, delay == 0
}

func (s *server) giveUpLocked() {
	s.emit(event.RestartGaveUp, event.Int("attempts", s.step), event.String("policy", s.policy.Name))
	s.rt.log.Error("mcp server restart gave up", "server", s.name, "transport", s.cfg.EffectiveType(), "attempts", s.step, "policy", s.policy.Name)
	s.unpublishLocked("restart gave up")
	s.setStateLocked(StateFailed)
}

// restartLoop runs attempts on the policy's schedule until one succeeds, the
// policy gives up or the server is closed.
func (s *server) restartLoop(reason string, old *connection) {
	if old != nil {
		old.close(s.ctx, "restart")
	}
	transport := string(s.cfg.EffectiveType())
	for {
		s.mu.Lock()
		if s.closed {
			s.restarting = false
			s.notifyLocked()
			s.mu.Unlock()
			return
		}
		delay, ok := s.policy.Delay(s.step)
		delay = max(delay, s.sessions.takeRetryAfterLocked())
		if !ok {
			s.restarting = false
			s.giveUpLocked()
			s.mu.Unlock()
			return
		}
		attempt := s.step + 1
		s.mu.Unlock()

		// The timer is armed before the event, so a scenario that awaits
		// restart.scheduled can advance the clock without a race.
		timer := s.rt.clock.NewTimer(delay)
		s.emit(event.RestartScheduled, event.String("reason", reason), event.Int("attempt", attempt),
			event.Millis("delay_ms", delay), event.String("policy", s.policy.Name))
		s.rt.log.Error("mcp server restart scheduled", "server", s.name, "transport", transport,
			"attempt", attempt, "reason", reason, "delay", delay)
		select {
		case <-timer.C():
		case <-s.idleProbe.retryC(): // RetryNow (idleprobe.go)
			timer.Stop()
		case <-s.ctx.Done():
			timer.Stop()
			s.endLoop()
			return
		}
		s.emit(event.RestartAttempt, event.String("reason", reason), event.Int("attempt", attempt))
		err := s.attempt(s.ctx, attempt)
		s.mu.Lock()
		s.step++
		s.attempts++
		if err == nil {
			lost := s.conn == nil && !s.closed
			if !lost {
				s.restarting = false
				s.armStableLocked()
			}
			s.notifyLocked()
			s.mu.Unlock()
			s.emit(event.RestartSucceeded, event.String("reason", reason), event.Int("attempt", attempt))
			if !lost {
				return
			}
			// The new connection died before the loop could record its
			// success; its exit was not acted on (this loop was still
			// running), so the loop goes on.
			reason = "transport-exit"
			continue
		}
		next, more := s.policy.Delay(s.step)
		next = max(next, s.sessions.retryAfterLocked())
		s.notifyLocked()
		s.mu.Unlock()
		if s.ctx.Err() != nil || errors.Is(err, ErrClosed) {
			s.endLoop()
			return
		}
		attrs := []event.Attr{event.String("reason", reason), event.Int("attempt", attempt), event.Err(err)}
		if more {
			attrs = append(attrs, event.Millis("next_delay_ms", next))
		}
		s.emit(event.RestartFailed, attrs...)
		s.rt.log.Error("mcp server restart failed", "server", s.name, "transport", transport,
			"attempt", attempt, "reason", reason, "error", err, "next_delay", next)
		if errors.Is(err, ErrBlocked) || errors.Is(err, ErrAuthRequired) {
			s.endLoop()
			return
		}
	}
}

func (s *server) endLoop() {
	s.mu.Lock()
	s.restarting = false
	s.notifyLocked()
	s.mu.Unlock()
}

// awaitAttempt waits until more than before restart attempts have finished
// or the loop stopped, and reports whether the server is connected.
func (s *server) awaitAttempt(ctx context.Context, before int) (bool, error) {
	err := s.wait(ctx, func() bool {
		return s.attempts > before || !s.restarting || s.closed
	})
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil, nil
}

// sinceInitFailure reports how long ago the first connect failed.
func (s *server) sinceInitFailureLocked() time.Duration {
	return s.rt.clock.Since(s.initFailAt)
}

// armStableLocked starts the stability window after which the backoff step
// returns to zero.
func (s *server) armStableLocked() {
	if s.stable != nil {
		s.stable.Stop()
	}
	if s.step == 0 {
		return
	}
	gen := s.gen
	s.stable = s.rt.clock.AfterFunc(s.rt.opts.StabilityWindow, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.gen == gen && s.conn != nil {
			s.step = 0
		}
	})
}
