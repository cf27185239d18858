package host

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/toolcache"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The cache hints of tools/list (cachehints.go), against the fixture on
// the fake clock: a ttlMs bounds the disk record and the live list, a
// private list never reaches the disk, and go-sdk's own real-clock list
// cache never answers for the server.

// newHintEnv is newFixtureEnv with a fixed directory (so that the
// journal path, part of the configuration, and with it the config hash,
// stay the same across runtimes), a tool cache in dir/cache and vars as
// the config layer's environment.
func newHintEnv(t *testing.T, dir string, vars map[string]string, knobs map[string]string, opts Options) *fixtureEnv {
	t.Helper()
	e := &fixtureEnv{t: t, clock: clocktest.New(), dir: dir}
	opts.Clock = e.clock
	opts.CacheDir = dir + "/cache"
	opts.Discovery.Inline = map[string]json.RawMessage{"fx": e.fixtureServer("fx", knobs, "")}
	opts.Discovery.HomeDir = t.TempDir()
	opts.Discovery.Env = func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.rt = rt
	t.Cleanup(func() {
		e.close()
		checkDocumented(t, e.rt.Events().Events())
	})
	return e
}

// openAsync opens a session in the background.
func (e *fixtureEnv) openAsync() <-chan *Session {
	ch := make(chan *Session, 1)
	go func() {
		sess, err := e.rt.OpenSession(context.Background(), SessionOptions{})
		if err != nil {
			e.t.Error(err)
		}
		ch <- sess
	}()
	return ch
}

func (e *fixtureEnv) events(m event.Matcher) int { return e.rt.Events().Count(m) }

// TestCacheHintTTLListedAgainAtUse: a live list of the 2026-07-28 era is
// fresh for its ttlMs on the runtime's clock. A use 1 ms before that lists
// nothing; the first use at ttlMs (a read of the session's tools) lists
// the tools again, once, and the list is fresh again from then; a call is
// a use too. The refreshes reach the server although go-sdk's own cache
// (real clock, 60 s) would have answered them.
func TestCacheHintTTLListedAgainAtUse(t *testing.T) {
	knobs := map[string]string{"MCP_FIXTURE_ERA": "modern", "MCP_FIXTURE_TOOLS_TTL_MS": "60000"}
	e := newHintEnv(t, t.TempDir(), nil, knobs, Options{})
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.await(m(event.ServerConnected, "fx", "protocol", ProtocolModern))
	written := e.await(m(event.CacheWritten, "fx", "tools", "9"))
	e.awaitJournal("fx", "tools-list", 1)
	if tl := lastOf(e.entries("fx"), "tools-list"); tl.Int("ttlMs") != 60000 {
		t.Fatalf("the fixture sent no ttlMs: %v", tl.Fields)
	}
	stale := m(event.CacheMiss, "fx", "reason", toolcache.ReasonTTL)

	e.clock.Advance(time.Minute - time.Millisecond)
	if n := len(sess.Tools()); n != 9 {
		t.Fatalf("%d tools", n)
	}
	if n := e.events(stale); n != 0 {
		t.Fatalf("a use 1 ms before ttlMs found the list stale")
	}

	e.clock.Advance(time.Millisecond)
	if n := len(sess.Tools()); n != 9 {
		t.Fatalf("%d tools (the stale list stays until the new one arrives)", n)
	}
	e.await(stale)
	e.awaitJournal("fx", "tools-list", 2)
	e.awaitAfter(written.Seq, m(event.CacheWritten, "fx", "tools", "9"))
	sess.Tools()
	if n := e.events(stale); n != 1 {
		t.Fatalf("%d cache.miss reason=ttl, want 1 (the refreshed list is fresh)", n)
	}

	// The record on disk was rewritten with the hint, stamped at the
	// refresh.
	_, l := toolcache.New(e.dir+"/cache", e.clock).Get("fx", e.rt.serverConfig("fx").ConfigHash())
	if !l.Hit || l.TTL != time.Minute || !l.SavedAt.Equal(e.clock.Now()) {
		t.Fatalf("record lookup %+v", l)
	}

	// A call is a use: past ttlMs again, it lists the tools again.
	e.clock.Advance(time.Minute)
	res, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "hi"})
	if err != nil || !strings.Contains(res.Text, "hi") {
		t.Fatalf("call = %+v, %v", res, err)
	}
	e.awaitJournal("fx", "tools-list", 3)
	if n := e.events(stale); n != 2 {
		t.Fatalf("%d cache.miss reason=ttl, want 2", n)
	}
}

