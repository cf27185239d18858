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
// client scenarios call: add_numbers (tools_call),
// test_client_elicitation_defaults, which elicits a form whose properties
// all have defaults and answers with what came back, and json_schema_echo,
// which answers with its arguments.
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
	srv.AddTool(&mcp.Tool{Name: "json_schema_echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"schema":{"type":"object"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
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
			if rep.Scenario != tt.scenario || strings.Join(rep.Tools, ",") != "add_numbers,json_schema_echo,test_client_elicitation_defaults" || !strings.Contains(callResults(rep), tt.want) {
				t.Errorf("report %+v, want a result containing %q", rep, tt.want)
			}
		})
	}
	t.Run("text", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"mcp-client", "-scenario", "tools_call", url}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, &stderr)
		}
		if want := "scenario tools_call: tools [add_numbers, json_schema_echo, test_client_elicitation_defaults]; called add_numbers: "; !strings.HasPrefix(stdout.String(), want) {
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

// callResults joins the results of a report's calls.
func callResults(rep mcpClientReport) string {
	var b strings.Builder
	for _, c := range rep.Calls {
		b.WriteString(c.Result + "\n")
	}
	return b.String()
}

// runJSON runs harness mcp-client -json with args and decodes its report.
func runJSON(t *testing.T, args ...string) (mcpClientReport, int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"mcp-client", "-json"}, args...), &stdout, &stderr)
	var rep mcpClientReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d, report %q: %v (stderr %s)", code, &stdout, err, &stderr)
	}
	return rep, code, stderr.String()
}

// TestMCPClientContextCalls: the calls a scenario's context names are made
// in order with their arguments; a malformed or oversized list is refused.
func TestMCPClientContextCalls(t *testing.T) {
	url := scenarioServer(t)
	t.Setenv(ScenarioEnv, "some-new-scenario")
	t.Setenv(ContextEnv, `{"toolCalls":[{"name":"add_numbers","arguments":{"a":1,"b":2}},{"name":"json_schema_echo","arguments":{"region":"us-west1","n":null}}]}`)
	rep, code, stderr := runJSON(t, url)
	if code != 0 || len(rep.Calls) != 2 || rep.Calls[0].Tool != "add_numbers" || !strings.Contains(rep.Calls[0].Result, "sum 3") ||
		rep.Calls[1].Tool != "json_schema_echo" || !strings.Contains(rep.Calls[1].Result, `"region":"us-west1"`) {
		t.Errorf("exit %d, report %+v, stderr %s", code, rep, stderr)
	}

	for _, bad := range []struct{ ctx, want string }{
		{`{"toolCalls":"add_numbers"}`, "toolCalls is not a list"},
		{`{"toolCalls":[{"arguments":{}}]}`, "toolCalls[0] has no tool name"},
		{`{"toolCalls":[{"name":"add_numbers","arguments":[1]}]}`, "toolCalls[0].arguments is not an object"},
		{`{"toolCalls":[` + strings.Repeat(`{"name":"x"},`, maxContextCalls) + `{"name":"x"}]}`, "more than 16"},
		{`{"pad":"` + strings.Repeat("x", maxContextBytes) + `"}`, "more than"},
	} {
		t.Setenv(ContextEnv, bad.ctx)
		rep, code, stderr := runJSON(t, url)
		if code != 1 || !strings.Contains(rep.Error, bad.want) || len(rep.Calls) != 0 {
			t.Errorf("context %.60s: exit %d, error %q (stderr %.200s), want %q", bad.ctx, code, rep.Error, stderr, bad.want)
		}
	}
}

// TestMCPClientSchemaEcho: json-schema-2020-12-preservation hands back the
// input schema as the runtime exposes it, keywords and all.
func TestMCPClientSchemaEcho(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "schemas", Version: "1"}, nil)
	focal := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"a":{"$anchor":"A","type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}},"additionalProperties":false,"if":{"required":["x"]},"then":{"minProperties":1}}`
	srv.AddTool(&mcp.Tool{Name: "json_schema_2020_12_tool", InputSchema: json.RawMessage(focal)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "json_schema_echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	rep, code, stderr := runJSON(t, "-scenario", "json-schema-2020-12-preservation", ts.URL)
	if code != 0 || len(rep.Calls) != 1 {
		t.Fatalf("exit %d, report %+v, stderr %s", code, rep, stderr)
	}
	var got struct {
		Schema map[string]any `json:"schema"`
	}
	if err := json.Unmarshal([]byte(between(rep.Calls[0].Result, "{", "}")), &got); err != nil {
		t.Fatalf("echo %q: %v", rep.Calls[0].Result, err)
	}
	var want map[string]any
	_ = json.Unmarshal([]byte(focal), &want)
	gb, _ := json.Marshal(got.Schema)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("echoed schema\n%s\nwant\n%s", gb, wb)
	}
}

// between returns s from the first open to the last close, inclusive.
func between(s, open, close string) string {
	i, j := strings.Index(s, open), strings.LastIndex(s, close)
	if i < 0 || j < i {
		return ""
	}
	return s[i : j+1]
}

// TestMCPClientProtocol: the protocol version the runner passes is pinned in
// the server's config (the handshake era's 2025-11-25 works against a
// server of both eras), and a malformed one is refused before connecting.
func TestMCPClientProtocol(t *testing.T) {
	url := scenarioServer(t)
	t.Setenv(protocolVersionEnv, "2025-11-25")
	rep, code, stderr := runJSON(t, "-scenario", "tools_call", url)
	if code != 0 || rep.Protocol != "2025-11-25" || !strings.Contains(callResults(rep), "sum 8") || !strings.Contains(strings.Join(rep.Events, "\n"), "server.connected server=server attempt=0 protocol=2025-11-25") {
		t.Errorf("2025-11-25: exit %d, report %+v, stderr %s", code, rep, stderr)
	}
	rep, code, _ = runJSON(t, "-scenario", "tools_call", "-protocol", "latest\x1b[31m", url)
	if code != 1 || !strings.Contains(rep.Error, "want YYYY-MM-DD") {
		t.Errorf("malformed: exit %d, error %q", code, rep.Error)
	}
}
