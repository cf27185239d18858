package host

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestAnswerWithDefaults(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":     map[string]any{"type": "string", "default": "John Doe"},
			"age":      map[string]any{"type": "integer", "default": 30},
			"score":    map[string]any{"type": "number", "default": 95.5},
			"status":   map[string]any{"type": "string", "enum": []string{"active", "inactive"}, "default": "active"},
			"verified": map[string]any{"type": "boolean", "default": true},
			"note":     map[string]any{"type": "string"},
		},
	}
	tests := []struct {
		name       string
		params     *mcp.ElicitParams
		action     string
		content    map[string]any
		reasonPart string
	}{
		{"defaults", &mcp.ElicitParams{Message: "m", RequestedSchema: schema}, "accept",
			map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true}, ""},
		{"raw schema", &mcp.ElicitParams{RequestedSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","default":1}},"required":["n"]}`)}, "accept",
			map[string]any{"n": 1.0}, ""},
		{"required without default", &mcp.ElicitParams{RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"token": map[string]any{"type": "string"}, "b": map[string]any{"type": "string", "default": "x"}},
			"required":   []string{"token", "b"}}}, "decline", nil, "token"},
		{"no schema", &mcp.ElicitParams{Message: "ok?"}, "accept", map[string]any{}, ""},
		{"url mode", &mcp.ElicitParams{Mode: "url", URL: "https://example.com/consent"}, "decline", nil, "url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, reason, err := answerWithDefaults(tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != tt.action || !reflect.DeepEqual(res.Content, tt.content) {
				t.Errorf("got %s %v, want %s %v", res.Action, res.Content, tt.action, tt.content)
			}
			if !strings.Contains(reason, tt.reasonPart) {
				t.Errorf("reason %q does not mention %q", reason, tt.reasonPart)
			}
		})
	}
	if _, _, err := answerWithDefaults(&mcp.ElicitParams{RequestedSchema: json.RawMessage(`[1]`)}); err == nil {
		t.Error("a schema that is not an object was accepted")
	}
}

// elicitingServer serves one tool, "ask", which elicits a name and an age
// (both with defaults) from the client and answers what it got.
func elicitingServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "who?", RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name": map[string]any{"type": "string", "default": "Ada"},
					"age":  map[string]any{"type": "integer", "default": 36},
				},
			}})
			text := ""
			if err != nil {
				text = "elicit failed: " + err.Error()
			} else {
				b, _ := json.Marshal(res.Content)
				text = res.Action + " " + string(b)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	return srv
}

func TestElicitationPerServerConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		opts := Options{Discovery: config.Options{HomeDir: t.TempDir(), Env: func(string) (string, bool) { return "", false },
			Inline: map[string]json.RawMessage{
				"on":  json.RawMessage(`{"command":"mem","elicitation":"defaults"}`),
				"off": json.RawMessage(`{"command":"mem"}`),
			}}}
		var (
			mu       sync.Mutex
			sessions []*mcp.ServerSession
		)
		opts.Dial = func(ctx context.Context, _ *config.Server, _ *config.Resolved) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := elicitingServer().Connect(ctx, st, nil)
			if err != nil {
				return nil, fmt.Errorf("mem server: %w", err)
			}
			mu.Lock()
			sessions = append(sessions, ss)
			mu.Unlock()
			return ct, nil
		}
		rt, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			rt.Close(context.Background())
			mu.Lock()
			defer mu.Unlock()
			for _, ss := range sessions {
				ss.Close()
			}
			checkDocumented(t, rt.Events().Events())
		}()
		sess, err := rt.OpenSession(ctx, SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sess.CallTool(ctx, "mcp_on_ask", map[string]any{})
		if err != nil || !strings.Contains(res.Text, `accept {"age":36,"name":"Ada"}`) {
			t.Fatalf("enabled server: %+v, %v", res, err)
		}
		if _, err := rt.Events().Await(ctx, 0, event.Matcher{Kind: event.ElicitationAnswered, Server: "on",
			Attrs: map[string]string{"action": "accept", "fields": "age,name", "mode": "form"}}); err != nil {
			t.Fatal(err)
		}
		res, err = sess.CallTool(ctx, "mcp_off_ask", map[string]any{})
		if err != nil || !strings.Contains(res.Text, "elicit failed") {
			t.Fatalf("server without elicitation: %+v, %v", res, err)
		}
		if n := rt.Events().Count(event.Matcher{Kind: event.ElicitationAnswered, Server: "off"}); n != 0 {
			t.Fatalf("off server answered %d elicitations", n)
		}
	})
}
