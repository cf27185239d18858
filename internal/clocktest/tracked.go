package clocktest

import (
	"slices"
	"sync"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
)

// pruneAt is how many timers Tracked keeps before it drops those already
// fired or stopped; the bound doubles with what is left, so pruning costs
// amortised constant time per timer.
const pruneAt = 256

// Tracked is a clock.Clock on real time that knows its pending timers: a
// driver on the real clock lists them (timers.pending, docs/DRIVER.md),
// since every duration the runtime waits on goes through its clock.
type Tracked struct {
	mu     sync.Mutex
	timers map[*trackedTimer]struct{}
	bound  int
}

// NewTracked returns a Tracked clock with no timers.
func NewTracked() *Tracked {
	return &Tracked{timers: map[*trackedTimer]struct{}{}, bound: pruneAt}
}

var _ clock.Clock = (*Tracked)(nil)

// Now returns time.Now().
func (c *Tracked) Now() time.Time { return time.Now() }

// Since returns time.Since(t).
func (c *Tracked) Since(t time.Time) time.Duration { return time.Since(t) }

// NewTimer wraps time.NewTimer and tracks the timer until it fires or
// stops.
func (c *Tracked) NewTimer(d time.Duration) clock.Timer {
	t := &trackedTimer{c: c, deadline: time.Now().Add(d)}
	c.add(t)
	t.t = time.NewTimer(d)
	return t
}

// AfterFunc wraps time.AfterFunc and tracks the timer until it fires or
// stops.
func (c *Tracked) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &trackedTimer{c: c, deadline: time.Now().Add(d), fn: true}
	c.add(t)
	t.t = time.AfterFunc(d, f)
	return t
}

// Pending returns the time left until each timer that has neither fired
// nor been stopped fires, soonest first.
func (c *Tracked) Pending() []time.Duration {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for t := range c.timers {
		if left := t.deadline.Sub(now); !t.stopped && left > 0 {
			out = append(out, left)
		}
	}
	slices.Sort(out)
	return out
}

func (c *Tracked) add(t *trackedTimer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) >= c.bound {
		now := time.Now()
		for o := range c.timers {
			if o.stopped || !o.deadline.After(now) {
				delete(c.timers, o)
			}
		}
		c.bound = max(pruneAt, 2*len(c.timers))
	}
	c.timers[t] = struct{}{}
}

// trackedTimer is a timer of a Tracked clock. Its fields other than t are
// guarded by the clock's mutex.
type trackedTimer struct {
	c        *Tracked
	t        *time.Timer
	fn       bool
	deadline time.Time
	stopped  bool
}

func (t *trackedTimer) C() <-chan time.Time {
	if t.fn {
		return nil
	}
	return t.t.C
}

func (t *trackedTimer) Stop() bool {
	t.c.mu.Lock()
	t.stopped = true
	delete(t.c.timers, t)
	t.c.mu.Unlock()
	return t.t.Stop()
}

func (t *trackedTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	t.stopped, t.deadline = false, time.Now().Add(d)
	t.c.mu.Unlock()
	t.c.add(t)
	return t.t.Reset(d)
}
