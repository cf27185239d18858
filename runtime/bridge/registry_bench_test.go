package bridge

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkRegistryGrowth registers N servers of 10 tools each, one Replace
// per server as a session start does, and reports the cost per server. The
// cost per server must stay flat as N grows (linear total), where a full
// rebuild on every Replace made it grow with N (quadratic total). B/server
// (allocated bytes) shows it without timing noise:
//
//	go test -run '^$' -bench RegistryGrowth -count 5 ./runtime/bridge/
func BenchmarkRegistryGrowth(b *testing.B) {
	for _, n := range []int{50, 500, 2000} {
		servers := make([][]Tool, n)
		for i := range n {
			for j := range 10 {
				servers[i] = append(servers[i], Tool{MCPName: fmt.Sprintf("tool_%d", j), Description: "a tool"})
			}
			// Every tenth server collides with its neighbour on one name.
			if i%10 == 1 {
				servers[i] = append(servers[i], Tool{Name: ToolName(fmt.Sprintf("s%04d", i-1), "tool_0"), MCPName: "dup"})
			}
		}
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				r := NewRegistry()
				for i, ts := range servers {
					r.Replace(fmt.Sprintf("s%04d", i), ts)
				}
				if len(r.List()) != n*10 {
					b.Fatalf("%d tools visible", len(r.List()))
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/server")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(n), "B/server")
		})
	}
}
