package mcpproxy

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
)

// modernReq is a request of the stateless revision: the version in _meta.
func modernReq(id int, method, extra string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, id, method, extra)
}

// The engine marks the opening request of a session in either era (the
// MATCH open) and journals the era and version of every client message.
func TestEngineEras(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []string
		// open: per message, whether it opens a session; eras: the era of
		// each journal entry of a message (server/discover has only its
		// open entry).
		open []bool
		eras []string
	}{
		{"modern with discover", []string{
			modernReq(1, "server/discover", ""),
			modernReq(2, "tools/list", ""),
			modernReq(3, "tools/call", `"name":"echo",`),
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		}, []bool{true, false, false, false}, []string{"modern", "modern", "modern"}},
		{"modern without discover", []string{
			modernReq(1, "tools/list", ""),
			modernReq(2, "tools/list", ""),
		}, []bool{true, false}, []string{"modern", "modern"}},
		{"legacy", []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"c"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}`,
		}, []bool{true, false, false, false}, []string{"legacy", "legacy", "legacy", "legacy"}},
		{"discover refused, then initialize", []string{
			modernReq(1, "server/discover", ""),
			`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		}, []bool{true, true, false}, []string{"legacy", "legacy"}},
		{"a legacy request first is no opening", []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			modernReq(2, "tools/list", ""),
		}, []bool{false, false}, []string{"", "modern"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "px.journal")
			jw, err := journal.NewWriter(path, 1, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			eng := newEngine(jw, slog.New(slog.DiscardHandler))
			defer eng.close()
			r, _ := ParseRule("fail-init")
			eng.setRules([]Rule{r}, false)
			for i, line := range tc.msgs {
				m, ok := parseMessage([]byte(line))
				if !ok {
					t.Fatalf("message %d does not parse", i)
				}
				_, faulted := eng.inbound(&m)
				if m.open != tc.open[i] || faulted != tc.open[i] {
					t.Errorf("message %d (%s): open %v, fail-init applied %v; want %v", i, m.Method, m.open, faulted, tc.open[i])
				}
			}
			es, err := journal.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			var eras []string
			opens := 0
			for _, e := range es {
				if e.Kind == "open" {
					opens++
					continue
				}
				if e.Kind == "fault" {
					continue
				}
				era, _ := e.Fields["era"].(string)
				eras = append(eras, era)
				v, _ := e.Fields["protocolVersion"].(string)
				if v == "2026-07-28" && era != "modern" {
					t.Errorf("%s entry %v: protocolVersion %q with era %q", e.Kind, e.Fields, v, era)
				}
			}
			if strings.Join(eras, ",") != strings.Join(tc.eras, ",") {
				t.Errorf("eras %v, want %v\n%v", eras, tc.eras, es)
			}
			want := 0
			for _, o := range tc.open {
				if o {
					want++
				}
			}
			if opens != want {
				t.Errorf("%d open entries, want %d", opens, want)
			}
		})
	}
}

// A discover's answer: the versions a result or an
// UnsupportedProtocolVersionError names, and the refusal.
func TestDiscoverOutcome(t *testing.T) {
	for _, tc := range []struct{ line, versions, err string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{}}}`, "2026-07-28,2025-11-25", ""},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2025-11-25"],"requested":"2026-07-28"}}}`, "2025-11-25", "-32022 unsupported"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, "", "-32601 Method not found"},
	} {
		m, _ := parseMessage([]byte(tc.line))
		v, e := discoverOutcome(&m)
		if v != tc.versions || e != tc.err {
			t.Errorf("%s: %q %q, want %q %q", tc.line, v, e, tc.versions, tc.err)
		}
	}
	// An HTTP answer: plain JSON or an SSE event.
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"supportedVersions":["2026-07-28"]}}`,
		"event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"supportedVersions\":[\"2026-07-28\"]}}\n\n",
	} {
		c := &captureWriter{status: 200}
		c.buf.WriteString(body)
		m, why := c.answer("7")
		if m == nil || why != "" {
			t.Fatalf("%q: no answer (%s)", body, why)
		}
		if v, _ := discoverOutcome(m); v != "2026-07-28" {
			t.Errorf("%q: versions %q", body, v)
		}
	}
	if _, why := (&captureWriter{status: 405}).answer("7"); why != "HTTP 405" {
		t.Errorf("a 405: %q", why)
	}
}
