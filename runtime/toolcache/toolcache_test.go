package toolcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/clocktest"
)

func sampleTools() []*mcp.Tool {
	return []*mcp.Tool{
		{
			Name:        "search",
			Description: "Search issues",
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		},
		{Name: "create", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
}

// roundTrip is what a client sees for tools: their JSON decoded again.
func roundTrip(t *testing.T, tools []*mcp.Tool) []*mcp.Tool {
	t.Helper()
	b, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	var out []*mcp.Tool
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func newCache(t *testing.T) (*Cache, *clocktest.Fake) {
	t.Helper()
	clk := clocktest.New()
	return New(filepath.Join(t.TempDir(), "nested", "cache"), clk), clk
}

func TestHitAndAbsent(t *testing.T) {
	c, clk := newCache(t)
	if tools, l := c.Get("github", "h1"); tools != nil || l.Hit || l.Reason != ReasonAbsent {
		t.Fatalf("empty cache: %v %+v", tools, l)
	}
	inv, err := c.Put("github", "h1", sampleTools())
	if err != nil || inv {
		t.Fatalf("Put = %v, %v", inv, err)
	}
	tools, l := c.Get("github", "h1")
	if !l.Hit || l.Reason != "" || !l.SavedAt.Equal(clk.Now()) {
		t.Fatalf("Lookup = %+v", l)
	}
	if want := roundTrip(t, sampleTools()); !reflect.DeepEqual(tools, want) {
		t.Errorf("tools = %#v, want %#v", tools, want)
	}
	if _, l := c.Get("gitlab", "h1"); l.Reason != ReasonAbsent {
		t.Errorf("other server: %+v", l)
	}

	// The record has the documented shape.
	data, err := os.ReadFile(c.Path("github"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec["version"] != float64(1) || rec["configHash"] != "h1" || rec["savedAt"] != "2026-01-01T00:00:00Z" || rec["server"] != "github" {
		t.Errorf("record = %v", rec)
	}
	if ts, ok := rec["tools"].([]any); !ok || len(ts) != 2 {
		t.Errorf("record tools = %v", rec["tools"])
	}
}

func TestMisses(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, c *Cache, clk *clocktest.Fake)
		hash    string
		hit     bool
		reason  string
	}{
		{
			name:    "fresh hit",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) { put(t, c, "h") },
			hash:    "h", hit: true,
		},
		{
			name: "just under TTL is a hit",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				put(t, c, "h")
				clk.Advance(30*24*time.Hour - time.Second)
			},
			hash: "h", hit: true,
		},
		{
			name: "expired after 30 days",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				put(t, c, "h")
				clk.Advance(30*24*time.Hour + time.Second)
			},
			hash: "h", reason: ReasonExpired,
		},
		{
			name: "exactly TTL old is a hit",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				put(t, c, "h")
				clk.Advance(DefaultTTL)
			},
			hash: "h", hit: true,
		},
		{
			name: "exactly TTL in the future is a hit",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				writeRecord(t, c, map[string]any{"savedAt": clk.Now().Add(DefaultTTL).Format(time.RFC3339)})
			},
			hash: "h", hit: true,
		},
		{
			name: "zero TTL means DefaultTTL",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				c.TTL = 0
				put(t, c, "h")
				clk.Advance(time.Hour)
			},
			hash: "h", hit: true,
		},
		{
			name: "custom TTL",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				c.TTL = time.Hour
				put(t, c, "h")
				clk.Advance(61 * time.Minute)
			},
			hash: "h", reason: ReasonExpired,
		},
		{
			name: "record from far future",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				writeRecord(t, c, map[string]any{"savedAt": "2099-01-01T00:00:00Z"})
			},
			hash: "h", reason: ReasonExpired,
		},
		{
			name:    "config hash changed",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) { put(t, c, "old") },
			hash:    "new", reason: ReasonConfigChanged,
		},
		{
			name:    "version mismatch",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) { writeRecord(t, c, map[string]any{"version": 2}) },
			hash:    "h", reason: ReasonVersion,
		},
		{
			name: "other version with other shape is still a version miss",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				writeRecord(t, c, map[string]any{"version": 0, "tools": map[string]any{"x": 1}})
			},
			hash: "h", reason: ReasonVersion,
		},
		{
			name:    "garbage",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) { writeRaw(t, c, "not json at all") },
			hash:    "h", reason: "corrupt: ",
		},
		{
			name: "partial file",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				put(t, c, "h")
				data, _ := os.ReadFile(c.Path("srv"))
				writeRaw(t, c, string(data[:len(data)/2]))
			},
			hash: "h", reason: "corrupt: ",
		},
		{
			name:    "null",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) { writeRaw(t, c, "null") },
			hash:    "h", reason: "corrupt: ",
		},
		{
			name:    "empty file",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) { writeRaw(t, c, "") },
			hash:    "h", reason: "corrupt: ",
		},
		{
			name:    "no version",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) { writeRaw(t, c, `{"configHash":"h"}`) },
			hash:    "h", reason: "corrupt: ",
		},
		{
			name: "bad savedAt",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				writeRecord(t, c, map[string]any{"savedAt": "yesterday"})
			},
			hash: "h", reason: "corrupt: ",
		},
		{
			name:    "empty tools",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) { writeRecord(t, c, map[string]any{"tools": []any{}}) },
			hash:    "h", reason: "corrupt: ",
		},
		{
			name: "nil tool",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				writeRecord(t, c, map[string]any{"tools": []any{nil}})
			},
			hash: "h", reason: "corrupt: ",
		},
		{
			name:    "tools wrong type",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) { writeRecord(t, c, map[string]any{"tools": "x"}) },
			hash:    "h", reason: "corrupt: ",
		},
		{
			name: "ttl hint: 1 ms before ttlMs passed is a hit",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				putHint(t, c, "h", Hint{TTL: time.Minute, Scope: ScopePublic})
				clk.Advance(time.Minute - time.Millisecond)
			},
			hash: "h", hit: true,
		},
		{
			name: "ttl hint: stale once ttlMs passed",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				putHint(t, c, "h", Hint{TTL: time.Minute})
				clk.Advance(time.Minute)
			},
			hash: "h", reason: ReasonTTL,
		},
		{
			name: "ttl hint: measured in milliseconds from a stamp inside a second",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				clk.Advance(900 * time.Millisecond)
				putHint(t, c, "h", Hint{TTL: 200 * time.Millisecond})
				clk.Advance(199 * time.Millisecond)
			},
			hash: "h", hit: true,
		},
		{
			name: "ttl hint: a config change misses whatever the hint says",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				putHint(t, c, "old", Hint{TTL: time.Hour, Scope: ScopePublic})
			},
			hash: "new", reason: ReasonConfigChanged,
		},
		{
			name: "ttl hint: longer than the TTL, the TTL still bounds",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				c.TTL = time.Hour
				putHint(t, c, "h", Hint{TTL: 48 * time.Hour})
				clk.Advance(61 * time.Minute)
			},
			hash: "h", reason: ReasonExpired,
		},
		{
			name: "ttl hint: a record from the future is bounded by it too",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				writeRecord(t, c, map[string]any{"savedAt": clk.Now().Add(time.Minute).Format(time.RFC3339), "ttlMs": 60000})
			},
			hash: "h", reason: ReasonTTL,
		},
		{
			name: "ttlMs 0 sets no bound (today's rule)",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				putHint(t, c, "h", Hint{TTL: 0, Scope: ScopePublic})
				clk.Advance(29 * 24 * time.Hour)
			},
			hash: "h", hit: true,
		},
		{
			name: "negative ttlMs",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				writeRecord(t, c, map[string]any{"ttlMs": -1})
			},
			hash: "h", reason: "corrupt: ",
		},
		{
			name: "private record (never written)",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				writeRecord(t, c, map[string]any{"cacheScope": "private"})
			},
			hash: "h", reason: "corrupt: ",
		},
		{
			name: "record of another server",
			prepare: func(t *testing.T, c *Cache, clk *clocktest.Fake) {
				writeRecord(t, c, map[string]any{"server": "other"})
			},
			hash: "h", reason: "corrupt: ",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, clk := newCache(t)
			tc.prepare(t, c, clk)
			tools, l := c.Get("srv", tc.hash)
			if l.Hit != tc.hit {
				t.Fatalf("Hit = %v (%q), want %v", l.Hit, l.Reason, tc.hit)
			}
			if tc.hit {
				if len(tools) != 2 || l.Reason != "" {
					t.Errorf("hit: %v %+v", tools, l)
				}
				return
			}
			if tools != nil {
				t.Errorf("miss returned tools %v", tools)
			}
			if strings.HasSuffix(tc.reason, ": ") {
				if !strings.HasPrefix(l.Reason, tc.reason) || !l.Corrupt() {
					t.Errorf("Reason = %q, want prefix %q", l.Reason, tc.reason)
				}
				if !strings.Contains(l.Reason, c.Path("srv")) {
					t.Errorf("Reason %q does not name the file", l.Reason)
				}
				return
			}
			if l.Reason != tc.reason || l.Corrupt() {
				t.Errorf("Reason = %q, want %q", l.Reason, tc.reason)
			}
		})
	}
}

