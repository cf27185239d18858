package host

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDiscoverWatchAnswersUnansweredDiscover: a server that lets
// server/discover go unanswered past the timeout (on the fake clock) gets
// initialize on the same connection, and its late discover reply is
// dropped instead of reaching go-sdk.
func TestDiscoverWatchAnswersUnansweredDiscover(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	clk := clocktest.New()
	ct, st := mcp.NewInMemoryTransports()
	var expired atomic.Int32
	dw := &discoverWatch{inner: ct, clock: clk, timeout: 3 * time.Second, expired: func() { expired.Add(1) }}

	srv, err := st.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	served := make(chan error, 1)
	go func() {
		var discoverID jsonrpc.ID
		for {
			msg, err := srv.Read(ctx)
			if err != nil {
				served <- err
				return
			}
			req, ok := msg.(*jsonrpc.Request)
			if !ok || !req.IsCall() {
				continue
			}
			switch req.Method {
			case "server/discover":
				discoverID = req.ID
				clk.Advance(3 * time.Second) // never answered in time
			case "initialize":
				// The late discover reply first, then initialize's.
				late := &jsonrpc.Response{ID: discoverID, Result: json.RawMessage(`{"supportedVersions":["2026-07-28"],"capabilities":{}}`)}
				res := &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`)}
				if err := srv.Write(ctx, late); err != nil {
					served <- err
					return
				}
				if err := srv.Write(ctx, res); err != nil {
					served <- err
					return
				}
			case "tools/list":
				if err := srv.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"tools":[]}`)}); err != nil {
					served <- err
					return
				}
			}
		}
	}()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, dw, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolModern})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != ProtocolLegacy {
		t.Errorf("negotiated %q, want %s", got, ProtocolLegacy)
	}
	if !dw.stop() || expired.Load() != 1 {
		t.Errorf("the discover did not expire once (expired calls %d)", expired.Load())
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list after the fallback: %v", err)
	}
	select {
	case err := <-served:
		t.Fatalf("server ended: %v", err)
	default:
	}
}
