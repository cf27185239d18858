package toolcache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/clocktest"
)

// recordSeeds are record file contents, usable and not.
var recordSeeds = []string{
	`{"version":1,"server":"s","configHash":"h","tools":[{"name":"t","inputSchema":{"type":"object"}}],"savedAt":"2026-01-01T00:00:00Z"}`,
	`{"version":2,"server":"s"}`,
	`{"version":"1"}`,
	`{"server":"s"}`,
	`{"version":1,"server":"other","configHash":"h","tools":[],"savedAt":"2026-01-01T00:00:00Z"}`,
	`{"version":1,"server":"s","configHash":"h","tools":[],"savedAt":"2026-01-01T00:00:00Z"}`,
	`{"version":1,"server":"s","configHash":"h","tools":[null],"savedAt":"2026-01-01T00:00:00Z"}`,
	`{"version":1,"server":"s","configHash":"h","tools":[{"name":""}],"savedAt":"2026-01-01T00:00:00Z"}`,
	`{"version":1,"server":"s","configHash":"h","tools":{"name":"t"},"savedAt":"2026-01-01T00:00:00Z"}`,
	`{"version":1,"server":"s","configHash":"h","tools":[{"name":"t"}],"savedAt":"yesterday"}`,
	`{"version":1,"server":"s","configHash":"x","tools":[{"name":"t"}],"savedAt":"2026-01-01T00:00:00Z"}`,
	`{"version":1,"server":"s","configHash":"h","tools":[{"name":"t"}],"savedAt":"1999-01-01T00:00:00Z"}`,
	`{"version":1,"server":"s","configHash":"h","tools":[{"name":"t","inputSchema":{"type":"object","properties":{"a":{"$ref":"#"}}}}],"savedAt":"2026-01-01T00:00:00+05:00"}`,
	`{"version":1,"server":"s","configHash":"h","tools":[{"name":"t"}],"savedAt":"2026-01-01T23:59:59.999Z","ttlMs":1}`,
	`{"version":1,"server":"s","configHash":"h","tools":[{"name":"t"}],"savedAt":"2026-01-01T23:59:00Z","ttlMs":60000,"cacheScope":"public"}`,
	`{"version":1,"server":"s","configHash":"h","tools":[{"name":"t"}],"savedAt":"2026-01-01T00:00:00Z","ttlMs":-5}`,
	`{"version":1,"server":"s","configHash":"h","tools":[{"name":"t"}],"savedAt":"2026-01-01T00:00:00Z","cacheScope":"private"}`,
	`{"version":1,"server":"s","configHash":"h","tools":[{"name":"t"}],"savedAt":"2026-01-01T00:00:00Z","ttlMs":"x"}`,
	`null`,
	`[]`,
	``,
	"\x00\xff",
}

var fuzzNow = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

