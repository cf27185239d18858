package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/toolcache"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchServers returns n fixture server configs (real clock); the first
// hung of them never answer initialize.
func benchServers(b *testing.B, dir string, n, hung int) map[string]json.RawMessage {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for i := range n {
		env := map[string]string{asFixtureEnv: "1", "GORACE": "atexit_sleep_ms=0"}
		if i < hung {
			env["MCP_FIXTURE_INIT_DELAY_MS"] = "600000"
		}
		raw, _ := json.Marshal(map[string]any{"command": exe, "env": env})
		out[fmt.Sprintf("s%02d", i)] = raw
	}
	return out
}

func benchRuntime(b *testing.B, servers map[string]json.RawMessage, cacheDir string) *Runtime {
	rt, err := New(Options{
		Logger:    discardLogger(),
		CacheDir:  cacheDir,
		Discovery: config.Options{Inline: servers, HomeDir: b.TempDir(), Env: func(string) (string, bool) { return "", false }},
	})
	if err != nil {
		b.Fatal(err)
	}
	return rt
}

// BenchmarkStartup50WarmCache: a session over 50 stdio fixture servers, 10
// of which hang in initialize, with every server's tools in the cache. The
// target is tools available at the gate: 250 ms plus under 20 ms.
func BenchmarkStartup50WarmCache(b *testing.B) {
	dir := b.TempDir()
	servers := benchServers(b, dir, 50, 10)
	cacheDir := filepath.Join(dir, "cache")
	// Warm the cache with the tools a fixture lists.
	probe := benchRuntime(b, map[string]json.RawMessage{"probe": benchServers(b, dir, 1, 0)["s00"]}, "")
	sess, err := probe.OpenSession(context.Background(), SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var tools []*mcp.Tool
	for _, t := range sess.Tools() {
		tools = append(tools, &mcp.Tool{Name: t.MCPName, Description: t.Description, InputSchema: t.InputSchema})
	}
	probe.Close(context.Background())
	cache := toolcache.New(cacheDir, nil)
	rt := benchRuntime(b, servers, cacheDir)
	for _, s := range rt.Config().Servers {
		if _, err := cache.Put(s.Name, s.ConfigHash(), tools); err != nil {
			b.Fatal(err)
		}
	}
	rt.Close(context.Background())

	var gate []time.Duration
	exposed := 0
	for b.Loop() {
		rt := benchRuntime(b, servers, cacheDir)
		start := time.Now()
		sess, err := rt.OpenSession(context.Background(), SessionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		gate = append(gate, time.Since(start))
		exposed = len(sess.Tools())
		b.StopTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rt.Close(ctx)
		cancel()
		b.StartTimer()
	}
	slices.Sort(gate)
	b.ReportMetric(float64(gate[len(gate)/2].Microseconds())/1000, "gate-ms-median")
	b.ReportMetric(float64(gate[len(gate)-1].Microseconds())/1000, "gate-ms-max")
	b.ReportMetric(float64(exposed), "tools-at-gate")
}

// BenchmarkMemoryPerStdioServer: what the runtime holds per connected
// stdio server, after a GC: heap, goroutine stacks, goroutines and OS
// threads (a thread blocked in a system call per server, as a blocking
// waitid would be, costs its system stack too); and what connecting it
// allocated on the way (alloc-bytes). Take one iteration per process: Go
// keeps an OS thread once made, so a second iteration would find the
// first one's threads idle and count none.
//
//	go test -run '^$' -bench MemoryPerStdioServer -benchtime 1x -count 5 ./runtime/host/
func BenchmarkMemoryPerStdioServer(b *testing.B) {
	const n = 20
	dir := b.TempDir()
	servers := benchServers(b, dir, n, 0)
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		goroutines, threads := runtime.NumGoroutine(), osThreads(b)
		rt := benchRuntime(b, servers, "")
		if _, err := rt.OpenSession(context.Background(), SessionOptions{}); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "alloc-bytes/server")
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "heap-bytes/server")
		b.ReportMetric(float64(int64(after.StackInuse)-int64(before.StackInuse))/n, "stack-bytes/server")
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/n, "goroutines/server")
		b.ReportMetric(float64(osThreads(b)-threads)/n, "threads/server")
		rt.Close(context.Background())
	}
}

