package clocktest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTimersFireInOrder(t *testing.T) {
	f := New()
	var mu sync.Mutex
	var got []time.Duration
	var wg sync.WaitGroup
	for _, d := range []time.Duration{5 * time.Second, time.Second, 2 * time.Second} {
		wg.Add(1)
		f.AfterFunc(d, func() {
			defer wg.Done()
			mu.Lock()
			got = append(got, f.Elapsed())
			mu.Unlock()
		})
	}
	tm := f.NewTimer(3 * time.Second)
	if p := f.Pending(); len(p) != 4 || p[0] != time.Second {
		t.Fatalf("Pending = %v", p)
	}
	f.Advance(10 * time.Second)
	wg.Wait()
	select {
	case at := <-tm.C():
		if at.Sub(New().Now()) != 3*time.Second {
			t.Fatalf("timer fired at %v", at)
		}
	default:
		t.Fatal("channel timer did not fire")
	}
	if len(got) != 3 {
		t.Fatalf("callbacks: %v", got)
	}
	if f.Elapsed() != 10*time.Second {
		t.Fatalf("Elapsed = %v", f.Elapsed())
	}
}

func TestStopAndReset(t *testing.T) {
	f := New()
	tm := f.NewTimer(time.Second)
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop should report true once")
	}
	f.Advance(2 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("stopped timer fired")
	default:
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer reported pending")
	}
	f.Advance(time.Second)
	<-tm.C()
}

func TestBlockUntilAndAdvanceToNext(t *testing.T) {
	f := New()
	done := make(chan error)
	go func() { done <- clock.Sleep(context.Background(), f, time.Minute) }()
	if err := f.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if d, ok := f.AdvanceToNext(); !ok || d != time.Minute {
		t.Fatalf("AdvanceToNext = %v %v", d, ok)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.BlockUntil(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("BlockUntil on cancelled ctx = %v", err)
	}
}

func TestWithTimeoutCause(t *testing.T) {
	f := New()
	ctx, cancel := clock.WithTimeout(context.Background(), f, 3*time.Second, "probe")
	defer cancel()
	f.Advance(3 * time.Second)
	<-ctx.Done()
	var te *clock.TimeoutError
	if err := context.Cause(ctx); !errors.As(err, &te) || te.What != "probe" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cause = %v", err)
	}
}
