package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/runtime/host"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scenarioServer is a streamable-HTTP MCP server with the tools the official
// client scenarios call: add_numbers (tools_call) and
// test_client_elicitation_defaults, which elicits a form whose properties
// all have defaults and answers with what came back.
func scenarioServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "scenarios", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "add_numbers", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("sum %g", in.A+in.B)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "test_client_elicitation_defaults", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "defaults please", RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":     map[string]any{"type": "string", "default": "John Doe"},
					"verified": map[string]any{"type": "boolean", "default": true},
				},
			}})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(res.Content)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + string(b)}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestMCPClientScenarios(t *testing.T) {
	url := scenarioServer(t)
	tests := []struct {
		scenario, want string
	}{
		{"initialize", ""},
		{"tools_call", "sum 8"},
		{"elicitation-sep1034-client-defaults", `accept {"name":"John Doe","verified":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Setenv(ScenarioEnv, tt.scenario)
			var stdout, stderr bytes.Buffer
			if code := run([]string{"mcp-client", "-json", url}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, &stdout, &stderr)
			}
			var rep mcpClientReport
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Scenario != tt.scenario || strings.Join(rep.Tools, ",") != "add_numbers,test_client_elicitation_defaults" || !strings.Contains(rep.Result, tt.want) {
				t.Errorf("report %+v, want a result containing %q", rep, tt.want)
			}
		})
	}
	t.Run("text", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"mcp-client", "-scenario", "tools_call", url}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, &stderr)
		}
		if want := "scenario tools_call: tools [add_numbers, test_client_elicitation_defaults]; called add_numbers: "; !strings.HasPrefix(stdout.String(), want) {
			t.Errorf("stdout %q, want prefix %q", &stdout, want)
		}
	})
}

func TestMCPClientFailures(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"mcp-client"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage: harness mcp-client") {
		t.Errorf("no URL: exit %d, stderr %q", code, &stderr)
	}
	// A scenario whose tool the server does not have fails and says why.
	t.Setenv(ScenarioEnv, "sse-retry")
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"mcp-client", scenarioServer(t)}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), `no tool "test_reconnection"`) {
		t.Errorf("missing tool: exit %d, stderr %q", code, &stderr)
	}
	// Nothing listening: a connect error naming the URL.
	stderr.Reset()
	if code := run([]string{"mcp-client", "-scenario", "initialize", "-timeout", "20s", "http://127.0.0.1:1/mcp"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "connect http://127.0.0.1:1/mcp") {
		t.Errorf("refused: exit %d, stderr %q", code, &stderr)
	}
}

// TestMCPClientAuthConfig: the auth/* scenarios get an OAuth grant (client
// credentials for auth/client-credentials-*, the authorization-code flow
// otherwise), the context's client id, and the secret only by name.
func TestMCPClientAuthConfig(t *testing.T) {
	if a := authBlock("tools_call", nil); a != nil {
		t.Errorf("non-auth scenario got %v", a)
	}
	a := authBlock("auth/metadata-default", nil)
	if a["grant"] != "authorization_code" || a["clientMetadataUrl"] != conformanceCIMD || a["clientId"] != nil {
		t.Errorf("metadata-default: %v", a)
	}
	ctx := map[string]any{"client_id": "pre", "client_secret": "very-secret"}
	a = authBlock("auth/pre-registration", ctx)
	if a["grant"] != "authorization_code" || a["clientId"] != "pre" || a["clientSecret"] != "${"+secretVar+"}" {
		t.Errorf("pre-registration: %v", a)
	}
	a = authBlock("auth/client-credentials-basic", ctx)
	if a["grant"] != "client_credentials" || a["clientId"] != "pre" || a["redirectUri"] != nil {
		t.Errorf("client-credentials-basic: %v", a)
	}
	b, _ := json.Marshal(a)
	if strings.Contains(string(b), "very-secret") {
		t.Errorf("the secret is written into the config: %s", b)
	}
}

// TestHeadlessAuthorize: the callback reads code, state and iss from the
// authorization endpoint's redirect without following it.
func TestHeadlessAuthorize(t *testing.T) {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("deny") != "" {
			http.Redirect(w, r, "http://localhost:3000/callback?error=access_denied", http.StatusFound)
			return
		}
		http.Redirect(w, r, "http://localhost:3000/callback?code=c1&state="+r.URL.Query().Get("state")+"&iss=https%3A%2F%2Fas", http.StatusFound)
	}))
	defer as.Close()
	res, err := headlessAuthorize(t.Context(), host.AuthorizeRequest{URL: as.URL + "/authorize?state=s1"})
	if err != nil || res != (host.AuthorizeResult{Code: "c1", State: "s1", Iss: "https://as"}) {
		t.Fatalf("got %+v, %v", res, err)
	}
	if _, err := headlessAuthorize(t.Context(), host.AuthorizeRequest{URL: as.URL + "/authorize?deny=1"}); err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("denied: %v", err)
	}
}