// TestCacheHintLegacyUnchanged: a handshake-era connection has no hints
// (the fixture sends go-sdk's zero defaults there, whatever its knobs):
// its list never goes stale by the clock and is listed once.
func TestCacheHintLegacyUnchanged(t *testing.T) {
	knobs := map[string]string{"MCP_FIXTURE_ERA": "legacy", "MCP_FIXTURE_TOOLS_TTL_MS": "60000"}
	e := newHintEnv(t, t.TempDir(), nil, knobs, Options{})
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.await(m(event.CacheWritten, "fx"))
	e.clock.Advance(24 * time.Hour)
	sess.Tools()
	if _, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := e.events(m(event.CacheMiss, "fx", "reason", toolcache.ReasonTTL)); n != 0 {
		t.Fatalf("%d cache.miss reason=ttl on a legacy connection", n)
	}
	if n := e.count("fx", "tools-list"); n != 1 {
		t.Fatalf("%d tools/list, want 1", n)
	}
	_, l := toolcache.New(e.dir+"/cache", e.clock).Get("fx", e.rt.serverConfig("fx").ConfigHash())
	if !l.Hit || l.TTL != 0 {
		t.Fatalf("record lookup %+v", l)
	}
	if hintFor(ProtocolLegacy, toolcache.Hint{TTL: time.Second, Scope: toolcache.ScopePrivate}) != (toolcache.Hint{}) {
		t.Fatal("a legacy connection's hint is used")
	}
}

