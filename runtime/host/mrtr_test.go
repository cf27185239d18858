package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inputServer serves tools that ask the host for input the way a server
// of the stateless revision does, by answering input_required (SEP-2322):
// "sample" asks for a completion, "roots" for the roots, "ask" fills a form
// (elicitation), and "nag" asks for the roots whatever it gets. On a
// handshake-era connection go-sdk's server turns the same answers into
// requests of the server. Each call's round and the capabilities its
// request offered are recorded in seen.
type inputServer struct {
	mu    sync.Mutex
	calls map[string]int    // tool calls by "server/tool", retries included
	caps  map[string]string // capabilities of the last call by server
}

func (is *inputServer) server(name string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "input", Version: "1"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	ask := func(key string, ir mcp.InputRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{key: ir}, RequestState: key + "-state"}
	}
	count := func(req *mcp.CallToolRequest) {
		is.mu.Lock()
		defer is.mu.Unlock()
		is.calls[name+"/"+req.Params.Name]++
		var names []string
		if c := req.ClientCapabilities(); c != nil {
			if c.RootsV2 != nil {
				names = append(names, "roots")
			}
			if c.Sampling != nil {
				names = append(names, "sampling")
			}
			if c.Elicitation != nil {
				names = append(names, "elicitation")
			}
		}
		is.caps[name] = strings.Join(names, ",")
	}
	srv.AddTool(&mcp.Tool{Name: "sample", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count(req)
		got, ok := req.Params.InputResponses["s"].(*mcp.CreateMessageWithToolsResult)
		if !ok {
			return ask("s", &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}), nil
		}
		return text("sampled " + got.Model + ": " + got.Content[0].(*mcp.TextContent).Text), nil
	})
	srv.AddTool(&mcp.Tool{Name: "roots", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count(req)
		got, ok := req.Params.InputResponses["r"].(*mcp.ListRootsResult)
		if !ok {
			return ask("r", &mcp.ListRootsParams{}), nil
		}
		var uris []string
		for _, r := range got.Roots {
			uris = append(uris, r.URI)
		}
		return text("roots " + strings.Join(uris, ",") + " state " + req.Params.RequestState), nil
	})
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count(req)
		got, ok := req.Params.InputResponses["e"].(*mcp.ElicitResult)
		if !ok {
			return ask("e", &mcp.ElicitParams{Message: "color?", RequestedSchema: &jsonschema.Schema{Type: "object",
				Properties: map[string]*jsonschema.Schema{"color": {Type: "string", Default: json.RawMessage(`"blue"`)}}}}), nil
		}
		return text(fmt.Sprintf("%s %v", got.Action, got.Content["color"])), nil
	})
	srv.AddTool(&mcp.Tool{Name: "nag", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count(req)
		return ask("r", &mcp.ListRootsParams{}), nil
	})
	return srv
}

// newInputRuntime runs the inline servers of entries against inputServer
// in memory, asking protocol version protocol first.
func newInputRuntime(t *testing.T, protocol string, entries map[string]string, edit func(*Options)) (*Runtime, *inputServer) {
	t.Helper()
	is := &inputServer{calls: map[string]int{}, caps: map[string]string{}}
	var mu sync.Mutex
	var sessions []*mcp.ServerSession
	inline := map[string]json.RawMessage{}
	for k, v := range entries {
		inline[k] = json.RawMessage(v)
	}
	opts := Options{ProtocolVersion: protocol,
		Discovery: config.Options{HomeDir: t.TempDir(), Env: func(string) (string, bool) { return "", false }, Inline: inline}}
	opts.Dial = func(ctx context.Context, cfg *config.Server, _ *config.Resolved) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := is.server(cfg.Name).Connect(ctx, st, nil)
		if err != nil {
			return nil, fmt.Errorf("mem server: %w", err)
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		return ct, nil
	}
	if edit != nil {
		edit(&opts)
	}
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Close(context.Background())
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			ss.Close()
		}
		checkDocumented(t, rt.Events().Events())
	})
	return rt, is
}

// eras are the protocol versions the handler tests run at: the handshake
// era, where the server's input requests are requests of the server, and
// the stateless revision, where they are multi round-trip input requests.
var eras = []string{DefaultProtocolVersion, "2026-07-28"}

