package host

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestDepthExceeds(t *testing.T) {
	nest := func(n int) any {
		var v any = map[string]any{"type": "string"}
		for range n - 1 {
			v = map[string]any{"a": v}
		}
		return v
	}
	for _, tc := range []struct {
		v     any
		limit int
		want  bool
	}{
		{nil, 1, false},
		{"scalar", 0, false},
		{nest(3), 3, false},
		{nest(4), 3, true},
		{[]any{[]any{[]any{}}}, 3, false},
		{[]any{[]any{[]any{[]any{}}}}, 3, true},
		{map[string]any{"p": []any{map[string]any{}}}, 2, true},
	} {
		if got := depthExceeds(tc.v, tc.limit); got != tc.want {
			t.Errorf("depthExceeds(%v, %d) = %v", tc.v, tc.limit, got)
		}
	}
}

func TestIsPowerOfTen(t *testing.T) {
	var got []int
	for n := range 100_001 {
		if isPowerOfTen(n) {
			got = append(got, n)
		}
	}
	if s, _ := json.Marshal(got); string(s) != "[10,100,1000,10000,100000]" {
		t.Errorf("powers of ten: %s", s)
	}
}

// TestToolLimits: too many tools stop the listing, a long name and a deep
// schema drop their tool, each with tools.limited.
func TestToolLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"many": "", "odd": ""}, Options{MaxTools: 3})
		env.servers["many"].tools = func(srv *mcp.Server) {
			echoTools(srv)
			for _, n := range []string{"t1", "t2", "t3", "t4"} {
				srv.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)}, nil)
			}
		}
		deep := strings.Repeat(`{"type":"object","properties":{"a":`, 40) + `{}` + strings.Repeat("}}", 40)
		env.servers["odd"].tools = func(srv *mcp.Server) {
			srv.AddTool(&mcp.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)}, nil)
			srv.AddTool(&mcp.Tool{Name: strings.Repeat("n", 300), InputSchema: json.RawMessage(`{"type":"object"}`)}, nil)
			srv.AddTool(&mcp.Tool{Name: "deep", InputSchema: json.RawMessage(deep)}, nil)
		}
		if _, err := env.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
			t.Fatal(err)
		}
		env.await(t, event.Matcher{Kind: event.ToolsLimited, Server: "many", Attrs: map[string]string{"reason": "too-many", "tools": "4", "limit": "3"}})
		env.await(t, event.Matcher{Kind: event.ToolsRegistered, Server: "many", Attrs: map[string]string{"tools": "3"}})
		env.await(t, event.Matcher{Kind: event.ToolsLimited, Server: "odd", Attrs: map[string]string{"reason": "name-too-long", "tools": "1", "limit": "128", "sample": strings.Repeat("n", 200)}})
		env.await(t, event.Matcher{Kind: event.ToolsLimited, Server: "odd", Attrs: map[string]string{"reason": "schema-too-deep", "tools": "1", "limit": "64", "sample": "deep"}})
		env.await(t, event.Matcher{Kind: event.ToolsRegistered, Server: "odd", Attrs: map[string]string{"tools": "1", "names": "mcp_odd_ok"}})
	})
}

// TestListChangedFloodEvents: a burst of 1,000 notifications emits ten
// tools.changed and tools.change_flood at 100 and 1,000, and one refresh.
func TestListChangedFloodEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{})
		s, c := openedServer(t, env, "a")
		for range 1000 {
			s.toolsChanged(c)
		}
		if n := env.count(event.ToolsChanged, "a"); n != ListChangedEventBurst {
			t.Errorf("%d tools.changed, want %d", n, ListChangedEventBurst)
		}
		env.await(t, event.Matcher{Kind: event.ToolsChangeFlood, Server: "a", Attrs: map[string]string{"notifications": "100"}})
		env.await(t, event.Matcher{Kind: event.ToolsChangeFlood, Server: "a", Attrs: map[string]string{"notifications": "1000"}})
		last := env.rt.Events().Last()
		if _, err := env.rt.Events().Await(t.Context(), last, event.Matcher{Kind: event.ToolsRegistered, Server: "a"}); err != nil {
			t.Fatalf("no refresh after the debounce: %v", err)
		}
		if n := env.count(event.ToolsChangeFlood, "a"); n != 2 {
			t.Errorf("%d tools.change_flood, want 2", n)
		}
	})
}