// TestCacheHintListsListedAgainAtUse: the resources and prompts a
// server's config follows are fresh for the ttlMs of their own lists (all
// pages: the fixture pages them by two) on the runtime's clock, scoped
// private or not. A read 1 ms before lists nothing; the first read at
// ttlMs lists that list again, once (cache.miss reason ttl, then
// resources.listed or prompts.listed), and goes on with the list it has;
// the other list, still fresh, is not listed. No timer lists them: a
// runtime left alone past both ttlMs makes no request.
func TestCacheHintListsListedAgainAtUse(t *testing.T) {
	knobs := map[string]string{"MCP_FIXTURE_ERA": "modern", "MCP_FIXTURE_RESOURCES": "3", "MCP_FIXTURE_PROMPTS": "1",
		"MCP_FIXTURE_PAGE_SIZE": "2", "MCP_FIXTURE_RESOURCES_TTL_MS": "30000", "MCP_FIXTURE_PROMPTS_TTL_MS": "60000",
		"MCP_FIXTURE_CACHE_SCOPE": "private"}
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", knobs, `"resources":true,"prompts":true`)}
	}, Options{})
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = sess
	e.await(m(event.ResourcesListed, "fx", "resources", "3", "error", ""))
	e.await(m(event.PromptsListed, "fx", "prompts", "1", "error", ""))
	e.awaitJournal("fx", "resources-list", 2)
	if rl := lastOf(e.entries("fx"), "resources-list"); rl.Int("ttlMs") != 30000 || rl.Str("cacheScope") != "private" {
		t.Fatalf("the fixture sent no hint: %v", rl.Fields)
	}
	stale := m(event.CacheMiss, "fx", "reason", toolcache.ReasonTTL)

	e.clock.Advance(30*time.Second - time.Millisecond)
	if r, err := e.rt.Resources("fx"); err != nil || len(r) != 3 {
		t.Fatalf("Resources = %d, %v", len(r), err)
	}
	if n := e.events(stale); n != 0 {
		t.Fatal("a read 1 ms before ttlMs found the resources stale")
	}

	e.clock.Advance(time.Millisecond)
	if r, err := e.rt.Resources("fx"); err != nil || len(r) != 3 {
		t.Fatalf("Resources = %d, %v (the stale list stays until the new one arrives)", len(r), err)
	}
	miss := e.await(stale)
	e.awaitJournal("fx", "resources-list", 4)
	e.awaitAfter(miss.Seq, m(event.ResourcesListed, "fx", "resources", "3")) // the refresh's
	if n := e.events(m(event.ResourcesListed, "fx")); n != 2 {
		t.Fatalf("%d resources.listed, want 2", n)
	}
	if _, err := e.rt.Resources("fx"); err != nil {
		t.Fatal(err)
	}
	// The prompts (ttlMs 60 s) are still fresh at 30 s.
	if p, err := e.rt.Prompts("fx"); err != nil || len(p) != 1 {
		t.Fatalf("Prompts = %d, %v", len(p), err)
	}
	if n := e.events(stale); n != 1 {
		t.Fatalf("%d cache.miss reason=ttl, want 1", n)
	}
	if n := e.count("fx", "prompts-list"); n != 1 {
		t.Fatalf("%d prompts/list, want 1", n)
	}

	// Past both ttlMs with no read, nothing is listed; the prompts' read
	// lists the prompts alone.
	e.clock.Advance(10 * time.Minute)
	if n := e.count("fx", "resources-list") + e.count("fx", "prompts-list"); n != 5 {
		t.Fatalf("%d list pages after a quiet hour, want 5 (no timer)", n)
	}
	if _, err := e.rt.Prompts("fx"); err != nil {
		t.Fatal(err)
	}
	e.awaitJournal("fx", "prompts-list", 2)
	last := e.awaitAfter(miss.Seq, stale)
	e.awaitAfter(last.Seq, m(event.PromptsListed, "fx", "prompts", "1"))
	if n := e.events(stale); n != 2 {
		t.Fatalf("%d cache.miss reason=ttl, want 2", n)
	}
	if n := e.count("fx", "resources-list"); n != 4 {
		t.Fatalf("%d resources/list pages, want 4", n)
	}
	if n := e.events(m(event.CacheWritten, "fx")); n != 0 {
		t.Fatalf("%d cache.written of a private server", n)
	}
}

// TestCacheHintListsLegacyUnchanged: a handshake-era connection's
// resources and prompts carry no hints and are never listed again by the
// clock.
func TestCacheHintListsLegacyUnchanged(t *testing.T) {
	knobs := map[string]string{"MCP_FIXTURE_ERA": "legacy", "MCP_FIXTURE_RESOURCES": "3", "MCP_FIXTURE_PROMPTS": "1",
		"MCP_FIXTURE_RESOURCES_TTL_MS": "30000", "MCP_FIXTURE_PROMPTS_TTL_MS": "30000"}
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", knobs, `"resources":true,"prompts":true`)}
	}, Options{})
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.await(m(event.ResourcesListed, "fx", "resources", "3"))
	e.await(m(event.PromptsListed, "fx", "prompts", "1"))
	e.clock.Advance(24 * time.Hour)
	if _, err := e.rt.Resources("fx"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.Prompts("fx"); err != nil {
		t.Fatal(err)
	}
	// A call answered after both reads: a refresh they started would have
	// been asked for before it.
	if _, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := e.events(m(event.CacheMiss, "fx", "reason", toolcache.ReasonTTL)); n != 0 {
		t.Fatalf("%d cache.miss reason=ttl on a legacy connection", n)
	}
	if r, p := e.count("fx", "resources-list"), e.count("fx", "prompts-list"); r != 1 || p != 1 {
		t.Fatalf("%d resources/list, %d prompts/list, want 1 each", r, p)
	}
}

