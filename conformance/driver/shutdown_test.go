package driver

import (
	"context"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
)

// TestRunOutClock: past shutdown's bound every wait on the driver's fake
// clock runs out, the ones armed before and the ones armed after, each at
// its own deadline, until the context ends.
func TestRunOutClock(t *testing.T) {
	fake := clocktest.New()
	before := fake.NewTimer(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		runOutClock(ctx, fake)
	}()
	<-before.C()
	if got := fake.Elapsed(); got != time.Hour {
		t.Fatalf("the first timer fired at %v, want 1h", got)
	}
	// A wait armed once the clock runs out (Stop's next step) runs out too.
	after := fake.NewTimer(2 * time.Second)
	<-after.C()
	if got := fake.Elapsed(); got != time.Hour+2*time.Second {
		t.Fatalf("the second timer fired at %v, want 1h2s", got)
	}
	cancel()
	<-ended
	// Nothing runs the clock any more.
	late := fake.NewTimer(time.Second)
	defer late.Stop()
	if p := fake.Pending(); len(p) != 1 || p[0] != time.Second {
		t.Fatalf("pending %v after the end, want [1s]", p)
	}
}
