package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallOverhead compares a Session tool call with a raw go-sdk
// ClientSession.CallTool over the same in-memory transport, in one run.
func BenchmarkCallOverhead(b *testing.B) {
	ctx := context.Background()
	newServer := func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		echoTools(s)
		return s
	}
	args := map[string]any{"text": "hello"}

	b.Run("raw-go-sdk", func(b *testing.B) {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := newServer().Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: DefaultProtocolVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("session", func(b *testing.B) {
		rt, err := New(Options{
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
		defer rt.Close(ctx)
		sess, err := rt.OpenSession(ctx, SessionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sess.CallTool(ctx, "mcp_a_echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
