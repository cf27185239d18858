package latch

import (
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLatch: functions given before the close run at the close, in
// order, once; one given after it runs at once; Done closes with it.
func TestLatch(t *testing.T) {
	l := New()
	var ran []int
	l.AfterFunc(func() { ran = append(ran, 1) })
	l.AfterFunc(func() { ran = append(ran, 2) })
	select {
	case <-l.Done():
		t.Fatal("Done closed before Close")
	default:
	}
	if len(ran) != 0 {
		t.Fatal("a function ran before Close")
	}
	l.Close()
	l.Close()
	<-l.Done()
	l.AfterFunc(func() { ran = append(ran, 3) })
	if !slices.Equal(ran, []int{1, 2, 3}) {
		t.Fatalf("ran %v, want [1 2 3]", ran)
	}
}

// TestLatchConcurrent: every function given while another goroutine
// closes the latch runs exactly once.
func TestLatchConcurrent(t *testing.T) {
	for range 100 {
		l := New()
		var mu sync.Mutex
		count := 0
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				l.AfterFunc(func() { mu.Lock(); count++; mu.Unlock() })
			})
		}
		wg.Go(l.Close)
		wg.Wait()
		if count != 8 {
			t.Fatalf("%d functions ran, want 8", count)
		}
	}
}
