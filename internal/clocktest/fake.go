// Package clocktest provides a fake clock.Clock driven by Advance.
package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
)

// Fake is a clock.Clock whose time moves only when Advance or Set is called.
// Timers fire in deadline order as time passes them; AfterFunc callbacks run
// in their own goroutines, as with the real clock.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	start   time.Time
	seq     uint64
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever the timer set changes
}

// New returns a Fake whose time starts at 2026-01-01T00:00:00Z.
func New() *Fake { return NewAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

// NewAt returns a Fake whose time starts at t.
func NewAt(t time.Time) *Fake {
	return &Fake{now: t, start: t, changed: make(chan struct{})}
}

var _ clock.Clock = (*Fake)(nil)

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns the fake time elapsed since t.
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// Elapsed returns how far the clock has been advanced since it was made.
func (f *Fake) Elapsed() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now.Sub(f.start)
}

// NewTimer returns a timer firing after d of fake time.
func (f *Fake) NewTimer(d time.Duration) clock.Timer {
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	f.schedule(t, d)
	return t
}

// AfterFunc calls fn in its own goroutine after d of fake time.
func (f *Fake) AfterFunc(d time.Duration, fn func()) clock.Timer {
	t := &fakeTimer{f: f, fn: fn}
	f.schedule(t, d)
	return t
}

func (f *Fake) schedule(t *fakeTimer, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	t.seq = f.seq
	t.when = f.now.Add(d)
	t.pending = true
	f.timers = append(f.timers, t)
	f.notifyLocked()
	if d <= 0 {
		f.fireDueLocked()
	}
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// remove takes t off the pending list; f.mu must be held.
func (f *Fake) removeLocked(t *fakeTimer) bool {
	if !t.pending {
		return false
	}
	t.pending = false
	f.timers = slices.DeleteFunc(f.timers, func(x *fakeTimer) bool { return x == t })
	f.notifyLocked()
	return true
}

// fireDueLocked fires every pending timer whose deadline is not after now.
func (f *Fake) fireDueLocked() {
	for {
		t := f.nextLocked()
		if t == nil || t.when.After(f.now) {
			return
		}
		f.removeLocked(t)
		t.fire(f.now)
	}
}

func (f *Fake) nextLocked() *fakeTimer {
	var next *fakeTimer
	for _, t := range f.timers {
		if next == nil || t.when.Before(next.when) || (t.when.Equal(next.when) && t.seq < next.seq) {
			next = t
		}
	}
	return next
}

// Advance moves the clock forward by d, firing in deadline order every timer
// whose deadline it passes. Timers scheduled by callbacks during Advance fire
// too if they fall due before its end and are scheduled before Advance
// returns; callers that need a callback's follow-up timer should await it
// (see BlockUntil) and advance again.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	target := f.now.Add(d)
	for {
		t := f.nextLocked()
		if t == nil || t.when.After(target) {
			break
		}
		if t.when.After(f.now) {
			f.now = t.when
		}
		f.removeLocked(t)
		t.fire(f.now)
	}
	f.now = target
	f.notifyLocked()
}

// AdvanceToNext moves the clock to the earliest pending deadline and fires
// the timers due then. It returns the distance moved and false when no timer
// is pending.
func (f *Fake) AdvanceToNext() (time.Duration, bool) {
	f.mu.Lock()
	t := f.nextLocked()
	if t == nil {
		f.mu.Unlock()
		return 0, false
	}
	d := max(t.when.Sub(f.now), 0)
	f.mu.Unlock()
	f.Advance(d)
	return d, true
}

// Pending returns the time left until each pending timer fires, soonest
// first.
func (f *Fake) Pending() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]time.Duration, 0, len(f.timers))
	for _, t := range f.timers {
		out = append(out, t.when.Sub(f.now))
	}
	slices.Sort(out)
	return out
}

// BlockUntil waits until at least n timers are pending or ctx is done.
func (f *Fake) BlockUntil(ctx context.Context, n int) error {
	return f.WaitFor(ctx, func(pending []time.Duration) bool { return len(pending) >= n })
}

// WaitFor waits until cond holds for the pending timers (as Pending reports
// them) or ctx is done. It checks the current state first.
func (f *Fake) WaitFor(ctx context.Context, cond func(pending []time.Duration) bool) error {
	for {
		f.mu.Lock()
		ch := f.changed
		f.mu.Unlock()
		if cond(f.Pending()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

type fakeTimer struct {
	f       *Fake
	ch      chan time.Time
	fn      func()
	when    time.Time
	seq     uint64
	pending bool
}

func (t *fakeTimer) fire(now time.Time) {
	if t.fn != nil {
		go t.fn()
		return
	}
	select {
	case t.ch <- now:
	default:
	}
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.f.removeLocked(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	was := t.f.removeLocked(t)
	t.f.mu.Unlock()
	if t.ch != nil {
		select { // drain a stale value, as time.Timer does since Go 1.23
		case <-t.ch:
		default:
		}
	}
	t.f.schedule(t, d)
	return was
}
