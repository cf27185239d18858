package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRequestBoundHTTP: the streamable HTTP bound counts the server's
// requests in SSE events (single messages, batches, data split over lines;
// not notifications, replies or events of another name) and in JSON bodies,
// frees one when the POST carrying its answer is over (also from a body
// without GetBody, which reaches the server intact), and past the limit
// fails the read with a *ServerRequestsError, ends the connection's
// exchanges once, and fails every later request and read.
func TestRequestBoundHTTP(t *testing.T) {
	streams := map[string]string{
		"/sse": "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n" +
			": a comment\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
			"data: [{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"roots/list\"},\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}]\r\n\r\n" +
			"event: other\ndata: {\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"ping\"}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/createMessage\"}", // ends without a blank line
		"/json":  `{"jsonrpc":"2.0","id":4,"method":"ping"}`,
		"/flood": "data: {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"elicitation/create\"}\n\n",
	}
	var got []string // bodies of the POSTs the server received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			got = append(got, string(b))
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if r.URL.Path == "/json" {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		io.WriteString(w, streams[r.URL.Path])
	}))
	defer srv.Close()
	fails := 0
	b := newRequestBound(srv.Client().Transport, 4, 1<<20, func() { fails++ })
	client := &http.Client{Transport: b}
	get := func(path string) error {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
	inFlight := func(want int) {
		t.Helper()
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.incoming) != want {
			t.Fatalf("%d requests in flight, want %d", len(b.incoming), want)
		}
	}
	answer := func(body io.Reader) {
		t.Helper()
		resp, err := client.Post(srv.URL+"/mcp", "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if err := get("/sse"); err != nil {
		t.Fatal(err)
	}
	inFlight(3) // 1, "b", 3
	answer(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	inFlight(2)
	// A batch of answers, from a body without GetBody.
	batch := `[{"jsonrpc":"2.0","id":"b","result":{}},{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}},{"jsonrpc":"2.0","id":8,"method":"tools/list"}]`
	answer(io.NopCloser(strings.NewReader(batch)))
	inFlight(0)
	if len(got) != 2 || got[1] != batch {
		t.Fatalf("the server received %q", got)
	}
	for range 2 {
		if err := get("/json"); err != nil { // id 4 twice: one request
			t.Fatal(err)
		}
	}
	if err := get("/sse"); err != nil {
		t.Fatal(err)
	}
	inFlight(4) // 4, 1, "b", 3
	err := get("/flood")
	var re *ServerRequestsError
	if !errors.As(err, &re) || !errors.Is(err, ErrTooManyServerRequests) || re.Limit != 4 || re.Method != "elicitation/create" {
		t.Fatalf("fifth request in flight: %v", err)
	}
	if fails != 1 {
		t.Errorf("the connection's exchanges were ended %d times, want 1", fails)
	}
	for _, err := range []error{get("/json"), func() error { _, err := client.Post(srv.URL, "application/json", strings.NewReader("{}")); return err }()} {
		if !errors.Is(err, ErrTooManyServerRequests) {
			t.Errorf("after the flood: %v", err)
		}
	}
	if fails != 1 || len(got) != 2 {
		t.Errorf("after the flood: ended %d times, %d POSTs sent", fails, len(got))
	}
}

// TestRequestBoundHTTPOversized: an SSE event or JSON body larger than the
// limit fails the read once the limit is passed (nothing past it is kept)
// with an error matching wire.ErrTooLarge; an event just under the limit is
// read and counted.
func TestRequestBoundHTTPOversized(t *testing.T) {
	const limit = 4096
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`
	under := "data: " + ping + strings.Repeat("x", limit-len(ping)-20) + "\"}}\n\n"
	over := "data: " + ping + strings.Repeat("y", 8*limit) + "\"}}\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct, body := "text/event-stream", under
		switch r.URL.Path {
		case "/over":
			body = over
		case "/json":
			ct, body = "application/json", over[len("data: "):]
		}
		w.Header().Set("Content-Type", ct)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	for _, path := range []string{"/over", "/json"} {
		b := newRequestBound(srv.Client().Transport, 4, limit, nil)
		resp, err := (&http.Client{Transport: b}).Get(srv.URL + "/under")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatalf("event under the limit: %v", err)
		}
		resp.Body.Close()
		if len(b.incoming) != 1 {
			t.Fatalf("%d requests counted, want 1", len(b.incoming))
		}
		resp, err = (&http.Client{Transport: b}).Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body := resp.Body.(*boundBody)
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, wire.ErrTooLarge) || !strings.HasPrefix(err.Error(), "the server's ") || !strings.Contains(err.Error(), fmt.Sprintf(" exceeds the limit of %d bytes (starts %q); the connection is closed", limit, wire.Sample([]byte(map[string]string{"/over": "data: "}[path]+ping+strings.Repeat("y", wire.SampleBytes))))) {
			t.Fatalf("%s: %v", path, err)
		}
		if len(body.data)+len(body.line) > limit {
			t.Errorf("%s: %d bytes kept past the limit of %d", path, len(body.data)+len(body.line), limit)
		}
	}
}

// TestFixtureHTTPRequestFlood: a streamable HTTP server that floods the
// client with pings and never reads the answers fails with the limit's
// error, whether the pings come on the initialize request's response
// stream or on the standalone GET stream; another server of the same
// runtime keeps working. TestMain's leak check sees that the answers held by
// the flooding server were released.
func TestFixtureHTTPRequestFlood(t *testing.T) {
	want := fmt.Sprintf(`reading from the server failed: the server sent more than %d requests to the client without waiting for their answers (the last "ping"); the connection is closed`, MaxServerRequests)
	for _, at := range []string{"initialize", "initialized"} {
		t.Run(at, func(t *testing.T) {
			dir := t.TempDir()
			remote := startRemote(t, dir, "http", map[string]string{
				"MCP_FIXTURE_CORRUPT_AT": at, "MCP_FIXTURE_CORRUPT_KIND": "request-flood", "MCP_FIXTURE_FLOOD_COUNT": "1000",
			})
			e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
				return map[string]json.RawMessage{
					"flood": json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q,"restart":"never"}`, remote.url())),
					"ok":    e.fixtureServer("ok", nil, ""),
				}
			}, Options{StartupGate: -1})
			sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			kind := event.ServerFailed
			if at == "initialized" {
				// The handshake may be over before the flood passes the
				// limit; the connection then ends with the same cause.
				kind = ""
			}
			ev := e.await(event.Matcher{Kind: kind, Server: "flood", Attrs: map[string]string{"error": want}})
			t.Logf("%s: %s", ev.Kind, want)
			if st := e.status("flood"); !strings.Contains(st.Error, want) {
				t.Errorf("status error %q, want it to contain %q", st.Error, want)
			}
			res, err := sess.CallTool(t.Context(), "mcp_ok_echo", map[string]any{"text": "still here"})
			if err != nil || res.IsError || !strings.Contains(res.Text, "still here") {
				t.Fatalf("the other server: %+v, %v", res, err)
			}
		})
	}
}

// TestHTTPHostHandlersBounded: over streamable HTTP, a server's sampling and
// roots requests are answered as before, and answered requests leave the
// bound: 300 of them in a row, more than MaxServerRequests, keep working.
func TestHTTPHostHandlersBounded(t *testing.T) {
	e, _, sess := remoteEnv(t, map[string]string{"MCP_FIXTURE_HOST_TOOLS": "1"}, `"sampling":true,"roots":["/work/a"]`, Options{
		Sampling: func(_ context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "hi " + server}}, nil
		},
	})
	for i := range 150 {
		res, err := sess.CallTool(t.Context(), "mcp_fx_sample", map[string]any{"text": "q"})
		if err != nil || res.IsError || !strings.Contains(res.Text, "sampled test-model: hi fx") {
			t.Fatalf("sample %d: %+v, %v", i, res, err)
		}
		res, err = sess.CallTool(t.Context(), "mcp_fx_roots", map[string]any{})
		if err != nil || res.IsError || !strings.Contains(res.Text, "roots file:///work/a") {
			t.Fatalf("roots %d: %+v, %v", i, res, err)
		}
	}
	if st := e.status("fx"); st.State != StateConnected {
		t.Errorf("state %s (%s)", st.State, st.Error)
	}
}
