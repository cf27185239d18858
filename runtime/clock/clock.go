// Package clock abstracts time so that every duration the runtime waits on
// (backoff, startup gate, probes, tool and connect timeouts, unregister grace)
// can be driven by a fake clock in tests and scenarios.
//
// The runtime never calls time.Sleep, time.After or context.WithTimeout for a
// policy timer; it asks its Clock instead.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Since returns the time elapsed since t.
	Since(t time.Time) time.Duration
	// NewTimer returns a timer that sends the time on its channel after d.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a single event scheduled on a Clock.
type Timer interface {
	// C returns the channel the time is sent on; nil for AfterFunc timers.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether it stopped a
	// pending timer.
	Stop() bool
	// Reset changes the timer to fire after d. It reports whether the timer
	// was pending.
	Reset(d time.Duration) bool
}

// Real is the Clock of the time package.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Since returns time.Since(t).
func (Real) Since(t time.Time) time.Duration { return time.Since(t) }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Sleep waits for d on c, or until ctx is done, whichever comes first. It
// returns ctx's error when ctx ended the wait.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TimeoutError is the cause of a context ended by WithTimeout.
type TimeoutError struct {
	// What names what timed out, e.g. "connect" or "tool call".
	What string
	// After is the duration that elapsed.
	After time.Duration
}

func (e *TimeoutError) Error() string {
	return e.What + " timed out after " + e.After.String()
}

// Timeout reports true, so that a TimeoutError satisfies net.Error-style checks.
func (e *TimeoutError) Timeout() bool { return true }

// Is makes errors.Is(err, context.DeadlineExceeded) true for a TimeoutError.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// WithTimeout returns a copy of parent that is cancelled after d on c, with a
// *TimeoutError naming what as its cause (see context.Cause). A d of zero or
// less means no timeout. The returned cancel must be called to release the
// timer.
func WithTimeout(parent context.Context, c Clock, d time.Duration, what string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	if d <= 0 {
		return ctx, func() { cancel(context.Canceled) }
	}
	t := c.AfterFunc(d, func() { cancel(&TimeoutError{What: what, After: d}) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}
