package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestFallbackFor(t *testing.T) {
	refused := func(supported ...string) error {
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: supported, Requested: ProtocolLegacy})
		return fmt.Errorf("calling %q: %w", "initialize", &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version", Data: data})
	}
	cases := []struct {
		name           string
		version        string
		pinned         bool
		expired        bool
		err            error
		next, reasonIs string
	}{
		{"discover unanswered", ProtocolModern, false, true, errors.New("context canceled"), ProtocolLegacy, FallbackDiscoverUnanswered},
		{"discover unanswered, pinned", ProtocolModern, true, true, errors.New("context canceled"), ProtocolLegacy, FallbackDiscoverUnanswered},
		{"modern, other failure", ProtocolModern, false, false, errors.New("EOF"), "", ""},
		{"initialize refused", ProtocolLegacy, false, false, refused(ProtocolModern), ProtocolModern, FallbackInitializeRefused},
		{"initialize refused, pinned", ProtocolLegacy, true, false, refused(ProtocolModern), "", ""},
		{"refused naming no modern version", "2025-06-18", false, false, refused("2025-03-26"), "", ""},
		{"refused naming a version go-sdk lacks", ProtocolLegacy, false, false, refused("2099-01-01"), "", ""},
		{"method not found", ProtocolLegacy, false, false, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, reason := fallbackFor(tc.version, tc.pinned, tc.expired, tc.err)
			if next != tc.next || reason != tc.reasonIs {
				t.Errorf("fallbackFor = %q, %q; want %q, %q", next, reason, tc.next, tc.reasonIs)
			}
		})
	}
}

// TestFixtureEraFallbackInitializeRefused: a host that asks for the
// handshake first (Options.ProtocolVersion) still connects a modern-only
// server: initialize is refused naming 2026-07-28, the try's process is
// stopped, and a second process connects without a handshake. A restart
// asks 2026-07-28 at once.
func TestFixtureEraFallbackInitializeRefused(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{"MCP_FIXTURE_ERA": "modern"}, "")}
	}, Options{ProtocolVersion: ProtocolLegacy})
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "hello"})
	if err != nil || !strings.Contains(res.Text, "hello") {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	e.await(m(event.ServerProtocolFallback, "fx", "protocol", ProtocolModern, "reason", FallbackInitializeRefused))
	e.await(m(event.ServerConnected, "fx", "protocol", ProtocolModern))
	if n := e.count("fx", "launch"); n != 2 {
		t.Fatalf("launches = %d, want 2", n)
	}
	if st := e.rt.Status(); len(st) != 1 || st[0].Protocol != ProtocolModern {
		t.Fatalf("status = %+v, want protocol %s", st, ProtocolModern)
	}
}

// TestFixtureEraPinnedLegacyFails: a config that pins the handshake
// version is never upgraded; a modern-only server fails with its refusal.
func TestFixtureEraPinnedLegacyFails(t *testing.T) {
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": e.fixtureServer("fx", map[string]string{"MCP_FIXTURE_ERA": "modern"}, `"protocolVersion": "2025-11-25", "restart": "never"`)}
	}, Options{})
	_, _ = e.rt.OpenSession(t.Context(), SessionOptions{})
	e.await(m(event.ServerFailed, "fx"))
	if n := e.rt.Events().Count(m(event.ServerProtocolFallback, "fx")); n != 0 {
		t.Fatalf("a pinned version fell back")
	}
	if st := e.rt.Status(); len(st) != 1 || !strings.Contains(st[0].Error, "unsupported protocol version") {
		t.Fatalf("status = %+v", st)
	}
}