func put(t *testing.T, c *Cache, hash string) {
	t.Helper()
	if _, err := c.Put("srv", hash, sampleTools()); err != nil {
		t.Fatal(err)
	}
}

func putHint(t *testing.T, c *Cache, hash string, h Hint) {
	t.Helper()
	if _, err := c.PutHint("srv", hash, sampleTools(), h); err != nil {
		t.Fatal(err)
	}
}

// TestHintRecorded: a hinted list's record carries ttlMs and cacheScope
// and a millisecond stamp, and Get reports the hint's TTL; a list without
// a hint leaves both fields out, as records were before hints existed.
func TestHintRecorded(t *testing.T) {
	c, clk := newCache(t)
	clk.Advance(1500 * time.Millisecond)
	if _, err := c.PutHint("srv", "h", sampleTools(), Hint{TTL: 5 * time.Second, Scope: ScopePublic}); err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, c)
	if rec["ttlMs"] != float64(5000) || rec["cacheScope"] != "public" || rec["savedAt"] != "2026-01-01T00:00:01.5Z" {
		t.Errorf("record = %v", rec)
	}
	if _, l := c.Get("srv", "h"); !l.Hit || l.TTL != 5*time.Second || !l.SavedAt.Equal(clk.Now()) {
		t.Errorf("Lookup = %+v", l)
	}
	if _, err := c.Put("srv", "h", sampleTools()); err != nil {
		t.Fatal(err)
	}
	rec = readRecord(t, c)
	if _, ok := rec["ttlMs"]; ok {
		t.Errorf("an unhinted record has ttlMs: %v", rec)
	}
	if _, ok := rec["cacheScope"]; ok {
		t.Errorf("an unhinted record has cacheScope: %v", rec)
	}
}

