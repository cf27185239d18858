package host

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/proc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The comparative benchmarks measure what a Session call costs over a raw
// go-sdk ClientSession.CallTool to the same server. Both sides are set up
// alike: one client each, both with a discard slog logger (the runtime's
// default; a go-sdk client with default options is ~20% slower), the same
// protocol version and the same server code. The two sides alternate in
// small batches within one run (raw first in even rounds, session first in
// odd ones), so machine noise lands on both; each round yields one ratio
// session/raw, and the benchmark reports the median ratio and its spread.
//
// Reproduce (five runs, benchstat-style lines, a table per run):
//
//	go test -run '^$' -bench 'CallOverhead' -benchtime 4000x -count 5 ./runtime/host/
//
// ns/op is the time of one raw call plus one session call. -bench.batch sets
// the calls per side per round (default 10).
//
// Garbage collection: one go-sdk call allocates about 360 KB (its JSON
// decoder), so with the collector running freely a collection lands in
// nearly every round, on whichever side happens to cross the heap goal,
// and single rounds range from 0.3x to 3x. By default the collector is
// therefore paused while a round is timed and run between rounds, outside
// the timing, so that neither side pays for the other's garbage; each
// side's garbage is reported apart (B/call, allocs/call: the Session adds
// under 1%). -bench.gc=free measures with the collector running as usual.

// benchBatch is the number of calls per side per round.
var benchBatch = flag.Int("bench.batch", 10, "calls per side per round of the interleaved benchmarks")

// benchGC says when the interleaved benchmarks collect garbage: "rounds"
// (between rounds, outside the timing) or "free" (as usual).
var benchGC = flag.String("bench.gc", "rounds", "garbage collection in the interleaved benchmarks: rounds (between rounds, untimed) or free")

