package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// pidLog collects the pid of every process a runtime starts, from its
// process.started events.
type pidLog struct {
	cancel func()
	done   chan struct{}
	pids   []int
}

func watchPIDs(rt *host.Runtime) *pidLog {
	ch, cancel := rt.Events().Subscribe(1 << 16)
	p := &pidLog{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for e := range ch {
			if e.Kind != event.ProcessStarted {
				continue
			}
			if s, ok := e.Get("pid"); ok {
				if pid, err := strconv.Atoi(s); err == nil {
					p.pids = append(p.pids, pid)
				}
			}
		}
	}()
	return p
}

// list ends the watch and returns the pids seen.
func (p *pidLog) list() []int {
	p.cancel()
	<-p.done
	return p.pids
}

// startup: a session over StartupServers stdio servers (and a fifth of
// that, for linearity) from nothing to every server ready, then stopped
// with no process left.
func (b *bencher) startup(ctx context.Context) (Workload, error) {
	big := b.cfg.StartupServers
	small := max(big/5, 1)
	wl := Workload{Name: Startup, Summary: fmt.Sprintf("session start with %d (and %d) stdio fixture servers to all ready, then stop", big, small)}
	ready := map[int]*series{}
	perServer := map[int]*series{}
	heapPer := map[int]*series{}
	for _, n := range []int{small, big} {
		ready[n] = &series{name: fmt.Sprintf("ready@%d", n), unit: "s"}
		perServer[n] = &series{name: fmt.Sprintf("ready-per-server@%d", n), unit: "ms"}
		heapPer[n] = &series{name: fmt.Sprintf("heap-per-server@%d", n), unit: "KiB"}
	}
	ready[big].goal, ready[big].goalOK = "< 2", goalBelow(2)
	marginal := &series{name: "heap-marginal-per-server", unit: "KiB"}
	cpuSelf := &series{name: fmt.Sprintf("cpu-runtime-per-server@%d", big), unit: "ms"}
	cpuChild := &series{name: fmt.Sprintf("cpu-fixture-per-server@%d", big), unit: "ms"}
	goroutines := &series{name: fmt.Sprintf("goroutines-per-server@%d", big), unit: "n"}
	stopS := &series{name: fmt.Sprintf("stop@%d", big), unit: "s"}
	left := &series{name: "processes-left", unit: "n", goal: "= 0", goalOK: goalAtMost(0)}
	failed := &series{name: "servers-not-ready", unit: "n", goal: "= 0", goalOK: goalAtMost(0)}
	for run := 1; run <= b.cfg.Runs; run++ {
		var heaps [2]float64
		for i, n := range []int{small, big} {
			baseHeap := heap()
			self0, child0 := cpu()
			baseG := runtime.NumGoroutine()
			rt, err := b.runtime(b.servers(n, 0, 0), "")
			if err != nil {
				return wl, err
			}
			pl := watchPIDs(rt)
			start := time.Now()
			sess, err := rt.OpenSession(ctx, host.SessionOptions{})
			took := time.Since(start)
			if err != nil {
				b.stop(rt, pl.list())
				return wl, err
			}
			rep := sess.StartReport()
			self1, _ := cpu()
			h := heap()
			g := runtime.NumGoroutine()
			stopped, leftover := b.stop(rt, pl.list())
			_, child1 := cpu()
			heaps[i] = float64(int64(h) - int64(baseHeap))
			ready[n].add(took.Seconds())
			perServer[n].add(ms(took) / float64(n))
			heapPer[n].add(float64(int64(h)-int64(baseHeap)) / 1024 / float64(n))
			if n == big {
				goroutines.add(float64(g-baseG) / float64(n))
				stopS.add(stopped.Seconds())
				failed.add(float64(n - len(rep.Ready)))
				cpuSelf.add(ms(self1-self0) / float64(n))
				cpuChild.add(ms(child1-child0) / float64(n))
			}
			left.add(float64(leftover))
			if leftover > 0 {
				wl.Notes = append(wl.Notes, fmt.Sprintf("run %d: %d of %d processes still alive after stop", run, leftover, n))
			}
			b.progress("startup  run %d/%d  %3d servers  ready %.2fs (%d ready, %d failed)  heap %.0f KiB/server  stop %.2fs  left %d",
				run, b.cfg.Runs, n, took.Seconds(), len(rep.Ready), len(rep.Failed), float64(int64(h)-int64(baseHeap))/1024/float64(n), stopped.Seconds(), leftover)
		}
		if big > small {
			marginal.add((heaps[1] - heaps[0]) / 1024 / float64(big-small))
		}
	}
	for _, s := range []*series{ready[small], ready[big], perServer[small], perServer[big], heapPer[small], heapPer[big], marginal, cpuSelf, cpuChild, goroutines, stopS, failed, left} {
		wl.Metrics = append(wl.Metrics, s.metric())
	}
	return wl, nil
}

