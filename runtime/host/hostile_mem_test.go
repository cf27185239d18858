package host

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
)

// hostileCase is one garbage knob setting and how to drive it to the point
// where the runtime has seen everything the server sends.
type hostileCase struct {
	name  string
	knobs map[string]string
	// restartNever keeps a failing server from being relaunched meanwhile.
	restartNever bool
	// drive triggers the behaviour and awaits the runtime's evidence.
	drive func(ctx context.Context, rt *Runtime, sess *Session) error
}

func awaitKind(kind event.Kind, attrs map[string]string) func(context.Context, *Runtime, *Session) error {
	return func(ctx context.Context, rt *Runtime, _ *Session) error {
		_, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: kind, Server: "bad", Attrs: attrs})
		return err
	}
}

func callThen(tool string, then func(context.Context, *Runtime, *Session) error) func(context.Context, *Runtime, *Session) error {
	return func(ctx context.Context, rt *Runtime, sess *Session) error {
		sess.CallTool(ctx, tool, map[string]any{}) // some calls fail on purpose
		if then == nil {
			return nil
		}
		return then(ctx, rt, sess)
	}
}

func hostileCases() []hostileCase {
	return []hostileCase{
		{name: "plain", knobs: nil, drive: callThen("mcp_bad_echo", nil)},
		{name: "banner", knobs: map[string]string{"MCP_FIXTURE_CORRUPT_AT": "start", "MCP_FIXTURE_CORRUPT_KIND": "banner"},
			drive: awaitKind(event.TransportNoise, map[string]string{"lines": "2"})},
		{name: "garbage-line", knobs: map[string]string{"MCP_FIXTURE_CORRUPT_KIND": "garbage"},
			drive: callThen("mcp_bad_corrupt", awaitKind(event.TransportNoise, nil))},
		{name: "invalid-utf8", knobs: map[string]string{"MCP_FIXTURE_CORRUPT_KIND": "invalid-utf8"},
			drive: callThen("mcp_bad_corrupt", awaitKind(event.TransportNoise, nil))},
		{name: "line-64MiB", restartNever: true,
			knobs: map[string]string{"MCP_FIXTURE_CORRUPT_AT": "initialized", "MCP_FIXTURE_CORRUPT_KIND": "oversized", "MCP_FIXTURE_CORRUPT_BYTES": "67108864"},
			drive: awaitKind(event.ProcessExited, nil)},
		{name: "reply-15MiB", knobs: map[string]string{"MCP_FIXTURE_BIG_BYTES": "15728640"},
			drive: callThen("mcp_bad_big", nil)},
		{name: "unknown-ids", knobs: map[string]string{"MCP_FIXTURE_CORRUPT_AT": "initialized", "MCP_FIXTURE_CORRUPT_KIND": "unknown-id"},
			drive: awaitKind(event.TransportStrayReply, map[string]string{"reason": "unknown", "replies": "2"})},
		{name: "duplicate-id", knobs: map[string]string{"MCP_FIXTURE_CORRUPT_KIND": "duplicate-id"},
			drive: callThen("mcp_bad_corrupt", awaitKind(event.TransportStrayReply, map[string]string{"reason": "duplicate"}))},
		{name: "list-changed-100k", knobs: map[string]string{"MCP_FIXTURE_CORRUPT_KIND": "list-changed-flood", "MCP_FIXTURE_FLOOD_COUNT": "100000"},
			drive: callThen("mcp_bad_corrupt", awaitKind(event.ToolsChangeFlood, map[string]string{"notifications": "100000"}))},
		{name: "stdout-closed", restartNever: true, knobs: map[string]string{"MCP_FIXTURE_CORRUPT_KIND": "close-stdout"},
			drive: callThen("mcp_bad_corrupt", awaitKind(event.ProcessExited, nil))},
		{name: "stderr-100MB", knobs: map[string]string{"MCP_FIXTURE_STDERR_BYTES": "104857600"},
			drive: callThen("mcp_bad_echo", nil)},
		{name: "tools-10000", knobs: map[string]string{"MCP_FIXTURE_EXTRA_TOOLS": "10000"},
			drive: awaitKind(event.ToolsLimited, nil)},
		{name: "tool-name-10000", knobs: map[string]string{"MCP_FIXTURE_LONG_TOOL_NAME": "10000"},
			drive: awaitKind(event.ToolsLimited, nil)},
		{name: "schema-depth-100", knobs: map[string]string{"MCP_FIXTURE_SCHEMA_DEPTH": "100"},
			drive: awaitKind(event.ToolsLimited, nil)},
		{name: "schema-depth-1000", restartNever: true, knobs: map[string]string{"MCP_FIXTURE_SCHEMA_DEPTH": "1000"},
			drive: awaitKind(event.ServerFailed, nil)},
	}
}

// BenchmarkHostileServer measures the heap the runtime holds for one stdio
// server under each garbage knob, after the runtime has seen everything it
// sent (heap-bytes, after two GCs, relative to before the runtime was
// made; compare with the plain case for the extra cost of being hostile),
// plus the allocations of the whole run (-benchmem B/op: transient garbage,
// e.g. go-sdk's decoding). The issue-15 goal is under 1 MB extra per
// hostile server whatever it sends. The list_changed debounce is an hour
// long here, so the 100,000 notifications all land in one window.
//
//	go test ./runtime/host -run '^$' -bench BenchmarkHostileServer -benchmem -benchtime 1x -count 5
//
// Measured on 2 cores (medians of 5 runs; retained heap; B/op is
// transient; the table with spreads is in docs/LIFECYCLE.md, "Limits"):
// plain 75 KiB; every garbage knob within 10 KiB of plain except 10,000
// tools (+436 KiB, the 256 kept, MaxTools); the 64 MiB line, closed stdout
// and the 1,000-deep schema leave a failed server (12-54 KiB); 100,000
// list_changed allocate 20 MB in 0.3 s (the stdout filter absorbs them into
// the open debounce window; through go-sdk, which allocates ~100 KB to
// decode each message, it was 9.3 GiB and 8-70 s); a 15 MiB reply leaves
// nothing retained (32 MiB through go-sdk's IOTransport).
func BenchmarkHostileServer(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range hostileCases() {
		b.Run(tc.name, func(b *testing.B) {
			env := map[string]string{asFixtureEnv: "1", "GORACE": "atexit_sleep_ms=0"}
			for k, v := range tc.knobs {
				env[k] = v
			}
			cfg := map[string]any{"command": exe, "env": env}
			if tc.restartNever {
				cfg["restart"] = "never"
			}
			raw, _ := json.Marshal(cfg)
			servers := map[string]json.RawMessage{"bad": raw}
			b.ReportAllocs()
			for b.Loop() {
				runtime.GC()
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				rt, err := New(Options{
					ListChangedDebounce: time.Hour,
					Discovery:           config.Options{Inline: servers, HomeDir: b.TempDir(), Env: func(string) (string, bool) { return "", false }},
				})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				sess, err := rt.OpenSession(ctx, SessionOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if err := tc.drive(ctx, rt, sess); err != nil {
					b.Fatalf("%s: %v\n%s", tc.name, err, lastEvents(rt, 20))
				}
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)), "heap-bytes")
				rt.Close(ctx)
				cancel()
			}
		})
	}
}

func lastEvents(rt *Runtime, n int) string {
	evs := rt.Events().Events()
	if len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}