// FuzzGet reads an arbitrary record file: Get never panics and never
// changes the file; it returns either a miss whose reason is one of the
// documented ones (a corrupt record's naming the file) and no tools, or a hit
// with at least one named tool, SavedAt within the TTL and within the
// server's ttlMs, only when the record's version, server and config hash
// match; a hit's tools survive a Put and Get unchanged.
func FuzzGet(f *testing.F) {
	for _, s := range recordSeeds {
		f.Add([]byte(s), "s", "h")
	}
	f.Add([]byte(`{"version":1,"server":"a/../b","configHash":"","tools":[{"name":"x"}],"savedAt":"2026-01-01T12:00:00Z"}`), "a/../b", "")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, server, hash string) {
		c := New(dir, clocktest.NewAt(fuzzNow))
		p := c.Path(server)
		if filepath.Dir(p) != filepath.Clean(dir) {
			t.Fatalf("record path %q leaves the cache directory", p)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		tools, l := c.Get(server, hash)
		if after, _ := os.ReadFile(p); string(after) != string(data) {
			t.Fatal("Get changed the record")
		}
		if !l.Hit {
			if tools != nil {
				t.Fatalf("miss %q returned tools", l.Reason)
			}
			switch {
			case l.Reason == ReasonVersion, l.Reason == ReasonConfigChanged, l.Reason == ReasonExpired, l.Reason == ReasonTTL:
			case l.Corrupt() && strings.Contains(l.Reason, p):
			default:
				t.Fatalf("miss reason %q", l.Reason)
			}
			return
		}
		var head struct {
			Version    int    `json:"version"`
			Server     string `json:"server"`
			ConfigHash string `json:"configHash"`
		}
		if err := json.Unmarshal(data, &head); err != nil || head.Version != Version || head.Server != server || head.ConfigHash != hash {
			t.Fatalf("hit on a record for %+v (%v)", head, err)
		}
		if l.Reason != "" || len(tools) == 0 || fuzzNow.Sub(l.SavedAt).Abs() > DefaultTTL {
			t.Fatalf("hit %+v with %d tools", l, len(tools))
		}
		if l.TTL < 0 || (l.TTL > 0 && fuzzNow.Sub(l.SavedAt).Abs() >= l.TTL) {
			t.Fatalf("hit %+v past the server's ttlMs", l)
		}
		for _, tl := range tools {
			if tl == nil || tl.Name == "" {
				t.Fatal("hit with an unnamed tool")
			}
		}
		// Round trip: what a hit returns stores and reads back unchanged.
		if _, err := c.Put(server, hash, tools); err != nil {
			t.Fatalf("Put of a hit's tools: %v", err)
		}
		again, l2 := c.Get(server, hash)
		if !l2.Hit || !sameTools(t, again, tools) {
			t.Fatalf("round trip of a hit: %+v", l2)
		}
	})
}

// FuzzPutGet stores arbitrary tools (name, description, input schema) under
// an arbitrary server name and config hash: Put then Get with the same hash
// is a hit returning the same tools (JSON-equal), a different hash is a
// config-changed miss, and the record file stays inside the cache directory.
func FuzzPutGet(f *testing.F) {
	f.Add("github", "abc", "search", "Searches.", []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`))
	f.Add("../../etc/passwd", "", "t", "", []byte(`{}`))
	f.Add("\xff\x00", "h", "\xfe", "\u2028", []byte(`{"type":"object","x":[1,2.5,-0,1e300]}`))
	f.Add("s", "h", "", "no name", []byte(`null`))
	f.Add(strings.Repeat("n", 200), "h", "t", "d", []byte(`{"$defs":{"a":{"$ref":"#/$defs/a"}}}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, server, hash, name, desc string, schema []byte) {
		var s any
		if json.Unmarshal(schema, &s) != nil {
			return
		}
		in := []*mcp.Tool{{Name: name, Description: desc, InputSchema: s}}
		c := New(dir, clocktest.NewAt(fuzzNow))
		p := c.Path(server)
		if filepath.Dir(p) != filepath.Clean(dir) || !strings.HasSuffix(p, ".json") {
			t.Fatalf("record path %q", p)
		}
		defer os.Remove(p)
		if _, err := c.Put(server, hash, in); err != nil {
			if utf8.ValidString(server) && utf8.ValidString(hash) && !strings.Contains(err.Error(), "encode") {
				t.Fatalf("Put: %v", err)
			}
			return // a tool the SDK refuses to encode is never stored
		}
		if !utf8.ValidString(server + hash) {
			t.Fatal("Put stored a name or hash that is not valid UTF-8")
		}
		got, l := c.Get(server, hash)
		if name == "" {
			if l.Hit || !l.Corrupt() {
				t.Fatalf("a nameless tool read back as %+v", l)
			}
			return
		}
		if !l.Hit || !sameTools(t, got, in) {
			t.Fatalf("Put then Get: %+v", l)
		}
		if !l.SavedAt.Equal(fuzzNow) {
			t.Fatalf("SavedAt %v, want %v", l.SavedAt, fuzzNow)
		}
		if _, l := c.Get(server, hash+"x"); l.Hit || l.Reason != ReasonConfigChanged {
			t.Fatalf("other hash: %+v", l)
		}
	})
}

// sameTools compares tool lists by their JSON.
func sameTools(t *testing.T, a, b []*mcp.Tool) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		t.Fatal("tools do not decode")
	}
	return reflect.DeepEqual(va, vb)
}
