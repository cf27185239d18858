package clocktest

import (
	"testing"
	"time"
)

// TestTrackedPending: the tracked clock lists the timers that have neither
// fired nor been stopped, soonest first; Reset moves one, Stop and firing
// drop it, and pruning never drops a pending one.
func TestTrackedPending(t *testing.T) {
	c := NewTracked()
	hour := c.NewTimer(time.Hour)
	minute := c.AfterFunc(time.Minute, func() {})
	if minute.C() != nil {
		t.Error("an AfterFunc timer has a channel")
	}
	p := c.Pending()
	if len(p) != 2 || p[0] > time.Minute || p[0] < time.Minute-time.Second || p[1] < time.Hour-time.Second {
		t.Fatalf("pending %v, want about [1m 1h]", p)
	}
	hour.Reset(time.Second)
	if p := c.Pending(); len(p) != 2 || p[0] > time.Second {
		t.Fatalf("after Reset(1s): pending %v", p)
	}
	minute.Stop()
	fired := c.NewTimer(time.Millisecond)
	<-fired.C()
	if p := c.Pending(); len(p) != 1 || p[0] > time.Second {
		t.Fatalf("after Stop and a timer fired: pending %v, want the 1s timer alone", p)
	}
	hour.Stop()
	if p := c.Pending(); len(p) != 0 {
		t.Fatalf("after every Stop: pending %v", p)
	}
	// Many short timers that fire are pruned; a long one stays listed.
	long := c.NewTimer(time.Hour)
	defer long.Stop()
	for range 3 * pruneAt {
		s := c.NewTimer(time.Nanosecond)
		<-s.C()
	}
	c.mu.Lock()
	kept := len(c.timers)
	c.mu.Unlock()
	if kept > 2*pruneAt {
		t.Errorf("%d timers kept after %d fired, want at most %d", kept, 3*pruneAt, 2*pruneAt)
	}
	if p := c.Pending(); len(p) != 1 || p[0] < time.Hour-time.Second {
		t.Fatalf("pending %v, want the hour timer alone", p)
	}
}
