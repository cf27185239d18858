package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// findSchema is a tool schema whose decoded form (nested maps) is several
// times the size of its JSON, with characters encoding/json escapes by
// default.
const findSchema = `{"type":"object","properties":{"q":{"type":"string","description":"a <b> & c"},"n":{"type":["null","integer"]}},"required":["q"]}`

// findSchemaCompact is findSchema as the runtime holds it: compact, keys
// sorted, nothing escaped.
const findSchemaCompact = `{"properties":{"n":{"type":["null","integer"]},"q":{"description":"a <b> & c","type":"string"}},"required":["q"],"type":"object"}`

func findTool(srv *mcp.Server) {
	srv.AddTool(&mcp.Tool{Name: "find", InputSchema: json.RawMessage(findSchema)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found " + string(req.Params.Arguments)}}}, nil
	})
}

// schemaOf returns the input schema of the session tool named name.
func schemaOf(t *testing.T, sess *Session, name string) any {
	t.Helper()
	for _, tl := range sess.Tools() {
		if tl.Name == name {
			return tl.InputSchema
		}
	}
	t.Fatalf("no tool %s in %v", name, sess.Tools())
	return nil
}

// TestToolSchemasHeldAsJSON: listed tools keep their input schemas as
// compact JSON, not as go-sdk's decoded maps, in a session listed live and
// in one served from the tool cache; calls still reach the server.
func TestToolSchemasHeldAsJSON(t *testing.T) {
	cache := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"srch": ""}, Options{CacheDir: cache})
		env.servers["srch"].tools = findTool
		sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw, ok := schemaOf(t, sess, "mcp_srch_find").(json.RawMessage)
		if !ok || string(raw) != findSchemaCompact {
			t.Fatalf("listed schema = %#v, want json.RawMessage %s", schemaOf(t, sess, "mcp_srch_find"), findSchemaCompact)
		}
		res, err := sess.CallTool(t.Context(), "mcp_srch_find", map[string]any{"q": "x"})
		if err != nil || !strings.Contains(res.Text, `found {"q":"x"}`) {
			t.Fatalf("call = %+v, %v", res, err)
		}
		env.await(t, event.Matcher{Kind: event.CacheWritten, Server: "srch"})
		env.rt.Close(t.Context())

		cached := newMemRuntime(t, map[string]string{"srch": ""}, Options{CacheDir: cache})
		cached.servers["srch"].tools = findTool
		cached.servers["srch"].initWait = make(chan struct{}) // the tools come from the cache
		sess, err = cached.rt.OpenSession(t.Context(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw, ok = schemaOf(t, sess, "mcp_srch_find").(json.RawMessage)
		if !ok || string(raw) != findSchemaCompact {
			t.Fatalf("cached schema = %#v, want json.RawMessage %s", schemaOf(t, sess, "mcp_srch_find"), findSchemaCompact)
		}
		close(cached.servers["srch"].initWait)
	})
}