// TestCacheHintStartup: a record written with ttlMs gives deferred tools
// at the next start only while it is fresh on the clock (1 ms before
// ttlMs: a hit; at ttlMs: a miss with reason ttl), and a configuration
// changed while the record is fresh misses with reason config-changed:
// the config hash decides first.
func TestCacheHintStartup(t *testing.T) {
	dir := t.TempDir()
	knobs := map[string]string{"MCP_FIXTURE_ERA": "modern", "MCP_FIXTURE_TOOLS_TTL_MS": "60000", "MCP_FIXTURE_INIT_DELAY_MS": "${FX_DELAY}"}
	warm := newHintEnv(t, dir, map[string]string{"FX_DELAY": "0"}, knobs, Options{})
	if _, err := warm.rt.OpenSession(t.Context(), SessionOptions{}); err != nil {
		t.Fatal(err)
	}
	warm.await(m(event.CacheWritten, "fx"))
	warm.close()

	held := map[string]string{"FX_DELAY": "600000"} // the server never answers in time
	for _, tc := range []struct {
		name   string
		at     time.Duration
		extra  map[string]string
		reason string // "" for a hit
	}{
		{"fresh", time.Minute - time.Millisecond, nil, ""},
		{"stale", time.Minute, nil, toolcache.ReasonTTL},
		{"config changed while fresh", time.Second, map[string]string{"MCP_FIXTURE_EXTRA_TOOLS": "1"}, toolcache.ReasonConfigChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := map[string]string{}
			for _, m := range []map[string]string{knobs, tc.extra} {
				for n, v := range m {
					k[n] = v
				}
			}
			e := newHintEnv(t, dir, held, k, Options{LateRegistration: true})
			e.clock.Advance(tc.at)
			opened := e.openAsync()
			e.await(m(event.GateOpened, ""))
			// The lookup is made when the server is acquired, inside the
			// gate's time: await it before the gate's time passes.
			if tc.reason == "" {
				e.await(m(event.CacheHit, "fx"))
			} else {
				e.await(m(event.CacheMiss, "fx"))
			}
			e.clock.Advance(DefaultStartupGate)
			sess := <-opened
			rep := sess.StartReport()
			if tc.reason == "" {
				if e.events(m(event.CacheHit, "fx", "tools", "9")) != 1 || strings.Join(rep.Deferred, ",") != "fx" || len(sess.Tools()) != 9 {
					t.Fatalf("report %+v, %d tools\n%s", rep, len(sess.Tools()), eventsString(e.rt.Events().Events()))
				}
				return
			}
			if e.events(m(event.CacheMiss, "fx", "reason", tc.reason)) != 1 || e.events(m(event.CacheHit, "fx")) != 0 ||
				strings.Join(rep.Late, ",") != "fx" || len(sess.Tools()) != 0 {
				t.Fatalf("report %+v, %d tools\n%s", rep, len(sess.Tools()), eventsString(e.rt.Events().Events()))
			}
		})
	}
}

// TestCacheHintPrivateNeverStored: a list scoped private is not written
// to the tool cache, and the record a public list left is removed; the
// live connection keeps using the list, ttlMs included.
func TestCacheHintPrivateNeverStored(t *testing.T) {
	dir := t.TempDir()
	knobs := map[string]string{"MCP_FIXTURE_ERA": "modern", "MCP_FIXTURE_TOOLS_TTL_MS": "60000", "MCP_FIXTURE_CACHE_SCOPE": "private"}
	e := newHintEnv(t, dir, nil, knobs, Options{})
	cache := toolcache.New(dir+"/cache", e.clock)
	hash := e.rt.serverConfig("fx").ConfigHash()
	if _, err := cache.Put("fx", hash, []*mcp.Tool{{Name: "old"}}); err != nil {
		t.Fatal(err)
	}
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.await(m(event.CacheInvalidated, "fx", "reason", "private scope"))
	if _, err := os.Stat(cache.Path("fx")); !os.IsNotExist(err) {
		t.Fatalf("the record is still there: %v", err)
	}
	if n := e.events(m(event.CacheWritten, "fx")); n != 0 {
		t.Fatalf("a private list was written")
	}
	if n := len(sess.Tools()); n != 9 {
		t.Fatalf("%d tools", n)
	}
	e.clock.Advance(time.Minute)
	sess.Tools()
	e.awaitJournal("fx", "tools-list", 2)
	e.await(m(event.CacheMiss, "fx", "reason", toolcache.ReasonTTL))
}

