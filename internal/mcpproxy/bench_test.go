package mcpproxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// lineClient speaks line-delimited JSON-RPC to a server process directly,
// so that a benchmark measures the server side only.
type lineClient struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startLineClient(tb testing.TB, argv ...string) *lineClient {
	tb.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &lineClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	c.request(tb, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "bench", "version": "1"}})
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		tb.Fatal(err)
	}
	return c
}

// request sends one request and reads lines until its response.
func (c *lineClient) request(tb testing.TB, method string, params any) {
	c.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		tb.Fatal(err)
	}
	want := fmt.Sprintf(`"id":%d`, c.id)
	for {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			tb.Fatalf("%s: %v", method, err)
		}
		if bytes.Contains(line, []byte(want)) {
			return
		}
	}
}

func (c *lineClient) close() {
	c.in.Close()
	_ = c.cmd.Wait()
}

// BenchmarkProxyOverhead measures what the proxy adds to a tools/call on
// stdio: it runs the fixture directly and behind the proxy (journal off,
// no rules) and times batches of echo calls on each, interleaved in one run
// so that machine load hits both alike. It reports the median per-call
// latency of each, their median ratio and the median added latency per
// call (goal: under 1 ms).
func BenchmarkProxyOverhead(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	direct := startLineClient(b, exe, asFixture)
	defer direct.close()
	a, _ := json.Marshal(proxyArgs{})
	proxied := startLineClient(b, exe, asProxy, string(a), "--", exe, asFixture)
	defer proxied.close()

	const batch = 50
	args := map[string]any{"name": "echo", "arguments": map[string]any{"text": "hello"}}
	run := func(c *lineClient) time.Duration {
		start := time.Now()
		for range batch {
			c.request(b, "tools/call", args)
		}
		return time.Since(start) / batch
	}
	// Warm up both.
	run(direct)
	run(proxied)
	var d, p, ratio, added []float64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		var dd, pd time.Duration
		if i%2 == 0 {
			dd, pd = run(direct), run(proxied)
		} else {
			pd, dd = run(proxied), run(direct)
		}
		d = append(d, float64(dd.Microseconds()))
		p = append(p, float64(pd.Microseconds()))
		ratio = append(ratio, float64(pd)/float64(dd))
		added = append(added, float64((pd - dd).Microseconds()))
	}
	b.ReportMetric(median(d), "direct-us/call")
	b.ReportMetric(median(p), "proxied-us/call")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(median(added), "added-us/call")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