// discardLogger is the logger both sides of a comparison use.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// interleave runs raw and sess alternately in rounds of benchBatch calls
// each, b.N calls per side in all, and reports the ratio of their round
// times, per-call medians and per-call allocations.
func interleave(b *testing.B, raw, sess func() error) {
	b.Helper()
	// Warm both sides up (connections, pools, lazily built schemas).
	batchN := *benchBatch
	for range batchN {
		if err := raw(); err != nil {
			b.Fatal(err)
		}
		if err := sess(); err != nil {
			b.Fatal(err)
		}
	}
	rawAllocs, rawBytes := allocsPerCall(b, 200, raw)
	sessAllocs, sessBytes := allocsPerCall(b, 200, sess)

	rounds := max((b.N+batchN-1)/batchN, 1)
	ratios := make([]float64, 0, rounds)
	rawNs := make([]float64, 0, rounds)
	sessNs := make([]float64, 0, rounds)
	batch := func(f func() error) time.Duration {
		start := time.Now()
		for range batchN {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	betweenRounds := func() {}
	switch *benchGC {
	case "rounds":
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		betweenRounds = runtime.GC
	case "free":
	default:
		b.Fatalf("-bench.gc=%q: want rounds or free", *benchGC)
	}
	b.ResetTimer()
	for r := range rounds {
		betweenRounds()
		var dr, ds time.Duration
		if r%2 == 0 {
			dr = batch(raw)
			ds = batch(sess)
		} else {
			ds = batch(sess)
			dr = batch(raw)
		}
		ratios = append(ratios, float64(ds)/float64(dr))
		rawNs = append(rawNs, float64(dr)/float64(batchN))
		sessNs = append(sessNs, float64(ds)/float64(batchN))
	}
	b.StopTimer()
	st := summarize(ratios)
	b.ReportMetric(st.median, "ratio-median")
	b.ReportMetric(st.p10, "ratio-p10")
	b.ReportMetric(st.p90, "ratio-p90")
	b.ReportMetric(summarize(rawNs).median, "raw-ns/call")
	b.ReportMetric(summarize(sessNs).median, "session-ns/call")
	b.ReportMetric(rawAllocs, "raw-allocs/call")
	b.ReportMetric(sessAllocs, "session-allocs/call")
	b.ReportMetric(rawBytes, "raw-B/call")
	b.ReportMetric(sessBytes, "session-B/call")
	if rounds < 10 {
		return // the probe run of b.N=1; testing keeps only ~10 log lines
	}
	var t strings.Builder
	fmt.Fprintf(&t, "%d rounds of %d calls per side, interleaved, garbage collected %s\n", rounds, batchN, map[string]string{"rounds": "between rounds", "free": "freely"}[*benchGC])
	fmt.Fprintf(&t, "%-8s %14s %12s %10s\n", "side", "ns/call(med)", "allocs/call", "B/call")
	fmt.Fprintf(&t, "%-8s %14.0f %12.1f %10.0f\n", "raw", summarize(rawNs).median, rawAllocs, rawBytes)
	fmt.Fprintf(&t, "%-8s %14.0f %12.1f %10.0f\n", "session", summarize(sessNs).median, sessAllocs, sessBytes)
	fmt.Fprintf(&t, "ratio session/raw: median %.3f  p10 %.3f  p90 %.3f  min %.3f  max %.3f", st.median, st.p10, st.p90, st.min, st.max)
	b.Log("\n" + t.String())
}

// allocsPerCall returns the mean heap allocations and bytes of n calls.
func allocsPerCall(b *testing.B, n int, f func() error) (allocs, bytes float64) {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(n), float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}

// stats are order statistics of a sample.
type stats struct{ min, p10, median, p90, max float64 }

func summarize(xs []float64) stats {
	s := slices.Clone(xs)
	slices.Sort(s)
	at := func(q float64) float64 { return s[int(q*float64(len(s)-1)+0.5)] }
	return stats{min: s[0], p10: at(0.1), median: at(0.5), p90: at(0.9), max: s[len(s)-1]}
}

// rawClient connects a raw go-sdk client, configured like the runtime's,
// and lists the server's tools as the runtime does (and as any client must
// to know what it may call): a ClientSession that has listed a tool looks it
// up on every CallTool, so a raw side that never listed would skip work the
// Session's go-sdk client does.
func rawClient(b *testing.B, t mcp.Transport) *mcp.ClientSession {
	b.Helper()
	return rawClientVersion(b, t, DefaultProtocolVersion)
}

// rawClientVersion is rawClient asking protocol version first.
func rawClientVersion(b *testing.B, t mcp.Transport, version string) *mcp.ClientSession {
	b.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcplife", Version: "1"}, &mcp.ClientOptions{Logger: discardLogger()}).
		Connect(context.Background(), t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	return cs
}

// memPair sets up the in-memory comparison: a raw client and a Session,
// each connected to its own instance of the same server code. It returns
// one call of each side, and the Session.
func memPair(b *testing.B) (raw, sess func() error, session *Session) {
	ctx := context.Background()
	newServer := func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ServerOptions{Logger: discardLogger()})
		echoTools(s)
		return s
	}
	args := map[string]any{"text": "hello"}

	st, ct := mcp.NewInMemoryTransports()
	ss, err := newServer().Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs := rawClient(b, ct)
	b.Cleanup(func() { cs.Close() })

	rt, err := New(Options{
		Logger: discardLogger(),
		Discovery: config.Options{HomeDir: b.TempDir(), Env: func(string) (string, bool) { return "", false },
			Inline: map[string]json.RawMessage{"a": json.RawMessage(`{"command":"mem"}`)}},
		Dial: func(ctx context.Context, _ *config.Server, _ *config.Resolved) (mcp.Transport, error) {
			st, ct := mcp.NewInMemoryTransports()
			if _, err := newServer().Connect(ctx, st, nil); err != nil {
				return nil, err
			}
			return ct, nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close(ctx) })
	session, err = rt.OpenSession(ctx, SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return func() error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
			return err
		}, func() error {
			_, err := session.CallTool(ctx, "mcp_a_echo", args)
			return err
		}, session
}

// BenchmarkCallOverhead compares a Session tool call with a raw go-sdk
// call over in-memory transports to the same in-process server code.
func BenchmarkCallOverhead(b *testing.B) {
	raw, sess, _ := memPair(b)
	interleave(b, raw, sess)
}

// BenchmarkCallOverheadConn compares the raw call with the same go-sdk call
// made directly on the Session's live connection: the runtime's go-sdk
// client, its stray-reply watch and its server, without the Session's call
// path (lookup, watchdog, fail-fast hook, events, result mapping). The
// difference between this ratio and BenchmarkCallOverhead's is the call
// path's share.
func BenchmarkCallOverheadConn(b *testing.B) {
	raw, _, session := memPair(b)
	session.mu.Lock()
	s := session.servers["a"]
	session.mu.Unlock()
	s.mu.Lock()
	cs := s.conn.cs
	s.mu.Unlock()
	ctx := context.Background()
	args := map[string]any{"text": "hello"}
	interleave(b, raw, func() error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
		return err
	})
}

// BenchmarkCallSession and BenchmarkCallRaw run one side alone, for
// profiling (-cpuprofile, -memprofile); compare sides with
// BenchmarkCallOverhead.
func BenchmarkCallSession(b *testing.B) {
	_, sess, _ := memPair(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := sess(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallRaw: see BenchmarkCallSession.
func BenchmarkCallRaw(b *testing.B) {
	raw, _, _ := memPair(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := raw(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallOverheadStdio compares a Session tool call with a raw go-sdk
// call, each to its own fixture process over stdio, in each protocol era:
// both sides ask the same version (the Session through the server's
// protocolVersion), and the benchmark fails unless both negotiated it.
func BenchmarkCallOverheadStdio(b *testing.B) {
	for _, era := range []struct{ name, version string }{
		{"legacy", DefaultProtocolVersion},
		{"modern", "2026-07-28"},
	} {
		b.Run(era.name, func(b *testing.B) { callOverheadStdio(b, era.version) })
	}
}

func callOverheadStdio(b *testing.B, version string) {
	ctx := context.Background()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	env := map[string]string{asFixtureEnv: "1", "GORACE": "atexit_sleep_ms=0"}
	cmd := exec.Command(exe)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cs := rawClientVersion(b, &mcp.CommandTransport{Command: cmd}, version)
	defer func() {
		cs.Close()
		cmd.Wait()
	}()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		b.Fatalf("the raw client negotiated %s, want %s", got, version)
	}

	raw, _ := json.Marshal(map[string]any{"command": exe, "env": env, "protocolVersion": version})
	rt := benchRuntime(b, map[string]json.RawMessage{"a": raw}, "")
	defer rt.Close(ctx)
	sess, err := rt.OpenSession(ctx, SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if st := rt.Status(); len(st) != 1 || st[0].Protocol != version {
		b.Fatalf("the Session's server: %+v, want protocol %s", st, version)
	}
	args := map[string]any{"text": "hello"}
	interleave(b,
		func() error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
			return err
		},
		func() error {
			_, err := sess.CallTool(ctx, "mcp_a_echo", args)
			return err
		})
}

// BenchmarkStdioTransport compares the two stdio transports the runtime
// could hand go-sdk, each under its own go-sdk client to its own fixture
// process behind the same stdout filter: "raw" is go-sdk's IOTransport
// (proc.Process.IOTransport), "session" the runtime's wire.Transport
// (proc.Process.Transport), which takes whole messages from the filter. The
// ratio is wire.Transport's time over IOTransport's for a tool call.
func BenchmarkStdioTransport(b *testing.B) {
	ctx := context.Background()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), asFixtureEnv+"=1", "GORACE=atexit_sleep_ms=0")
	connect := func(pick func(*proc.Process) mcp.Transport) *mcp.ClientSession {
		p, err := proc.Start(proc.Spec{Command: exe, Env: env}, clock.Real{})
		if err != nil {
			b.Fatal(err)
		}
		cs := rawClient(b, pick(p))
		b.Cleanup(func() {
			cs.Close()
			p.Stop(ctx, proc.Grace{}, nil)
		})
		return cs
	}
	ioConn := connect(func(p *proc.Process) mcp.Transport { return p.IOTransport() })
	wireConn := connect(func(p *proc.Process) mcp.Transport { return p.Transport() })
	args := map[string]any{"text": "hello"}
	call := func(cs *mcp.ClientSession) func() error {
		return func() error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
			return err
		}
	}
	interleave(b, call(ioConn), call(wireConn))
}
