package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/docsection"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/toolcache"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestFallbackFor(t *testing.T) {
	refused := func(supported ...string) error {
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: supported, Requested: ProtocolLegacy})
		return fmt.Errorf("calling %q: %w", "initialize", &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version", Data: data})
	}
	cases := []struct {
		name, version, pin string
		err                error
		next, reasonIs     string
	}{
		{"modern asked", ProtocolModern, "", refused(ProtocolModern), "", ""},
		{"initialize refused", ProtocolLegacy, "", refused(ProtocolModern), ProtocolModern, FallbackInitializeRefused},
		{"initialize refused, pinned legacy", ProtocolLegacy, ProtocolLegacy, refused(ProtocolModern), "", ""},
		{"initialize refused after discover, pinned modern", ProtocolLegacy, ProtocolModern, refused(ProtocolModern), ProtocolModern, FallbackInitializeRefused},
		{"refused naming no modern version", "2025-06-18", "", refused("2025-03-26"), "", ""},
		{"refused naming a version go-sdk lacks", ProtocolLegacy, "", refused("2099-01-01"), "", ""},
		{"method not found", ProtocolLegacy, "", &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}, "", ""},
		{"other failure", ProtocolLegacy, "", errors.New("EOF"), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, reason := fallbackFor(tc.version, tc.pin, tc.err)
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

// renderEras renders the side-by-side table of docs/LIFECYCLE.md,
// "Protocol eras", from the code that decides each row.
func renderEras(t *testing.T) string {
	t.Helper()
	asked := map[bool][]string{}
	for _, tr := range event.TransportValues() {
		v := defaultProtocol(config.Transport(tr), false)
		asked[IsModern(v)] = append(asked[IsModern(v)], tr)
	}
	if v := defaultProtocol(config.Stdio, true); IsModern(v) {
		asked[true] = append(asked[true], "any server of a custom Options.Dial")
	} else {
		asked[false] = append(asked[false], "any server of a custom Options.Dial")
	}
	// The fallback into the modern era, as fallbackFor decides it.
	refused, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: []string{ProtocolModern}, Requested: ProtocolLegacy})
	toModern, whyModern := fallbackFor(ProtocolLegacy, "", &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Data: refused})
	if !IsModern(toModern) {
		t.Fatalf("the fallback goes to %s", toModern)
	}
	probe := func(v string) string { return strings.Join(probeMethods(v), ", then ") }
	var b strings.Builder
	row := func(cells ...string) { fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | ")) }
	row("", "legacy (handshake): "+ProtocolLegacy+" and older", "modern (stateless): "+ProtocolModern)
	row("---", "---", "---")
	row("asked first, when neither the server's `protocolVersion` nor `Options.ProtocolVersion` names a version",
		strings.Join(asked[false], ", "), strings.Join(asked[true], ", "))
	row("first requests of a connection", "`initialize`, `notifications/initialized`",
		"`server/discover` (version, client info and capabilities in its `_meta`, as in every request), on stdio watched every tenth of `ProbeTimeout` while the server has read it and not answered: a request of an unknown method and a ping then tell a handshake-era server that ignores it")
	row("connected means", "the handshake and `tools/list` (all pages) succeeded",
		"`server/discover` named the version and `tools/list` (all pages) succeeded; no session state on either side")
	row("health probe after a tool timeout", probe(ProtocolLegacy)+" (ping-less servers: tools/list)", probe(ProtocolModern))
	row("fallback into this era (`server.protocol_fallback`)",
		fmt.Sprintf("`reason=%s`: a stdio server read `server/discover` and left it unanswered while it answered the ping the runtime sent after it and ignored an unknown method (or answered none of them for `ProbeTimeout`); the runtime answers it method-not-found itself and go-sdk sends `initialize` in the same process (a late reply is dropped; when that handshake fails too, the server is not remembered as handshake-era: a modern server stuck in discover). "+
			"`reason=%s`: an http server answered `server/discover` without the revision (400, 404 or 405, a JSON-RPC error, or versions without %s) and go-sdk sent `initialize` on the same connection; a discover that got no answer about the era (unreachable, 429/5xx after Retry-After, a rejected credential) fails the attempt instead",
			FallbackDiscoverUnanswered, FallbackDiscoverRefused, ProtocolModern),
		fmt.Sprintf("`reason=%s`: `initialize` refused with UnsupportedProtocolVersionError naming %s (not when the config pins the handshake version); a new connection asks it", whyModern, toModern))
	row("HTTP 404",
		fmt.Sprintf("to a request carrying `Mcp-Session-Id`, whatever its body (go-sdk's server sends plain text, the TypeScript SDK's a JSON-RPC error -32001): the session is lost, `%s`, re-initialized at once outside the restart policy; a call the server never saw is sent again on the new session", event.RemoteSessionExpired),
		fmt.Sprintf("with a JSON-RPC error: the request's own answer (an unknown method's -32601), passed on. Without one: no session to lose, `%s`, the request is sent again once at once (`%s` reason=not-found); a second 404 fails that request alone (a call: `mcp_unavailable`); no re-initialization, no restart, and a session id an instance sends is ignored", event.RemoteNotFound, event.RemoteRequestRetried))
	row("response stream ended before its answer",
		fmt.Sprintf("resumed with `GET` and `Last-Event-ID` after the stream's `retry:` (`%s`, `%s`)", event.RemoteStreamDropped, event.RemoteStreamResumed),
		fmt.Sprintf("no resumption: the request, tools/call included, is re-issued once as a new request with a new id (`%s`, `%s`); a second loss fails it, the connection stays", event.RemoteStreamLost, event.RemoteRequestReissued))
	row("tool cache hints (`ttlMs`, `cacheScope` of `tools/list`; see \"The tool cache\")",
		fmt.Sprintf("none (the era defines none): a record lives by the config hash and the cache's TTL (%d days); a live list is listed again on `tools/list_changed` and at each connect", int(toolcache.DefaultTTL.Hours()/24)),
		fmt.Sprintf("recorded with the list, inside the config-hash rule (a changed configuration misses first): a positive `ttlMs` bounds the record (a start past it: `cache.miss reason=%s`, no deferred tools) and the live list (listed again at its first use past it: `cache.miss reason=%s`); `ttlMs` 0 sets no bound; a `%s` list is never stored (`cache.invalidated reason=%s`)",
			toolcache.ReasonTTL, toolcache.ReasonTTL, toolcache.ScopePrivate, reasonPrivateScope))
	row("cache hints of `resources/list` and `prompts/list` (servers with `\"resources\"`, `\"prompts\"`; see \"The tool cache\")",
		"none: the lists are listed at each connect and again on their list_changed",
		fmt.Sprintf("a positive `ttlMs` bounds each live list: listed again at the host's first read past it (`Runtime.Resources`, `Runtime.Prompts`: `cache.miss reason=%s`, then `%s` or `%s`), never on a timer; the lists are never stored, so `cacheScope` changes nothing; listed again after a listen stream is re-opened",
			toolcache.ReasonTTL, event.ResourcesListed, event.PromptsListed))
	return b.String()
}

func TestLifecycleDocEras(t *testing.T) {
	if err := docsection.Check("../../docs/LIFECYCLE.md", "protocol-eras", renderEras(t)); err != nil {
		t.Error(err)
	}
	// Every scenario the section names exists.
	data, err := os.ReadFile("../../docs/LIFECYCLE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(data), "## Protocol eras")
	if !ok {
		t.Fatal(`docs/LIFECYCLE.md has no "## Protocol eras" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	names := regexp.MustCompile(`scenarios/(\d{3}[a-z]?-[a-z0-9-]+)`).FindAllStringSubmatch(sec, -1)
	if len(names) == 0 {
		t.Fatal("the section names no scenario")
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join("../../scenarios", n[1]+".txtar")); err != nil {
			t.Errorf("docs/LIFECYCLE.md, Protocol eras: %v", err)
		}
	}
}