// TestAbsorbListChanged: the stdout filter's callback counts a
// list_changed into a window that is already open, exactly as the handler
// would (the flood event at 100 comes from absorbed notifications), and
// declines the one that would open a window, one from another process, and
// any after the window's refresh; a list the server does not follow is
// dropped.
func TestAbsorbListChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": `"prompts": true`}, Options{})
		s, c := openedServer(t, env, "a")
		const tools = "notifications/tools/list_changed"
		if s.absorbListChanged(c.proc, tools) {
			t.Fatal("absorbed the notification that opens the window")
		}
		s.toolsChanged(c) // go-sdk's handler opens it
		if s.absorbListChanged(&proc.Process{}, tools) {
			t.Error("absorbed a notification of another process")
		}
		for i := range 99 {
			if !s.absorbListChanged(c.proc, tools) {
				t.Fatalf("notification %d of an open window declined", i+2)
			}
		}
		if n := env.count(event.ToolsChanged, "a"); n != ListChangedEventBurst {
			t.Errorf("%d tools.changed, want %d", n, ListChangedEventBurst)
		}
		env.await(t, event.Matcher{Kind: event.ToolsChangeFlood, Server: "a", Attrs: map[string]string{"notifications": "100"}})
		last := env.rt.Events().Last()
		if _, err := env.rt.Events().Await(t.Context(), last, event.Matcher{Kind: event.ToolsRegistered, Server: "a"}); err != nil {
			t.Fatalf("no refresh after the debounce: %v", err)
		}
		if s.absorbListChanged(c.proc, tools) {
			t.Error("absorbed a notification after the window's refresh")
		}

		if !s.absorbListChanged(c.proc, "notifications/resources/list_changed") {
			t.Error("a resources list_changed of a server without \"resources\" went on to go-sdk")
		}
		const prompts = "notifications/prompts/list_changed"
		if s.absorbListChanged(c.proc, prompts) {
			t.Error("absorbed the prompts notification that opens the window")
		}
		s.listChanged(c, listPrompts)
		if !s.absorbListChanged(c.proc, prompts) {
			t.Error("declined a prompts notification of an open window")
		}
		if n := env.count(event.PromptsChanged, "a"); n != 1 {
			t.Errorf("%d prompts.changed, want 1", n)
		}
	})
}

// openedServer opens a session of env and returns the server called name
// and its connection.
func openedServer(t *testing.T, env *memEnv, name string) (*server, *connection) {
	t.Helper()
	if _, err := env.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
		t.Fatal(err)
	}
	env.rt.mu.Lock()
	s := env.rt.servers[name]
	env.rt.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s, s.conn
}