// calls: Calls concurrent calls spread evenly over CallServers servers,
// Runs bursts on one runtime.
func (b *bencher) calls(ctx context.Context) (Workload, error) {
	n, calls := b.cfg.CallServers, b.cfg.Calls
	wl := Workload{Name: Calls, Summary: fmt.Sprintf("%d concurrent echo calls spread over %d stdio servers", calls, n)}
	p50 := &series{name: "latency-p50", unit: "ms"}
	p99 := &series{name: "latency-p99", unit: "ms"}
	wall := &series{name: "burst-wall", unit: "ms"}
	rate := &series{name: "throughput", unit: "call/s"}
	fails := &series{name: "failures", unit: "n", goal: "= 0", goalOK: goalAtMost(0)}
	rt, err := b.runtime(b.servers(n, 0, 0), "")
	if err != nil {
		return wl, err
	}
	pl := watchPIDs(rt)
	defer func() {
		if _, left := b.stop(rt, pl.list()); left > 0 {
			wl.Notes = append(wl.Notes, fmt.Sprintf("%d processes still alive after stop", left))
		}
	}()
	sess, err := rt.OpenSession(ctx, host.SessionOptions{})
	if err != nil {
		return wl, err
	}
	if rep := sess.StartReport(); len(rep.Ready) != n {
		return wl, fmt.Errorf("only %d of %d servers ready: %v", len(rep.Ready), n, rep.Errors)
	}
	args := map[string]any{"text": "hello"}
	for run := 1; run <= b.cfg.Runs; run++ {
		lat := make([]time.Duration, calls)
		errs := make([]error, calls)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range calls {
			wg.Go(func() {
				<-gate
				start := time.Now()
				_, err := sess.CallTool(ctx, fmt.Sprintf("mcp_s%03d_echo", i%n), args)
				lat[i], errs[i] = time.Since(start), err
			})
		}
		start := time.Now()
		close(gate)
		wg.Wait()
		took := time.Since(start)
		failures := 0
		var first error
		for _, err := range errs {
			if err != nil {
				failures++
				if first == nil {
					first = err
				}
			}
		}
		slices.Sort(lat)
		p50.add(ms(quantile(lat, 0.5)))
		p99.add(ms(quantile(lat, 0.99)))
		wall.add(ms(took))
		rate.add(float64(calls) / took.Seconds())
		fails.add(float64(failures))
		if first != nil {
			wl.Notes = append(wl.Notes, fmt.Sprintf("run %d: %d failures, first: %v", run, failures, first))
		}
		b.progress("calls    run %d/%d  %d calls over %d servers  p50 %.1fms  p99 %.1fms  wall %.0fms  failures %d",
			run, b.cfg.Runs, calls, n, ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)), ms(took), failures)
	}
	wl.Metrics = []Metric{p50.metric(), p99.metric(), wall.metric(), rate.metric(), fails.metric()}
	return wl, nil
}

