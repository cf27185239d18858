package host

import (
	"context"
	"errors"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
)

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
		delay = max(delay, s.takeRetryAfterLocked())
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
		next = max(next, s.remote.retryAfter)
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
