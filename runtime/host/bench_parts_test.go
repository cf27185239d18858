package host

import (
	"context"
	"strconv"
	"testing"

	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallOverheadParts takes the Session's call path apart: each
// sub-benchmark makes the go-sdk call directly on the Session's live
// connection (as BenchmarkCallOverheadConn does) plus one piece of what
// Session.CallTool adds around it, interleaved with the raw call like
// BenchmarkCallOverhead. The pieces copy the runtime's own code (call.go,
// session.go) step for step; "all" adds every piece, "session" is the real
// Session.CallTool. The ratio of a piece minus "conn"'s is what that piece
// costs in place: between two go-sdk calls, which allocate about 367 KB
// each and leave little of the runtime's code and data in the CPU caches,
// a piece costs several times what it costs in a warm loop.
//
//	go test -run '^$' -bench 'CallOverheadParts' -benchtime 10000x -count 3 ./runtime/host/
func BenchmarkCallOverheadParts(b *testing.B) {
	const (
		lookup = 1 << iota
		watchdog
		requestCtx
		failFast
		events
		mapping
		all = lookup | watchdog | requestCtx | failFast | events | mapping
	)
	parts := []struct {
		name string
		mask int
	}{
		{"conn", 0},
		{"lookup", lookup},
		{"watchdog", watchdog},
		{"request-ctx", requestCtx},
		{"fail-fast", requestCtx | failFast},
		{"events", events},
		{"mapping", mapping},
		{"all", all},
		{"session", -1},
	}
	for _, p := range parts {
		b.Run(p.name, func(b *testing.B) {
			raw, sess, session := memPair(b)
			if p.mask < 0 {
				interleave(b, raw, sess)
				return
			}
			session.mu.Lock()
			s := session.servers["a"]
			session.mu.Unlock()
			s.mu.Lock()
			conn := s.conn
			s.mu.Unlock()
			args := map[string]any{"text": "hello"}
			var keep []*callInfo // the call's info outlives the call, as in the runtime
			const name = "mcp_a_echo"
			interleave(b, raw, func() error {
				ctx := context.Background()
				call := "bench-1"
				if p.mask&lookup != 0 {
					session.mu.Lock()
					tool, _ := session.tools.Lookup(name)
					_ = session.servers[tool.Server]
					session.calls++
					n := session.calls
					session.mu.Unlock()
					call = session.name + "-" + strconv.Itoa(n)
					keep = append(keep[:0], &callInfo{sess: session, id: call, tool: name})
				}
				if p.mask&requestCtx != 0 {
					reqCtx, cancel := context.WithCancelCause(ctx)
					defer cancel(nil)
					ctx = reqCtx
					if p.mask&failFast != 0 {
						stop := context.AfterFunc(conn.ctx, func() { cancel(context.Cause(conn.ctx)) })
						defer stop()
					}
				}
				if p.mask&watchdog != 0 {
					wd := s.rt.clock.AfterFunc(s.toolTimeout(), func() {})
					defer wd.Stop()
				}
				if p.mask&events != 0 {
					session.emit(s.name, event.ToolCallStarted, event.String("call", call), event.String("tool", name))
				}
				res, err := conn.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
				if err != nil {
					return err
				}
				if p.mask&mapping != 0 {
					bridge.MapResult(res, bridge.Options{Server: s.name, Tool: name, MCPTool: "echo", MaxChars: s.maxResultChars()})
				}
				if p.mask&events != 0 {
					session.emit(s.name, event.ToolCallFinished, event.String("call", call), event.String("tool", name), event.String("outcome", "ok"), event.String("code", ""))
				}
				return nil
			})
		})
	}
}
