package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/runtime/event"
)

// scriptedConn is an mcp.Connection whose reads come from a list.
type scriptedConn struct {
	reads    []jsonrpc.Message
	writeErr error
}

func (c *scriptedConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(c.reads) == 0 {
		return nil, io.EOF
	}
	m := c.reads[0]
	c.reads = c.reads[1:]
	return m, nil
}
func (c *scriptedConn) Write(context.Context, jsonrpc.Message) error { return c.writeErr }
func (c *scriptedConn) Close() error                                 { return nil }
func (c *scriptedConn) SessionID() string                            { return "" }

type scriptedTransport struct{ conn *scriptedConn }

func (t scriptedTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

func reply(id any) *jsonrpc.Response {
	i, err := jsonrpc.MakeID(id)
	if err != nil {
		panic(err)
	}
	return &jsonrpc.Response{ID: i, Result: json.RawMessage(`{}`)}
}

func call(id int64) *jsonrpc.Request {
	i, _ := jsonrpc.MakeID(float64(id))
	return &jsonrpc.Request{ID: i, Method: "tools/call"}
}

func TestStrayReplies(t *testing.T) {
	ctx := t.Context()
	inner := &scriptedConn{}
	var got []string
	tr := &strayTransport{inner: scriptedTransport{inner}, report: func(id jsonrpc.ID, reason string, n int) {
		got = append(got, fmt.Sprintf("%s %s %d", idSample(id), reason, n))
	}}
	conn, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 3; id++ {
		if err := conn.Write(ctx, call(id)); err != nil {
			t.Fatal(err)
		}
	}
	// Cancel call 3: its late reply is no stray.
	conn.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":3}`)})
	// A failed write forgets its request.
	inner.writeErr = errors.New("broken pipe")
	if err := conn.Write(ctx, call(4)); err == nil {
		t.Fatal("write error lost")
	}
	inner.reads = []jsonrpc.Message{
		reply(float64(1)), reply(float64(1)), // answered, then a duplicate
		reply("nobody"),
		&jsonrpc.Request{Method: "notifications/tools/list_changed"},
		reply(float64(3)),                                       // late reply to a cancelled call
		reply(float64(3)),                                       // a second one: unknown (cancelled ids are forgotten once answered)
		reply(float64(4)),                                       // never sent (its write failed)
		reply(nil),                                              // a null id
		reply(float64(2)), reply(float64(2)), reply(float64(2)), // answered, then two duplicates
	}
	n := 0
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			break
		}
		if m == nil {
			t.Fatal("nil message")
		}
		n++
	}
	if n != 11 {
		t.Errorf("%d messages passed on, want all 11", n)
	}
	want := []string{`1 duplicate 1`, `"nobody" unknown 1`, `3 unknown 2`, `4 unknown 3`, `null unknown 4`, `2 duplicate 2`, `2 duplicate 3`}
	if !slices.Equal(got, want) {
		t.Errorf("reports:\n got %q\nwant %q", got, want)
	}
	sc := conn.(*strayConn)
	if len(sc.pending) != 0 {
		t.Errorf("pending ids left: %v", sc.pending)
	}
}

// TestStrayReportsRateLimited: a server answering 1,000 unknown ids emits
// transport.stray_reply for the 1st, 2nd, 4th ... 512th only.
func TestStrayReportsRateLimited(t *testing.T) {
	rec := event.NewRecorder(event.RecorderOptions{})
	s := &server{name: "bad", rt: &Runtime{events: rec}}
	inner := &scriptedConn{}
	for i := range 1000 {
		inner.reads = append(inner.reads, reply(fmt.Sprint("x", i)))
	}
	conn, err := s.strayGuard(scriptedTransport{inner}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := conn.Read(t.Context()); err != nil {
			break
		}
	}
	var got []string
	for _, e := range rec.Events() {
		r, _ := e.Get("replies")
		id, _ := e.Get("id")
		reason, _ := e.Get("reason")
		got = append(got, fmt.Sprintf("%s %s %s %s", e.Kind, r, reason, id))
	}
	var want []string
	for n := 1; n <= 512; n *= 2 {
		want = append(want, fmt.Sprintf("transport.stray_reply %d unknown \"x%d\"", n, n-1))
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
	if st := s.strayGuard(&mcp.StreamableClientTransport{}); st == nil {
		t.Fatal("nil transport")
	} else if _, wrapped := st.(*strayTransport); wrapped {
		t.Error("a streamable HTTP transport was wrapped")
	}
}

func TestIDSample(t *testing.T) {
	long, _ := jsonrpc.MakeID(string(make([]byte, 5000)))
	for _, tc := range []struct {
		id   any
		want string
	}{{float64(7), "7"}, {"a\"b", `"a\"b"`}, {nil, "null"}} {
		id, _ := jsonrpc.MakeID(tc.id)
		if got := idSample(id); got != tc.want {
			t.Errorf("idSample(%v) = %q, want %q", tc.id, got, tc.want)
		}
	}
	if got := idSample(long); len(got) > 200 {
		t.Errorf("long id sample is %d bytes", len(got))
	}
}

// loopConn answers every request written with a reply read next.
type loopConn struct {
	scriptedConn
	next *jsonrpc.Response
}

func (c *loopConn) Write(_ context.Context, m jsonrpc.Message) error {
	c.next.ID = m.(*jsonrpc.Request).ID
	return nil
}
func (c *loopConn) Read(context.Context) (jsonrpc.Message, error) { return c.next, nil }

// BenchmarkStrayConn is the cost the stray-reply watch adds to one call: a
// request written and its reply read (compare with the ~600 µs of a
// BenchmarkCallOverhead call).
func BenchmarkStrayConn(b *testing.B) {
	inner := &loopConn{next: &jsonrpc.Response{Result: json.RawMessage(`{}`)}}
	sc := &strayConn{Connection: inner, report: func(jsonrpc.ID, string, int) { b.Fatal("stray") }, pending: make(map[jsonrpc.ID]struct{})}
	req := call(0)
	b.ReportAllocs()
	id := 0
	for b.Loop() {
		id++
		req.ID, _ = jsonrpc.MakeID(float64(id))
		sc.Write(b.Context(), req)
		sc.Read(b.Context())
	}
}

// TestIDRingRemembersTheLatest: the ring holds only the ids put in it until
// it is full, then the last strayMemory of them: the oldest is forgotten
// first, and a taken id is no longer there.
func TestIDRingRemembersTheLatest(t *testing.T) {
	id := func(n int) jsonrpc.ID {
		v, err := jsonrpc.MakeID(float64(n))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var r idRing
	for n := 1; n <= 3; n++ {
		r.put(id(n))
	}
	if len(r.ids) != 3 {
		t.Errorf("after 3 ids the ring holds %d slots, want 3", len(r.ids))
	}
	for n := 4; n <= strayMemory+1; n++ {
		r.put(id(n))
	}
	if r.has(id(1)) {
		t.Errorf("id 1 is still remembered after %d later ids", strayMemory)
	}
	for _, n := range []int{2, strayMemory / 2, strayMemory + 1} {
		if !r.has(id(n)) {
			t.Errorf("id %d, among the last %d, is forgotten", n, strayMemory)
		}
	}
	if !r.take(id(2)) || r.has(id(2)) {
		t.Errorf("a taken id is still there, or take did not find it")
	}
	r.put(id(strayMemory + 2)) // replaces the oldest slot: id 2's, already taken
	if !r.has(id(3)) || !r.has(id(strayMemory+2)) {
		t.Errorf("the ring lost an id it should hold")
	}
}
