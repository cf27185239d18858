package host

import (
	"context"
	"flag"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcplife/mcplife/runtime/config"
)

var soakHours = flag.Int("soak-hours", 2, "virtual hours TestSoak runs")

// TestSoak runs several servers and sessions for hours of virtual time with
// random kills and wedges, and checks that no call outlives its deadline
// bound and that goroutines and memory stay flat. Figures are logged.
func TestSoak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const toolTimeout = 2 * time.Second
		cfgs := map[string]string{}
		for i := range 4 {
			cfgs["s"+strconv.Itoa(i)] = `"toolTimeout": 2000`
		}
		env := newMemRuntime(t, cfgs, Options{EventLimit: 10_000})
		rng := rand.New(rand.NewPCG(1, 2))
		var sessions []*Session
		for range 6 {
			sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sessions = append(sessions, sess)
		}
		// The longest a call may take: its timeout, two probe steps, a
		// restart attempt (bounded by the connect timeout) and one retry.
		bound := 2*toolTimeout + 2*DefaultProbeTimeout + config.DefaultConnectTimeout
		var mu sync.Mutex
		calls, overdue, failures := 0, 0, 0
		var longest time.Duration
		var wg sync.WaitGroup
		sample := func() (int, uint64) {
			synctest.Wait()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return runtime.NumGoroutine(), ms.HeapAlloc
		}
		var g1 int
		var h1 uint64
		end := time.Now().Add(time.Duration(*soakHours) * time.Hour)
		for hour := 0; time.Now().Before(end); hour++ {
			hourEnd := time.Now().Add(time.Hour)
			for time.Now().Before(hourEnd) {
				advance(time.Duration(rng.IntN(60)+1) * time.Second)
				name := "s" + strconv.Itoa(rng.IntN(4))
				m := env.servers[name]
				switch r := rng.IntN(10); {
				case r == 0:
					m.mu.Lock()
					if len(m.conns) > 0 {
						c := m.conns[len(m.conns)-1]
						m.mu.Unlock()
						c.Close()
					} else {
						m.mu.Unlock()
					}
				case r == 1:
					m.mu.Lock()
					if m.block == nil {
						b := make(chan struct{})
						m.block = b
						time.AfterFunc(time.Duration(rng.IntN(20))*time.Second, func() {
							m.mu.Lock()
							if m.block == b {
								close(b)
								m.block = nil
							}
							m.mu.Unlock()
						})
					}
					m.mu.Unlock()
				default:
					sess := sessions[rng.IntN(len(sessions))]
					wg.Go(func() {
						start := time.Now()
						_, err := sess.CallTool(context.Background(), "mcp_"+name+"_echo", map[string]any{"text": "x"})
						d := time.Since(start)
						mu.Lock()
						calls++
						longest = max(longest, d)
						if err != nil {
							failures++
						}
						if d > bound {
							overdue++
							t.Logf("overdue call: %v: %v", d, err)
						}
						mu.Unlock()
					})
				}
			}
			if hour == *soakHours/2 {
				// By now the event history is at its limit; memory must
				// stay flat from here.
				g1, h1 = sample()
			}
		}
		wg.Wait()
		for _, m := range env.servers {
			m.mu.Lock()
			if m.block != nil {
				close(m.block)
				m.block = nil
			}
			m.mu.Unlock()
		}
		advance(10 * time.Minute) // let restarts settle
		g2, h2 := sample()
		t.Logf("soak: %d virtual hours, %d calls, %d failed (restart codes), %d over the %v bound (longest %v); goroutines %d -> %d; heap %d KiB -> %d KiB (from mid-run to end)",
			*soakHours, calls, failures, overdue, bound, longest, g1, g2, h1/1024, h2/1024)
		if overdue != 0 {
			t.Errorf("%d calls took longer than the bound %v", overdue, bound)
		}
		if h2 > h1*3/2 {
			t.Errorf("heap grew from %d KiB to %d KiB", h1/1024, h2/1024)
		}
		if g2 > g1+8 {
			t.Errorf("goroutines grew from %d to %d", g1, g2)
		}
		if calls < 100 {
			t.Errorf("only %d calls made; the soak did not exercise the runtime", calls)
		}
	})
}