// storm: StormServers servers connected, then every process SIGKILLed at
// once; measures until all are back and the most connect attempts that ran
// at once (must stay within the cap).
func (b *bencher) storm(ctx context.Context) (Workload, error) {
	n := b.cfg.StormServers
	limit := b.cfg.ConnectConcurrency
	wl := Workload{Name: Storm, Summary: fmt.Sprintf("%d stdio servers SIGKILLed at once, all restarted (connect cap %d)", n, limit)}
	allBack := &series{name: "all-back", unit: "s"}
	medBack := &series{name: "server-back-p50", unit: "s"}
	peak := &series{name: "peak-concurrent-connects", unit: "n", goal: fmt.Sprintf("<= %d", limit), goalOK: goalAtMost(float64(limit))}
	notBack := &series{name: "servers-not-back", unit: "n", goal: "= 0", goalOK: goalAtMost(0)}
	left := &series{name: "processes-left", unit: "n", goal: "= 0", goalOK: goalAtMost(0)}
	servers := b.servers(n, 0, 0)
	for run := 1; run <= b.cfg.Runs; run++ {
		rt, err := b.runtime(servers, "")
		if err != nil {
			return wl, err
		}
		pl := watchPIDs(rt)
		sess, err := rt.OpenSession(ctx, host.SessionOptions{})
		if err != nil {
			b.stop(rt, pl.list())
			return wl, err
		}
		if rep := sess.StartReport(); len(rep.Ready) != n {
			b.stop(rt, pl.list())
			return wl, fmt.Errorf("only %d of %d servers ready: %v", len(rep.Ready), n, rep.Errors)
		}
		victims := pids(rt)
		events, cancel := rt.Events().Subscribe(1 << 16)
		rt.ResetConnectPeak()
		start := time.Now()
		for _, pid := range victims {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		back := map[string]time.Duration{}
		wctx, wcancel := context.WithTimeout(ctx, DefaultWaitTimeout)
	wait:
		for len(back) < n {
			select {
			case e := <-events:
				if e.Kind == event.RestartSucceeded {
					if _, seen := back[e.Server]; !seen {
						back[e.Server] = time.Since(start)
					}
				}
			case <-wctx.Done():
				break wait
			}
		}
		wcancel()
		cancel()
		took := time.Since(start)
		cs := rt.ConnectStats()
		times := make([]time.Duration, 0, len(back))
		for _, d := range back {
			times = append(times, d)
		}
		slices.Sort(times)
		_, leftover := b.stop(rt, pl.list())
		allBack.add(took.Seconds())
		medBack.add(quantile(times, 0.5).Seconds())
		peak.add(float64(cs.Peak))
		notBack.add(float64(n - len(back)))
		left.add(float64(leftover))
		if len(back) < n {
			wl.Notes = append(wl.Notes, fmt.Sprintf("run %d: only %d of %d servers back within %s", run, len(back), n, DefaultWaitTimeout))
		}
		if leftover > 0 {
			wl.Notes = append(wl.Notes, fmt.Sprintf("run %d: %d processes still alive after stop", run, leftover))
		}
		b.progress("storm    run %d/%d  %d killed  all back %.2fs  peak connects %d (cap %d)  left %d",
			run, b.cfg.Runs, len(victims), took.Seconds(), cs.Peak, limit, leftover)
	}
	wl.Metrics = []Metric{allBack.metric(), medBack.metric(), peak.metric(), notBack.metric(), left.metric()}
	return wl, nil
}

// cache: CacheServers servers, CacheSlow of them slow to initialize; the
// startup gate with an empty tool cache (held until the slow ones answer)
// and with a warm one (released at the gate timeout, the slow servers'
// tools deferred from the cache).
func (b *bencher) cache(ctx context.Context) (Workload, error) {
	n, slow := b.cfg.CacheServers, b.cfg.CacheSlow
	wl := Workload{Name: Cache, Summary: fmt.Sprintf("startup gate over %d stdio servers, %d answering initialize after %s: cold vs warm tool cache", n, slow, b.cfg.SlowInit)}
	cold := &series{name: "gate-cold", unit: "ms"}
	warm := &series{name: "gate-warm", unit: "ms"}
	coldTools := &series{name: "tools-at-gate-cold", unit: "n"}
	warmTools := &series{name: "tools-at-gate-warm", unit: "n"}
	deferred := &series{name: "deferred-warm", unit: "n"}
	servers := b.servers(n, slow, b.cfg.SlowInit)
	for run := 1; run <= b.cfg.Runs; run++ {
		cacheDir := fmt.Sprintf("%s/cache%d", b.dir, run)
		var gates [2]time.Duration
		var tools [2]int
		for i := range 2 {
			rt, err := b.runtime(servers, cacheDir)
			if err != nil {
				return wl, err
			}
			pl := watchPIDs(rt)
			last := rt.Events().Last()
			start := time.Now()
			sess, err := rt.OpenSession(ctx, host.SessionOptions{})
			if err != nil {
				b.stop(rt, pl.list())
				return wl, err
			}
			gates[i] = time.Since(start)
			tools[i] = len(sess.Tools())
			if i == 1 {
				deferred.add(float64(len(sess.StartReport().Deferred)))
			}
			if i == 0 {
				// The warm start needs every server's tools in the cache.
				wctx, cancel := context.WithTimeout(ctx, DefaultWaitTimeout)
				after := last
				for range n {
					e, err := rt.Events().Await(wctx, after, event.Matcher{Kind: event.CacheWritten})
					if err != nil {
						wl.Notes = append(wl.Notes, fmt.Sprintf("run %d: cache not written for every server: %v", run, err))
						break
					}
					after = e.Seq
				}
				cancel()
			}
			if _, left := b.stop(rt, pl.list()); left > 0 {
				wl.Notes = append(wl.Notes, fmt.Sprintf("run %d: %d processes still alive after stop", run, left))
			}
		}
		cold.add(ms(gates[0]))
		warm.add(ms(gates[1]))
		coldTools.add(float64(tools[0]))
		warmTools.add(float64(tools[1]))
		b.progress("cache    run %d/%d  gate cold %.0fms (%d tools)  warm %.0fms (%d tools)", run, b.cfg.Runs, ms(gates[0]), tools[0], ms(gates[1]), tools[1])
	}
	wl.Metrics = []Metric{cold.metric(), warm.metric(), coldTools.metric(), warmTools.metric(), deferred.metric()}
	return wl, nil
}