// TestCacheHintsBypassGoSDKCache shows what go-sdk's client does with a
// list result's ttlMs (v1.8.0: methodCache, on the real clock) and that
// the runtime's middleware takes it out of the way: without it the second
// ListTools within ttlMs never reaches the server; with it both do, and
// the hint still reaches the sink of the request.
func TestCacheHintsBypassGoSDKCache(t *testing.T) {
	for _, bypass := range []bool{false, true} {
		var lists atomic.Int32
		srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, &mcp.ServerOptions{
			SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = int(time.Hour.Milliseconds()) },
		})
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" {
					lists.Add(1)
				}
				return next(ctx, method, req)
			}
		})
		mcp.AddTool(srv, &mcp.Tool{Name: "t"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
		if bypass {
			client.AddSendingMiddleware(cacheHints)
		}
		cs, err := client.Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v := cs.InitializeResult().ProtocolVersion; !IsModern(v) {
			t.Fatalf("negotiated %s", v)
		}
		var sink hintSink
		for range 2 {
			if _, err := cs.ListTools(withHintSink(t.Context(), &sink), nil); err != nil {
				t.Fatal(err)
			}
		}
		cs.Close()
		ss.Wait()
		want := int32(1)
		if bypass {
			want = 2
			if sink.pages != 2 || sink.hint.TTL != time.Hour || sink.hint.Scope != toolcache.ScopePublic {
				t.Errorf("sink %+v", sink)
			}
		}
		if got := lists.Load(); got != want {
			t.Errorf("bypass=%v: the server saw %d tools/list, want %d", bypass, got, want)
		}
	}
}

// TestHintSinkPages: a list's hint is its least fresh page's, a page
// without a positive ttlMs removes the bound, and one private page makes
// it private.
func TestHintSinkPages(t *testing.T) {
	for _, tc := range []struct {
		pages []mcp.Cacheable
		want  toolcache.Hint
	}{
		{[]mcp.Cacheable{{TTLMs: 5000, CacheScope: "public"}}, toolcache.Hint{TTL: 5 * time.Second, Scope: "public"}},
		{[]mcp.Cacheable{{TTLMs: 5000, CacheScope: "public"}, {TTLMs: 2000, CacheScope: "public"}}, toolcache.Hint{TTL: 2 * time.Second, Scope: "public"}},
		{[]mcp.Cacheable{{TTLMs: 5000}, {TTLMs: 0}, {TTLMs: 9000}}, toolcache.Hint{}},
		{[]mcp.Cacheable{{TTLMs: -5, CacheScope: "public"}}, toolcache.Hint{Scope: "public"}},
		{[]mcp.Cacheable{{TTLMs: 5000, CacheScope: "public"}, {TTLMs: 5000, CacheScope: "private"}, {TTLMs: 5000, CacheScope: "public"}}, toolcache.Hint{TTL: 5 * time.Second, Scope: "private"}},
		{[]mcp.Cacheable{{TTLMs: 1}, {TTLMs: 1, CacheScope: "public"}}, toolcache.Hint{TTL: time.Millisecond, Scope: "public"}},
	} {
		var s hintSink
		for _, p := range tc.pages {
			s.add(p)
		}
		if s.hint != tc.want {
			t.Errorf("pages %+v: hint %+v, want %+v", tc.pages, s.hint, tc.want)
		}
	}
}

// lastOf returns the last journal entry of kind.
func lastOf(es []journal.Entry, kind string) journal.Entry {
	var last journal.Entry
	for _, en := range es {
		if en.Kind == kind {
			last = en
		}
	}
	return last
}