// TestPrivateNeverStored: a list scoped private (or with an unknown scope)
// is never written, and it removes the record a public list left.
func TestPrivateNeverStored(t *testing.T) {
	for _, scope := range []string{ScopePrivate, "per-user"} {
		c, _ := newCache(t)
		inv, err := c.PutHint("srv", "h", sampleTools(), Hint{TTL: time.Hour, Scope: scope})
		if err != nil || inv {
			t.Fatalf("%s on an empty cache: %v, %v", scope, inv, err)
		}
		if _, err := os.Stat(c.Path("srv")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s list stored: %v", scope, err)
		}
		putHint(t, c, "h", Hint{Scope: ScopePublic})
		inv, err = c.PutHint("srv", "h", sampleTools(), Hint{Scope: scope})
		if err != nil || !inv {
			t.Fatalf("%s over a public record: %v, %v", scope, inv, err)
		}
		if _, l := c.Get("srv", "h"); l.Reason != ReasonAbsent {
			t.Fatalf("after a %s list: %+v", scope, l)
		}
	}
}

func readRecord(t *testing.T, c *Cache) map[string]any {
	t.Helper()
	data, err := os.ReadFile(c.Path("srv"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// writeRecord writes a valid record for "srv" with hash "h", overridden by
// fields.
func writeRecord(t *testing.T, c *Cache, fields map[string]any) {
	t.Helper()
	rec := map[string]any{
		"version":    1,
		"server":     "srv",
		"configHash": "h",
		"tools":      sampleTools(),
		"savedAt":    "2026-01-01T00:00:00Z",
	}
	for k, v := range fields {
		rec[k] = v
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	writeRaw(t, c, string(b))
}

func writeRaw(t *testing.T, c *Cache, s string) {
	t.Helper()
	if err := os.MkdirAll(c.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Path("srv"), []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestEmptyListInvalidates(t *testing.T) {
	for _, empty := range [][]*mcp.Tool{nil, {}, {nil, nil}} {
		c, _ := newCache(t)
		// Nothing to invalidate: no record, no directory needed.
		if inv, err := c.Put("srv", "h", empty); inv || err != nil {
			t.Fatalf("Put(empty) on empty cache = %v, %v", inv, err)
		}
		if _, err := os.Stat(c.Path("srv")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("empty list stored: %v", err)
		}
		put(t, c, "h")
		if inv, err := c.Put("srv", "h", empty); !inv || err != nil {
			t.Fatalf("Put(empty) = %v, %v; want invalidated", inv, err)
		}
		if _, l := c.Get("srv", "h"); l.Reason != ReasonAbsent {
			t.Errorf("after invalidation: %+v", l)
		}
	}
}

func TestPutDropsNilTools(t *testing.T) {
	c, _ := newCache(t)
	if _, err := c.Put("srv", "h", []*mcp.Tool{nil, {Name: "a"}, nil}); err != nil {
		t.Fatal(err)
	}
	tools, l := c.Get("srv", "h")
	if !l.Hit || len(tools) != 1 || tools[0].Name != "a" {
		t.Errorf("got %v %+v", tools, l)
	}
}

func TestInvalidate(t *testing.T) {
	c, _ := newCache(t)
	if err := c.Invalidate("srv"); err != nil {
		t.Errorf("Invalidate(absent) = %v", err)
	}
	put(t, c, "h")
	if err := c.Invalidate("srv"); err != nil {
		t.Fatal(err)
	}
	if _, l := c.Get("srv", "h"); l.Reason != ReasonAbsent {
		t.Errorf("after Invalidate: %+v", l)
	}
}

func TestPathSafety(t *testing.T) {
	c := New("/cache", nil)
	names := []string{"github", "GitHub", "git.hub", "git_hub", "", "..", "../../etc/passwd", "a/b", `a\b`, "日本", strings.Repeat("x", 300), "-"}
	seen := map[string]string{}
	for _, n := range names {
		p := c.Path(n)
		if filepath.Dir(p) != "/cache" {
			t.Errorf("Path(%q) = %q escapes the directory", n, p)
		}
		base := filepath.Base(p)
		if strings.HasPrefix(base, ".") || len(base) > 100 || !strings.HasSuffix(base, ".json") {
			t.Errorf("Path(%q) = %q: bad file name", n, p)
		}
		if strings.ContainsAny(base, `/\ `) {
			t.Errorf("Path(%q) = %q has separators", n, p)
		}
		if other, dup := seen[strings.ToLower(base)]; dup {
			t.Errorf("%q and %q share file %q (case-insensitively)", n, other, base)
		}
		seen[strings.ToLower(base)] = n
		if again := c.Path(n); again != p {
			t.Errorf("Path(%q) unstable", n)
		}
	}
	// The readable prefix keeps at most 48 characters of the name.
	if got := filepath.Base(c.Path(strings.Repeat("x", 60))); !strings.HasPrefix(got, strings.Repeat("x", 48)+"-") {
		t.Errorf("long name: file name %q does not keep exactly 48 characters", got)
	}
	if got := filepath.Base(c.Path("github")); !strings.HasPrefix(got, "github-") {
		t.Errorf("file name not readable: %q", got)
	}
}

func TestConcurrentPut(t *testing.T) {
	c, _ := newCache(t)
	const writers = 32
	var wg sync.WaitGroup
	errs := make(chan error, writers*4)
	for i := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 4 {
				tools := []*mcp.Tool{{Name: fmt.Sprintf("w%d_%d", i, j), Description: strings.Repeat("d", 1000*i)}}
				if _, err := c.Put("srv", "h", tools); err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			// Readers never see a partial record: every read is a hit or absent.
			defer wg.Done()
			for range 4 {
				if _, l := c.Get("srv", "h"); !l.Hit && l.Reason != ReasonAbsent {
					errs <- fmt.Errorf("reader saw %q", l.Reason)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	tools, l := c.Get("srv", "h")
	if !l.Hit || len(tools) != 1 || !strings.HasPrefix(tools[0].Name, "w") {
		t.Fatalf("final record: %v %+v", tools, l)
	}
	// No temp files left behind.
	entries, err := os.ReadDir(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(c.Path("srv")) {
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		t.Errorf("directory holds %v", got)
	}
}

func TestPutErrorNamesFile(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := New(filepath.Join(blocker, "cache"), clocktest.New())
	_, err := c.Put("srv", "h", sampleTools())
	if err == nil {
		t.Fatal("Put under a regular file succeeded")
	}
	if !strings.Contains(err.Error(), c.Path("srv")) {
		t.Errorf("error %q does not name the file", err)
	}
	if errors.Unwrap(err) == nil {
		t.Errorf("error %v does not wrap its cause", err)
	}
	// A Get there is an absent or corrupt miss, never a panic.
	if _, l := c.Get("srv", "h"); l.Hit {
		t.Errorf("Get = %+v", l)
	}
}

func TestConfigHash(t *testing.T) {
	a, err := ConfigHash(map[string]any{"command": "npx", "args": []any{"x", 1}, "env": map[string]any{"B": "2", "A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	type cfg struct {
		Args    []any             `json:"args"`
		Env     map[string]string `json:"env"`
		Command string            `json:"command"`
	}
	b, err := ConfigHash(cfg{Command: "npx", Args: []any{"x", 1}, Env: map[string]string{"A": "1", "B": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if a != b || len(a) != 64 {
		t.Errorf("hashes differ or malformed: %s %s", a, b)
	}
	c, _ := ConfigHash(map[string]any{"command": "npx", "args": []any{"x", 2}})
	if c == a {
		t.Errorf("different configs hash equal")
	}
	if _, err := ConfigHash(make(chan int)); err == nil {
		t.Errorf("unmarshalable config hashed")
	}
}

// A name or hash JSON cannot record exactly would be written but never read
// back (found by FuzzPutGet): Put refuses it, and nothing is stored.
func TestPutRefusesInvalidUTF8(t *testing.T) {
	c, _ := newCache(t)
	for _, tc := range []struct{ server, hash string }{{"\xff", "h"}, {"s", "h\xfe"}} {
		if _, err := c.Put(tc.server, tc.hash, sampleTools()); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
			t.Errorf("Put(%q, %q) = %v, want a UTF-8 error", tc.server, tc.hash, err)
		}
		if _, l := c.Get(tc.server, tc.hash); l.Reason != ReasonAbsent {
			t.Errorf("Get(%q, %q) after a refused Put: %+v", tc.server, tc.hash, l)
		}
	}
}

// TestFailedPutLeavesNoTempFile: when the final rename fails (the record's
// path is a non-empty directory), Put reports it and removes its temp file.
func TestFailedPutLeavesNoTempFile(t *testing.T) {
	c, _ := newCache(t)
	p := c.Path("srv")
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put("srv", "h", sampleTools()); err == nil || !strings.Contains(err.Error(), "replace record") {
		t.Fatalf("Put over a directory: err = %v, want a replace error", err)
	}
	entries, err := os.ReadDir(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(p) {
			t.Errorf("failed Put left %q behind", e.Name())
		}
	}
}
