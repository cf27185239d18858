package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientServer serves tools that use the host-side handlers: "progress"
// reports two steps when the call carries a progress token, "sample" asks
// the host for a completion, "roots" lists the host's roots. It has two
// resources and one prompt. rootsChanged counts notifications/roots/list_changed.
func clientServer(rootsChanged func()) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "client-features", Version: "1"}, &mcp.ServerOptions{
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { rootsChanged() },
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	obj := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tok := req.Params.GetProgressToken()
		if tok == nil {
			return text("no token"), nil
		}
		// Values that only shortest-form formatting renders exactly
		// ("0.25", "12.5", "250"; one significant digit would give
		// "0.2", "1e+01", "2e+02").
		for i, msg := range []string{"half", strings.Repeat("x", 500)} {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: []float64{0.25, 12.5}[i], Total: 250, Message: msg}); err != nil {
				return nil, err
			}
		}
		return text("token"), nil
	})
	srv.AddTool(&mcp.Tool{Name: "sample", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return text("sampling failed: " + err.Error()), nil
		}
		return text("sampled " + res.Model + ": " + res.Content.(*mcp.TextContent).Text), nil
	})
	srv.AddTool(&mcp.Tool{Name: "roots", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return text("roots failed: " + err.Error()), nil
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return text("roots " + strings.Join(uris, ",")), nil
	})
	read := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}
	srv.AddResource(&mcp.Resource{URI: "file:///a", Name: "a"}, read)
	srv.AddResource(&mcp.Resource{URI: "file:///b", Name: "b"}, read)
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	return srv
}

// newClientRuntime runs the inline servers of entries against clientServer in
// memory; it returns the runtime, the last server made per config name and
// the count of roots/list_changed per name.
type memServers struct {
	mu           sync.Mutex
	servers      map[string]*mcp.Server
	sessions     []*mcp.ServerSession
	rootsChanged map[string]int
}

func newClientRuntime(t *testing.T, entries map[string]string, edit func(*Options)) (*Runtime, *memServers) {
	t.Helper()
	inline := map[string]json.RawMessage{}
	for k, v := range entries {
		inline[k] = json.RawMessage(v)
	}
	ms := &memServers{servers: map[string]*mcp.Server{}, rootsChanged: map[string]int{}}
	opts := Options{Discovery: config.Options{HomeDir: t.TempDir(), Env: func(string) (string, bool) { return "", false }, Inline: inline}}
	opts.Dial = func(ctx context.Context, cfg *config.Server, _ *config.Resolved) (mcp.Transport, error) {
		name := cfg.Name
		srv := clientServer(func() {
			ms.mu.Lock()
			ms.rootsChanged[name]++
			ms.mu.Unlock()
		})
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			return nil, fmt.Errorf("mem server: %w", err)
		}
		ms.mu.Lock()
		ms.servers[name] = srv
		ms.sessions = append(ms.sessions, ss)
		ms.mu.Unlock()
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
		ms.mu.Lock()
		defer ms.mu.Unlock()
		for _, ss := range ms.sessions {
			ss.Close()
		}
		checkDocumented(t, rt.Events().Events())
	})
	return rt, ms
}

func TestProgressPerServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		var (
			mu      sync.Mutex
			updates []ProgressUpdate
		)
		rt, _ := newClientRuntime(t, map[string]string{
			"on":  `{"command":"mem","progress":true}`,
			"off": `{"command":"mem"}`,
		}, func(o *Options) {
			o.Progress = func(u ProgressUpdate) {
				mu.Lock()
				updates = append(updates, u)
				mu.Unlock()
			}
		})
		sess, err := rt.OpenSession(ctx, SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sess.CallTool(WithCallID(ctx, "c1"), "mcp_on_progress", map[string]any{})
		if err != nil || !strings.Contains(res.Text, "\ntoken\n") {
			t.Fatalf("enabled server: %+v, %v", res, err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.ToolProgress, Server: "on",
			Attrs: map[string]string{"call": "c1", "tool": "mcp_on_progress", "progress": "0.25", "total": "250", "text": "half"}}); err != nil {
			t.Fatal(err)
		}
		e, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.ToolProgress, Server: "on", Attrs: map[string]string{"progress": "12.5", "total": "250"}})
		if err != nil {
			t.Fatal(err)
		}
		if txt := e.Attrs["text"].(string); len(txt) > 200 || !strings.HasPrefix(txt, "xxx") {
			t.Errorf("progress message not capped to 200 bytes: %d bytes", len(txt))
		}
		synctest.Wait()
		mu.Lock()
		if len(updates) != 2 || updates[0].Call != "c1" || updates[0].Message != "half" || updates[1].Progress != 12.5 || updates[1].Total != 250 {
			t.Errorf("progress callback got %+v", updates)
		}
		mu.Unlock()
		res, err = sess.CallTool(ctx, "mcp_off_progress", map[string]any{})
		if err != nil || !strings.Contains(res.Text, "no token") {
			t.Fatalf("server without progress: %+v, %v", res, err)
		}
		if n := rt.Events().Count(event.Matcher{Kind: event.ToolProgress, Server: "off"}); n != 0 {
			t.Fatalf("off server reported %d progress events", n)
		}
	})
}

func TestSamplingPerServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		rt, _ := newClientRuntime(t, map[string]string{
			"on":     `{"command":"mem","sampling":true}`,
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
		res, err := sess.CallTool(ctx, "mcp_on_sample", map[string]any{})
		if err != nil || !strings.Contains(res.Text, "sampled test-model: 1 message(s) from on") {
			t.Fatalf("enabled server: %+v, %v", res, err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.SamplingAnswered, Server: "on",
			Attrs: map[string]string{"outcome": "ok", "model": "test-model", "messages": "1"}}); err != nil {
			t.Fatal(err)
		}
		// go-sdk's server does not send a request the client did not
		// announce; TestSamplingRefusedByMiddleware covers servers that do.
		res, err = sess.CallTool(ctx, "mcp_off_sample", map[string]any{})
		if err != nil || !strings.Contains(res.Text, "sampling failed") {
			t.Fatalf("server without sampling: %+v, %v", res, err)
		}
		res, err = sess.CallTool(ctx, "mcp_broken_sample", map[string]any{})
		if err != nil || !strings.Contains(res.Text, "model unavailable") {
			t.Fatalf("failing callback: %+v, %v", res, err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.SamplingAnswered, Server: "broken", Attrs: map[string]string{"outcome": "error"}}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSamplingRefusedByMiddleware sends sampling/createMessage the way a
// server that ignores the client's capabilities would: the runtime refuses it
// with an error naming the server and the fix, and reports it.
func TestSamplingRefusedByMiddleware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		rt, _ := newClientRuntime(t, map[string]string{"on": `{"command":"mem","sampling":true}`, "off": `{"command":"mem"}`}, nil)
		sess, err := rt.OpenSession(ctx, SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close(ctx)
		for name, want := range map[string]string{"on": "no sampling callback", "off": `set "sampling": true`} {
			s := rt.running(name)[0]
			next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
				t.Errorf("%s: the request went past the refusal", name)
				return nil, nil
			}
			req := &mcp.CreateMessageWithToolsRequest{Params: &mcp.CreateMessageWithToolsParams{MaxTokens: 1,
				Messages: []*mcp.SamplingMessageV2{{Role: "user"}}}}
			_, err := s.observeRequests(next)(ctx, "sampling/createMessage", req)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
				t.Errorf("%s: refusal %v does not say %q", name, err, want)
			}
			if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.SamplingAnswered, Server: name,
				Attrs: map[string]string{"outcome": "refused", "messages": "1"}}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestRootsPerServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		rt, ms := newClientRuntime(t, map[string]string{
			"on":  `{"command":"mem","roots":["/work/a","file:///work/b"]}`,
			"off": `{"command":"mem"}`,
		}, nil)
		sess, err := rt.OpenSession(ctx, SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sess.CallTool(ctx, "mcp_on_roots", map[string]any{})
		if err != nil || !strings.Contains(res.Text, "roots file:///work/a,file:///work/b\n") {
			t.Fatalf("server with roots: %+v, %v", res, err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.RootsListed, Server: "on", Attrs: map[string]string{"roots": "2"}}); err != nil {
			t.Fatal(err)
		}
		res, err = sess.CallTool(ctx, "mcp_off_roots", map[string]any{})
		if err != nil || !strings.Contains(res.Text, "roots failed") {
			t.Fatalf("server without roots: %+v, %v", res, err)
		}
		if err := rt.SetRoots("off", []config.Root{{URI: "file:///x"}}); err == nil || !strings.Contains(err.Error(), `"roots"`) {
			t.Fatalf("SetRoots on a server without roots: %v", err)
		}
		if err := rt.SetRoots("on", []config.Root{{URI: "http://example.com/"}}); err == nil || !strings.Contains(err.Error(), "scheme") {
			t.Fatalf("SetRoots with a non-file root: %v", err)
		}
		if err := rt.SetRoots("on", []config.Root{{URI: "file:///work/c", Name: "c"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.RootsChanged, Server: "on", Attrs: map[string]string{"roots": "1"}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ms.mu.Lock()
		if ms.rootsChanged["on"] == 0 {
			t.Error("the server got no notifications/roots/list_changed")
		}
		ms.mu.Unlock()
		res, err = sess.CallTool(ctx, "mcp_on_roots", map[string]any{})
		if err != nil || !strings.Contains(res.Text, "roots file:///work/c\n") {
			t.Fatalf("after SetRoots: %+v, %v", res, err)
		}
		if got, _ := rt.Roots("on"); len(got) != 1 || got[0].URI != "file:///work/c" {
			t.Errorf("Roots = %+v", got)
		}
		if st := statusOf(rt, "on"); st.Roots != 1 {
			t.Errorf("status roots = %d, want 1", st.Roots)
		}
	})
}

func TestResourcesAndPromptsListed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		rt, ms := newClientRuntime(t, map[string]string{
			"on":  `{"command":"mem","resources":true,"prompts":true}`,
			"off": `{"command":"mem"}`,
		}, nil)
		sess, err := rt.OpenSession(ctx, SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = sess
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.ResourcesListed, Server: "on", Attrs: map[string]string{"resources": "2", "error": ""}}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.PromptsListed, Server: "on", Attrs: map[string]string{"prompts": "1"}}); err != nil {
			t.Fatal(err)
		}
		res, err := rt.Resources("on")
		if err != nil || len(res) != 2 || res[0].URI != "file:///a" {
			t.Fatalf("Resources = %v, %v", res, err)
		}
		if _, err := rt.Resources("off"); err == nil || !strings.Contains(err.Error(), `"resources": true`) {
			t.Fatalf("Resources of a server without the switch: %v", err)
		}
		seq := rt.Events().Count(event.Matcher{})
		ms.mu.Lock()
		srv := ms.servers["on"]
		ms.mu.Unlock()
		srv.AddResource(&mcp.Resource{URI: "file:///c", Name: "c"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		srv.AddPrompt(&mcp.Prompt{Name: "bye"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		if _, err := rt.Events().Await(ctx, uint64(seq), event.Matcher{Kind: event.ResourcesChanged, Server: "on"}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.ResourcesListed, Server: "on", Attrs: map[string]string{"resources": "3"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.PromptsListed, Server: "on", Attrs: map[string]string{"prompts": "2"}}); err != nil {
			t.Fatal(err)
		}
		st := statusOf(rt, "on")
		if st.Resources != 3 || st.Prompts != 2 {
			t.Errorf("status: %d resources, %d prompts", st.Resources, st.Prompts)
		}
		if n := rt.Events().Count(event.Matcher{Kind: event.ResourcesListed, Server: "off"}); n != 0 {
			t.Errorf("off server listed resources %d times", n)
		}
	})
}

func statusOf(rt *Runtime, name string) ServerStatus {
	all := rt.Status()
	i := slices.IndexFunc(all, func(s ServerStatus) bool { return s.Name == name })
	if i < 0 {
		return ServerStatus{}
	}
	return all[i]
}

// TestResourceListLimit: resources and prompts are listed up to MaxTools
// entries; a list of exactly MaxTools is whole (truncated false), one more
// is cut to MaxTools (truncated true). A server that enables resources
// only has no prompts to ask for.
func TestResourceListLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		rt, ms := newClientRuntime(t, map[string]string{
			"on":  `{"command":"mem","resources":true}`,
			"all": `{"command":"mem","resources":true,"prompts":true}`,
		}, func(o *Options) { o.MaxTools = 2 })
		if _, err := rt.OpenSession(ctx, SessionOptions{}); err != nil {
			t.Fatal(err)
		}
		// clientServer has exactly two resources.
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.ResourcesListed, Server: "on", Attrs: map[string]string{"resources": "2", "truncated": "false"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Prompts("on"); err == nil || !strings.Contains(err.Error(), `"prompts": true`) {
			t.Errorf("Prompts of a server with resources only: %v", err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.PromptsListed, Server: "all", Attrs: map[string]string{"prompts": "1"}}); err != nil {
			t.Fatal(err)
		}
		if p, err := rt.Prompts("all"); err != nil || len(p) != 1 {
			t.Errorf("Prompts of a server with both = %v, %v", p, err)
		}
		ms.mu.Lock()
		srv := ms.servers["on"]
		ms.mu.Unlock()
		srv.AddResource(&mcp.Resource{URI: "file:///c", Name: "c"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.ResourcesListed, Server: "on", Attrs: map[string]string{"resources": "2", "truncated": "true"}}); err != nil {
			t.Fatal(err)
		}
		res, err := rt.Resources("on")
		if err != nil || len(res) != 2 || res[0].URI != "file:///a" || res[1].URI != "file:///b" {
			t.Errorf("Resources over the limit = %v, %v; want the first two", res, err)
		}
	})
}
