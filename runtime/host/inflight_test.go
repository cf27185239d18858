package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcplife/mcplife/runtime/event"
)

// closeCounter is a scriptedConn that counts its Close calls.
type closeCounter struct {
	scriptedConn
	closes int
}

func (c *closeCounter) Close() error { c.closes++; return nil }

func ping(id string) *jsonrpc.Request {
	i, _ := jsonrpc.MakeID(id)
	return &jsonrpc.Request{ID: i, Method: "ping"}
}

// TestServerRequestsBound: requests the server sends count until the client
// has written their answers; a notification or a repeated id counts once or
// not at all; the request past the limit closes the connection and reads as
// a *ServerRequestsError, and so does everything after it.
func TestServerRequestsBound(t *testing.T) {
	ctx := t.Context()
	const limit = 4
	inner := &closeCounter{}
	tr := &strayTransport{inner: scriptedTransport{&inner.scriptedConn}, maxIncoming: limit, report: func(jsonrpc.ID, string, int) {}}
	conn, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc := conn.(*strayConn)
	sc.Connection = inner // Close goes to the counter
	read := func(msgs ...jsonrpc.Message) error {
		t.Helper()
		inner.reads = msgs
		for range msgs {
			if _, err := conn.Read(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	// Four requests in flight, a notification, a repeated id: no failure.
	if err := read(ping("a"), ping("b"), ping("c"), ping("d"), &jsonrpc.Request{Method: "notifications/progress"}, ping("d")); err != nil {
		t.Fatal(err)
	}
	// Answering one frees its slot, even when the write fails.
	inner.writeErr = errors.New("broken pipe")
	if err := conn.Write(ctx, reply("a")); err == nil {
		t.Fatal("write error lost")
	}
	inner.writeErr = nil
	if err := read(ping("e")); err != nil {
		t.Fatal(err)
	}
	// A fifth request in flight is one too many.
	err = read(&jsonrpc.Request{ID: ping("f").ID, Method: "sampling/createMessage\x1b[2J"})
	var re *ServerRequestsError
	if !errors.As(err, &re) || !errors.Is(err, ErrTooManyServerRequests) || re.Limit != limit {
		t.Fatalf("fifth request in flight: %v", err)
	}
	want := "the server sent more than 4 requests to the client without waiting for their answers (the last \"sampling/createMessage\ufffd[2J\"); the connection is closed"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if inner.closes != 1 {
		t.Errorf("inner connection closed %d times, want 1", inner.closes)
	}
	if sc.readErr == nil || !errors.Is(sc.readErr, ErrTooManyServerRequests) {
		t.Errorf("read failure %v not remembered", sc.readErr)
	}
	if err := read(ping("g")); !errors.Is(err, ErrTooManyServerRequests) {
		t.Errorf("after the flood: %v", err)
	}
	if len(sc.incoming) != 0 {
		t.Errorf("%d requests still tracked after the flood", len(sc.incoming))
	}
}

// TestFixtureServerRequestFlood: a server that floods the client with
// 300,000 ping requests and reads none of the answers fails with the
// limit's error once MaxServerRequests answers are pending, instead of
// holding a goroutine and a queued request per ping (without the bound the
// connect succeeds once the flood is drained, after gigabytes); another
// server of the same runtime keeps working. TestMain's leak check sees
// that the answers blocked on the flooding server's stdin were released.
func TestFixtureServerRequestFlood(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{
			"flood": e.fixtureServer("flood", map[string]string{
				"MCP_FIXTURE_CORRUPT_AT": "start", "MCP_FIXTURE_CORRUPT_KIND": "request-flood", "MCP_FIXTURE_FLOOD_COUNT": "300000",
			}, `"restart": "never"`),
			"ok": e.fixtureServer("ok", nil, ""),
		}
	}, Options{StartupGate: -1})
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := e.await(m(event.ServerFailed, "flood"))
	msg, _ := f.Get("error")
	// The first request is server/discover (a stdio server is asked
	// 2026-07-28 first, era.go): the flood ends the connection during it,
	// and the attempt fails with the read failure.
	want := fmt.Sprintf(`the server sent more than %d requests to the client without waiting for their answers (the last "ping"); the connection is closed`, MaxServerRequests)
	if !strings.Contains(msg, want) {
		t.Errorf("server.failed error %q, want it to contain %q", msg, want)
	}
	res, err := sess.CallTool(t.Context(), "mcp_ok_echo", map[string]any{"text": "still here"})
	if err != nil || res.IsError || !strings.Contains(res.Text, "still here") {
		t.Fatalf("the other server: %+v, %v", res, err)
	}
}