// TestInputRequestsBothEras: sampling, roots and elicitation keep their
// per-server rules and events in both eras: what a server's config leaves
// off is not advertised (in initialize, or in each request's _meta) and
// refused when asked anyway, and the call ends as a failure naming the
// refusal; what it enables is answered, with the same events.
func TestInputRequestsBothEras(t *testing.T) {
	for _, protocol := range eras {
		t.Run(protocol, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				rt, is := newInputRuntime(t, protocol, map[string]string{
					"on":     `{"command":"mem","sampling":true,"roots":["/work/b","/work/a"],"elicitation":"defaults"}`,
					"off":    `{"command":"mem"}`,
					"broken": `{"command":"mem","sampling":true}`,
				}, func(o *Options) {
					o.Sampling = func(_ context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
						if server == "broken" {
							return nil, errors.New("model unavailable")
						}
						return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant",
							Content: &mcp.TextContent{Text: fmt.Sprintf("%d message(s) from %s", len(p.Messages), server)}}, nil
					}
				})
				sess, err := rt.OpenSession(ctx, SessionOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer sess.Close(ctx)
				if got := statusOf(rt, "on").Protocol; got != protocol {
					t.Fatalf("negotiated %q, want %s", got, protocol)
				}
				call := func(name string) string {
					t.Helper()
					res, err := sess.CallTool(ctx, name, map[string]any{})
					if res.IsError {
						return "error: " + res.Text
					}
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					return res.Text
				}
				await := func(m event.Matcher) {
					t.Helper()
					if _, err := rt.Events().Await(ctx, 0, m); err != nil {
						t.Fatal(err)
					}
				}

				if got := call("mcp_on_sample"); !strings.Contains(got, "sampled test-model: 1 message(s) from on") {
					t.Errorf("sampling server: %q", got)
				}
				await(event.Matcher{Kind: event.SamplingAnswered, Server: "on", Attrs: map[string]string{"outcome": "ok", "model": "test-model", "messages": "1"}})
				if got := call("mcp_on_roots"); !strings.Contains(got, "roots file:///work/a,file:///work/b") {
					t.Errorf("roots server: %q", got)
				}
				await(event.Matcher{Kind: event.RootsListed, Server: "on", Attrs: map[string]string{"roots": "2"}})
				if got := call("mcp_on_ask"); !strings.Contains(got, "accept blue") {
					t.Errorf("elicitation server: %q", got)
				}
				await(event.Matcher{Kind: event.ElicitationAnswered, Server: "on", Attrs: map[string]string{"action": "accept", "fields": "color"}})
				is.mu.Lock()
				onCaps := is.caps["on"]
				is.mu.Unlock()
				if onCaps != "roots,sampling,elicitation" {
					t.Errorf("the server with every handler was offered %q", onCaps)
				}

				// go-sdk's server asks a handshake-era client only for what
				// it announced; a stateless server's input requests come
				// whatever the request offered, and the runtime refuses them.
				for tool, want := range map[string]string{
					"mcp_off_sample": `set "sampling": true`,
					"mcp_off_roots":  `roots are not configured for server "off"`,
					"mcp_off_ask":    "elicitation",
				} {
					if got := call(tool); !strings.HasPrefix(got, "error: ") || (protocol != DefaultProtocolVersion && !strings.Contains(got, want)) {
						t.Errorf("%s: %q, want a failure naming %q", tool, got, want)
					}
				}
				is.mu.Lock()
				offCaps := is.caps["off"]
				is.mu.Unlock()
				if offCaps != "" {
					t.Errorf("the server without handlers was offered %q", offCaps)
				}
				if got := call("mcp_broken_sample"); !strings.HasPrefix(got, "error: ") || !strings.Contains(got, "model unavailable") {
					t.Errorf("failing callback: %q", got)
				}
				await(event.Matcher{Kind: event.SamplingAnswered, Server: "broken", Attrs: map[string]string{"outcome": "error"}})
				if protocol != DefaultProtocolVersion {
					await(event.Matcher{Kind: event.SamplingAnswered, Server: "off", Attrs: map[string]string{"outcome": "refused"}})
				}
				synctest.Wait()
				for _, m := range []event.Matcher{
					{Kind: event.SamplingAnswered, Server: "off", Attrs: map[string]string{"outcome": "ok"}},
					{Kind: event.RootsListed, Server: "off"},
					{Kind: event.ElicitationAnswered, Server: "off"},
				} {
					if n := rt.Events().Count(m); n != 0 {
						t.Errorf("%d %s events of the server without handlers", n, m.Kind)
					}
				}
				is.mu.Lock()
				defer is.mu.Unlock()
				if protocol != DefaultProtocolVersion && (is.calls["off/roots"] != 1 || is.calls["on/roots"] != 2) {
					t.Errorf("calls %v: want one round for a refused input request, two for an answered one", is.calls)
				}
			})
		})
	}
}

// TestInputRoundsBounded: a stateless server that asks for input whatever
// it gets is asked maxInputRounds times, then the call fails with a
// JSON-RPC error saying so; the connection stays, nothing restarts.
func TestInputRoundsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		rt, is := newInputRuntime(t, "2026-07-28", map[string]string{"on": `{"command":"mem","roots":["/work/a"]}`}, nil)
		sess, err := rt.OpenSession(ctx, SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close(ctx)
		res, err := sess.CallTool(WithCallID(ctx, "nag"), "mcp_on_nag", map[string]any{})
		if err == nil || !res.IsError || !strings.Contains(res.Text, "MCP error:") || !strings.Contains(res.Text, "after 10 rounds") {
			t.Fatalf("nagging server: %+v, %v", res, err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.ToolCallFinished, Server: "on",
			Attrs: map[string]string{"call": "nag", "outcome": "error", "code": ""}}); err != nil {
			t.Fatal(err)
		}
		if n := rt.Events().Count(event.Matcher{Kind: event.RootsListed, Server: "on"}); n != maxInputRounds-1 {
			t.Errorf("%d roots.listed, want %d (one per answered round)", n, maxInputRounds-1)
		}
		if got, err := sess.CallTool(ctx, "mcp_on_roots", map[string]any{}); err != nil || !strings.Contains(got.Text, "roots file:///work/a state r-state") {
			t.Fatalf("the next call: %+v, %v", got, err)
		}
		synctest.Wait()
		if n := rt.Events().Count(event.Matcher{Kind: event.RestartScheduled}); n != 0 {
			t.Errorf("%d restarts", n)
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		if is.calls["on/nag"] != maxInputRounds {
			t.Errorf("the server was asked %d times, want %d", is.calls["on/nag"], maxInputRounds)
		}
	})
}