// TestToolLimitBoundaries: each tool limit holds exactly at its value: a
// server with exactly MaxTools tools, a name of exactly MaxToolNameBytes
// bytes and a schema exactly MaxSchemaDepth deep keeps every tool and emits
// no tools.limited; one more of each is over the limit.
func TestToolLimitBoundaries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"exact": "", "over": ""}, Options{MaxTools: 4})
		// objectChain nests depth levels of objects and arrays: the top
		// object and its properties map, then array schemas chained by
		// items, then an empty schema.
		objectChain := func(depth int) json.RawMessage {
			k := depth - 3
			return json.RawMessage(`{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, k) + `{}` + strings.Repeat("}", k) + `}}`)
		}
		if depthExceeds(mustDecode(t, objectChain(DefaultMaxSchemaDepth)), DefaultMaxSchemaDepth) ||
			!depthExceeds(mustDecode(t, objectChain(DefaultMaxSchemaDepth+1)), DefaultMaxSchemaDepth) {
			t.Fatal("objectChain does not nest as documented")
		}
		flat := json.RawMessage(`{"type":"object"}`)
		tools := func(nameBytes, depth int) func(*mcp.Server) {
			return func(srv *mcp.Server) {
				srv.AddTool(&mcp.Tool{Name: "t1", InputSchema: flat}, nil)
				srv.AddTool(&mcp.Tool{Name: "t2", InputSchema: flat}, nil)
				srv.AddTool(&mcp.Tool{Name: strings.Repeat("n", nameBytes), InputSchema: flat}, nil)
				srv.AddTool(&mcp.Tool{Name: "deep", InputSchema: objectChain(depth)}, nil)
			}
		}
		env.servers["exact"].tools = tools(DefaultMaxToolNameBytes, DefaultMaxSchemaDepth)
		env.servers["over"].tools = func(srv *mcp.Server) {
			tools(DefaultMaxToolNameBytes+1, DefaultMaxSchemaDepth+1)(srv)
			srv.AddTool(&mcp.Tool{Name: "t5", InputSchema: flat}, nil)
		}
		if _, err := env.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
			t.Fatal(err)
		}
		env.await(t, event.Matcher{Kind: event.ToolsRegistered, Server: "exact", Attrs: map[string]string{"tools": "4"}})
		// tools.limited comes before tools.registered: none came.
		if n := env.count(event.ToolsLimited, "exact"); n != 0 {
			t.Errorf("a server exactly at every limit got %d tools.limited:\n%s", n, env.trace())
		}
		env.await(t, event.Matcher{Kind: event.ToolsLimited, Server: "over", Attrs: map[string]string{"reason": "too-many", "tools": "5", "limit": "4"}})
		env.await(t, event.Matcher{Kind: event.ToolsLimited, Server: "over", Attrs: map[string]string{"reason": "name-too-long", "tools": "1"}})
		env.await(t, event.Matcher{Kind: event.ToolsLimited, Server: "over", Attrs: map[string]string{"reason": "schema-too-deep", "tools": "1", "sample": "deep"}})
		env.await(t, event.Matcher{Kind: event.ToolsRegistered, Server: "over", Attrs: map[string]string{"tools": "2"}})
	})
}

func mustDecode(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestListChangedMaxDelay: notifications postpone a debounce window's
// refresh only while the window is younger than ListChangedMaxDelayFactor
// periods. With the default 100 ms period and a notification every 50 ms
// of the fake clock, the window opened at 0 is re-armed up to 950 ms; the
// notification at exactly 1,000 ms may not postpone it, so the refresh
// comes at 1,050 ms and none comes before (each instant is checked once
// every goroutine of the bubble is idle).
func TestListChangedMaxDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := clocktest.New()
		env := newMemRuntime(t, map[string]string{"a": ""}, Options{Clock: fake})
		s, c := openedServer(t, env, "a")
		start := env.rt.Events().Last()
		refreshes := func() int {
			n := 0
			for _, e := range env.rt.Events().Events() {
				if e.Seq > start && e.Kind == event.ToolsRegistered && e.Server == "a" {
					n++
				}
			}
			return n
		}
		const step = DefaultListChangedDebounce / 2
		s.toolsChanged(c) // opens the window at 0
		for i := 1; i <= 2*ListChangedMaxDelayFactor; i++ {
			fake.Advance(step)
			synctest.Wait()
			if n := refreshes(); n != 0 {
				t.Fatalf("a refresh came %v into a window that was still being postponed:\n%s", fake.Elapsed(), env.trace())
			}
			s.toolsChanged(c)
		}
		// The last notification came at exactly 10 periods: the refresh
		// stays at 10.5 periods.
		fake.Advance(step)
		synctest.Wait()
		if n := refreshes(); n != 1 {
			t.Fatalf("%d refreshes by %v, want 1:\n%s", n, fake.Elapsed(), env.trace())
		}
	})
}
