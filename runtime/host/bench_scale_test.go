package host

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkSessionStartScale opens a session over n in-memory servers (so
// no process cost hides the runtime's own) and waits at the startup gate
// until every one is ready, then closes the runtime. It reports the time
// and the allocations per server: with costs linear in servers both stay
// flat as n grows. The startup gate used to re-check every server on each
// change of any one, quadratic in servers.
//
//	go test -run '^$' -bench SessionStartScale -benchtime 3x -count 5 ./runtime/host/
func BenchmarkSessionStartScale(b *testing.B) {
	for _, n := range []int{50, 500, 2000} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			inline := make(map[string]json.RawMessage, n)
			for i := range n {
				inline[fmt.Sprintf("s%04d", i)] = json.RawMessage(`{"command":"mem","shared":true}`)
			}
			dial := func(ctx context.Context, _ *config.Server, _ *config.Resolved) (mcp.Transport, error) {
				st, ct := mcp.NewInMemoryTransports()
				s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ServerOptions{Logger: discardLogger()})
				echoTools(s)
				if _, err := s.Connect(ctx, st, nil); err != nil {
					return nil, err
				}
				return ct, nil
			}
			b.ReportAllocs()
			for b.Loop() {
				ctx := context.Background()
				rt, err := New(Options{
					Logger: discardLogger(),
					Discovery: config.Options{HomeDir: b.TempDir(), Env: func(string) (string, bool) { return "", false },
						Inline: inline},
					Dial:               dial,
					ConnectConcurrency: DefaultConnectConcurrency,
					StartupGate:        -1, // wait for every server
				})
				if err != nil {
					b.Fatal(err)
				}
				sess, err := rt.OpenSession(ctx, SessionOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if r := sess.StartReport(); len(r.Ready) != n {
					b.Fatalf("%d of %d servers ready at the gate: %+v", len(r.Ready), n, r)
				}
				rt.Close(ctx)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/server")
		})
	}
}
