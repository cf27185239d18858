package host

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenEnder is the server side of an in-memory connection whose first
// close subscriptions/listen requests are acknowledged and then answered
// (the revision's graceful closure) and whose next refuse ones are answered
// with a JSON-RPC error, before go-sdk's server sees them; the rest reach
// it. It records every listen request's id.
type listenEnder struct {
	mu     sync.Mutex
	close  int
	refuse int
	ids    []jsonrpc.ID
	// cancelled are the request ids of the notifications/cancelled read.
	cancelled []any
}

func (l *listenEnder) wrap(t mcp.Transport) mcp.Transport { return listenEnderTransport{t, l} }

func (l *listenEnder) listens() []jsonrpc.ID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]jsonrpc.ID(nil), l.ids...)
}

type listenEnderTransport struct {
	mcp.Transport
	l *listenEnder
}

func (t listenEnderTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &listenEnderConn{Connection: c, l: t.l}, nil
}

type listenEnderConn struct {
	mcp.Connection
	l *listenEnder
}

func (c *listenEnderConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok {
			return msg, err
		}
		if req.Method == "notifications/cancelled" {
			var p struct {
				RequestID any `json:"requestId"`
			}
			_ = json.Unmarshal(req.Params, &p)
			c.l.mu.Lock()
			c.l.cancelled = append(c.l.cancelled, p.RequestID)
			c.l.mu.Unlock()
		}
		if req.Method != "subscriptions/listen" {
			return msg, nil
		}
		c.l.mu.Lock()
		c.l.ids = append(c.l.ids, req.ID)
		n := len(c.l.ids)
		c.l.mu.Unlock()
		meta := fmt.Sprintf(`{"io.modelcontextprotocol/subscriptionId":%s}`, mustJSON(req.ID.Raw()))
		switch {
		case n <= c.l.close:
			ack := &jsonrpc.Request{Method: "notifications/subscriptions/acknowledged", Params: json.RawMessage(`{"notifications":{"toolsListChanged":true},"_meta":` + meta + `}`)}
			if err := c.Connection.Write(ctx, ack); err != nil {
				return nil, err
			}
			if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"_meta":` + meta + `}`)}); err != nil {
				return nil, err
			}
		case n <= c.l.close+c.l.refuse:
			if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: -32603, Message: "listen refused"}}); err != nil {
				return nil, err
			}
		default:
			return msg, nil
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// newListenRuntime is an in-memory server "a" of the stateless revision
// whose listen requests l ends.
func newListenRuntime(t *testing.T, l *listenEnder) *memEnv {
	env := newMemRuntime(t, map[string]string{"a": ""}, Options{ProtocolVersion: ProtocolModern})
	env.servers["a"].wrap = l.wrap
	return env
}

// TestStdioListenClosedReopened: a listen stream the server closes
// (answers the listen request while the connection lives on) is re-opened
// after the restart policy's first delay, at least 1 s, on the clock; the
// answer never reaches go-sdk, the tools are listed again, and a
// tools/list_changed on the re-opened stream reaches the runtime.
func TestStdioListenClosedReopened(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &listenEnder{close: 1}
		env := newListenRuntime(t, l)
		sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		env.await(t, m(event.RemoteListenLost, "a", "reason", "closed", "delay_ms", "1000"))
		advance(999 * time.Millisecond)
		if n := env.count(event.RemoteListenReopened, "a"); n != 0 {
			t.Fatalf("re-opened before the delay\n%s", env.trace())
		}
		advance(time.Millisecond)
		env.await(t, m(event.RemoteListenReopened, "a", "attempt", "1"))
		env.await(t, m(event.ToolsChanged, "a"))
		advance(time.Second) // the debounce
		ids := l.listens()
		if len(ids) != 2 || ids[1].Raw() != listenIDPrefix+"1" {
			t.Fatalf("listen requests = %v, want go-sdk's and %s1", ids, listenIDPrefix)
		}
		after := env.rt.Events().Last()
		mcp.AddTool(env.servers["a"].srv, &mcp.Tool{Name: "fresh", Description: "new"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		if _, err := env.rt.Events().Await(t.Context(), after, m(event.ToolsChanged, "a")); err != nil {
			t.Fatalf("no tools.changed after the re-open: %v\n%s", err, env.trace())
		}
		advance(time.Second)
		if n := len(sess.Tools()); n != 3 {
			t.Fatalf("tools = %d, want 3\n%s", n, env.trace())
		}
		res, err := sess.CallTool(t.Context(), "mcp_a_echo", map[string]any{"text": "still"})
		if err != nil || res.Text == "" {
			t.Fatalf("call = %+v, %v", res, err)
		}
		if n := env.count(event.TransportClosed, "a"); n != 0 {
			t.Fatalf("the connection ended\n%s", env.trace())
		}
	})
}

// TestStdioListenReopenBounded: re-opens the server refuses wait the
// restart policy's next delays, five in a row at most; then
// remote.listen_gave_up and the connection goes on.
func TestStdioListenReopenBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &listenEnder{close: 1, refuse: 100}
		env := newListenRuntime(t, l)
		sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		env.await(t, m(event.RemoteListenLost, "a", "reason", "closed", "delay_ms", "1000"))
		for i, next := range []string{"1000", "2000", "5000", "10000"} {
			advance(time.Minute)
			env.await(t, m(event.RemoteListenReopenFailed, "a", "attempt", fmt.Sprint(i+1), "next_delay_ms", next))
		}
		advance(time.Minute)
		env.await(t, m(event.RemoteListenGaveUp, "a", "attempts", "5"))
		advance(10 * time.Minute)
		if n := len(l.listens()); n != 6 {
			t.Fatalf("listen requests = %d, want 6\n%s", n, env.trace())
		}
		if _, err := sess.CallTool(t.Context(), "mcp_a_echo", map[string]any{"text": "x"}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStdioListenEndingEarlyBounded: re-opened streams the server closes
// at once count as re-opens in a row: after five the runtime gives up
// instead of re-opening at once.
func TestStdioListenEndingEarlyBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &listenEnder{close: 100}
		env := newListenRuntime(t, l)
		if _, err := env.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			advance(time.Minute)
		}
		env.await(t, m(event.RemoteListenGaveUp, "a", "attempts", "5"))
		advance(10 * time.Minute)
		if n := env.count(event.RemoteListenReopened, "a"); n != 5 {
			t.Fatalf("re-opens = %d, want 5\n%s", n, env.trace())
		}
		if n := len(l.listens()); n != 6 {
			t.Fatalf("listen requests = %d, want 6\n%s", n, env.trace())
		}
	})
}

// TestStdioListenCancelledOnClose: go-sdk's cancellation of its listen
// request at the session's close is sent for the re-open open now.
func TestStdioListenCancelledOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &listenEnder{close: 1}
		env := newListenRuntime(t, l)
		if _, err := env.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
			t.Fatal(err)
		}
		env.await(t, m(event.RemoteListenLost, "a", "reason", "closed"))
		advance(time.Second)
		env.await(t, m(event.RemoteListenReopened, "a"))
		env.rt.Close(context.Background())
		synctest.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.cancelled) == 0 {
			t.Fatalf("no notifications/cancelled at the close")
		}
		for _, id := range l.cancelled {
			if id != listenIDPrefix+"1" {
				t.Fatalf("cancelled %v, want only %s1", l.cancelled, listenIDPrefix)
			}
		}
	})
}