// osThreads returns the number of OS threads of this process.
func osThreads(b *testing.B) int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no Threads line in /proc/self/status")
	return 0
}

// BenchmarkExitToRelaunch: from SIGKILL of a stdio server to its
// replacement process starting, on the real clock.
func BenchmarkExitToRelaunch(b *testing.B) {
	dir := b.TempDir()
	rt := benchRuntime(b, benchServers(b, dir, 1, 0), "")
	defer rt.Close(context.Background())
	if _, err := rt.OpenSession(context.Background(), SessionOptions{}); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		// Stay stable past the stability window is not needed: the
		// breaker only delays after a short-lived success, so use a fresh
		// server each time by resetting the step through a long uptime.
		rt.mu.Lock()
		s := rt.servers["s00"]
		rt.mu.Unlock()
		s.mu.Lock()
		s.step = 0
		pid := 0
		if s.conn != nil && s.conn.proc != nil {
			pid = s.conn.proc.PID()
		}
		s.mu.Unlock()
		last := rt.Events().Last()
		b.StartTimer()
		start := time.Now()
		if err := proctest.Kill(pid, syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		if _, err := rt.Events().Await(context.Background(), last, event.Matcher{Kind: event.ProcessStarted}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		rt.Events().Await(context.Background(), last, event.Matcher{Kind: event.RestartSucceeded})
		b.StartTimer()
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "relaunch-ms-median")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "relaunch-ms-p90")
}

// BenchmarkWarmAcquire: Acquire and release of a connected shared server.
func BenchmarkWarmAcquire(b *testing.B) {
	dir := b.TempDir()
	rt := benchRuntime(b, benchServers(b, dir, 1, 0), "")
	defer rt.Close(context.Background())
	release, err := rt.Acquire(context.Background(), "s00")
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	b.ReportAllocs()
	for b.Loop() {
		r, err := rt.Acquire(context.Background(), "s00")
		if err != nil {
			b.Fatal(err)
		}
		r()
	}
}

// BenchmarkConnectOneStdio: from nothing to one stdio fixture server's
// tools, the runtime (New, then OpenSession with its startup gate) against
// a raw go-sdk client (CommandTransport, Connect at the runtime's default
// protocol version, ListTools), alternating in every iteration so both see
// the same machine. It reports the median of each and their ratio; the
// process start and the server's own handshake are in both.
//
//	go test -run '^$' -bench ConnectOneStdio -benchtime 30x -count 5 ./runtime/host/
func BenchmarkConnectOneStdio(b *testing.B) {
	ctx := context.Background()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	env := map[string]string{asFixtureEnv: "1", "GORACE": "atexit_sleep_ms=0"}
	raw, _ := json.Marshal(map[string]any{"command": exe, "env": env})
	servers := map[string]json.RawMessage{"a": raw}
	var rawTimes, rtTimes []time.Duration
	for b.Loop() {
		start := time.Now()
		cmd := exec.Command(exe)
		cmd.Env = os.Environ()
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cs := rawClient(b, &mcp.CommandTransport{Command: cmd})
		rawTimes = append(rawTimes, time.Since(start))
		cs.Close()
		_ = cmd.Wait()

		start = time.Now()
		rt := benchRuntime(b, servers, "")
		sess, err := rt.OpenSession(ctx, SessionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if r := sess.StartReport(); len(r.Ready) != 1 {
			b.Fatalf("not ready at the gate: %+v", r)
		}
		rtTimes = append(rtTimes, time.Since(start))
		rt.Close(ctx)
	}
	medianOf := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	r, m := medianOf(rawTimes), medianOf(rtTimes)
	b.ReportMetric(float64(r.Microseconds())/1000, "raw-ms-median")
	b.ReportMetric(float64(m.Microseconds())/1000, "runtime-ms-median")
	b.ReportMetric(float64(m)/float64(r), "runtime/raw")
}
