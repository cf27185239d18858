package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// ScenarioEnv names the environment variable in which the official MCP
// conformance runner (@modelcontextprotocol/conformance) passes the client
// scenario to run.
const ScenarioEnv = "MCP_CONFORMANCE_SCENARIO"

// ContextEnv names the environment variable in which the official runner
// passes a scenario's JSON context (client credentials for the auth
// scenarios that need a pre-registered client).
const ContextEnv = "MCP_CONFORMANCE_CONTEXT"

// secretVar is the environment name under which mcp-client hands the
// context's client secret to the runtime (auth.clientSecret names it).
const secretVar = "MCP_CONFORMANCE_CLIENT_SECRET"

// conformanceCIMD is the client id metadata document URL the official
// suite's auth scenarios expect.
const conformanceCIMD = "https://conformance-test.local/client-metadata.json"

// conformanceRedirect is the redirect URI mcp-client registers; the
// headless authorize callback never listens on it, it reads the redirect.
const conformanceRedirect = "http://localhost:3000/callback"

// authBlock returns the "auth" config of an auth/* scenario: the grant the
// scenario's server expects (client_credentials for the
// auth/client-credentials-* ones, the authorization-code flow otherwise),
// the pre-registered client of the scenario's context if any, a client id
// metadata document and dynamic registration as the other ways to register.
// The secret stays out of the config: auth.clientSecret names secretVar.
func authBlock(scenario string, ctxVals map[string]any) map[string]any {
	if !strings.HasPrefix(scenario, "auth/") {
		return nil
	}
	a := map[string]any{"type": "oauth", "grant": config.GrantAuthorizationCode}
	if strings.HasPrefix(scenario, "auth/client-credentials") {
		a["grant"] = config.GrantClientCredentials
	} else {
		a["clientMetadataUrl"] = conformanceCIMD
		a["redirectUri"] = conformanceRedirect
		a["offlineAccess"] = true
	}
	if id, ok := ctxVals["client_id"].(string); ok && id != "" {
		a["clientId"] = id
		if sec, ok := ctxVals["client_secret"].(string); ok && sec != "" {
			a["clientSecret"] = "${" + secretVar + "}"
		}
	}
	return a
}

// headlessAuthorize is the authorize callback of a host without a UI that
// talks to an authorization server which redirects at once (the official
// suite's mock): it fetches the authorization URL and reads code, state and
// iss from the redirect instead of following it.
func headlessAuthorize(ctx context.Context, req host.AuthorizeRequest) (host.AuthorizeResult, error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return host.AuthorizeResult{}, err
	}
	resp, err := client.Do(r)
	if err != nil {
		return host.AuthorizeResult{}, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	loc := resp.Header.Get("Location")
	if loc == "" {
		return host.AuthorizeResult{}, fmt.Errorf("the authorization endpoint answered HTTP %d without a redirect", resp.StatusCode)
	}
	u, err := url.Parse(loc)
	if err != nil {
		return host.AuthorizeResult{}, fmt.Errorf("redirect: %w", err)
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		return host.AuthorizeResult{}, fmt.Errorf("the authorization server refused: %s", e)
	}
	return host.AuthorizeResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// clientScenario is what the client does in one official client scenario
// once the server is connected and its tools are listed: the tool to call
// ("" calls nothing) and its arguments.
type clientScenario struct {
	tool string
	args map[string]any
}

// scenarioPlan says what the client does in the official client scenarios
// of @modelcontextprotocol/conformance 0.1.16 that need more than connecting
// and listing tools; known is false for any other scenario (auth/*), which
// connects, lists the tools and calls the first one with no arguments.
func scenarioPlan(name string) (_ clientScenario, known bool) {
	switch name {
	case "initialize":
		return clientScenario{}, true
	case "tools_call":
		return clientScenario{tool: "add_numbers", args: map[string]any{"a": 5, "b": 3}}, true
	case "elicitation-sep1034-client-defaults":
		return clientScenario{tool: "test_client_elicitation_defaults", args: map[string]any{}}, true
	case "sse-retry":
		return clientScenario{tool: "test_reconnection", args: map[string]any{}}, true
	}
	return clientScenario{}, false
}

// mcpClientReport is the -json output of harness mcp-client.
type mcpClientReport struct {
	Scenario string   `json:"scenario"`
	URL      string   `json:"url"`
	Tools    []string `json:"tools"`
	Called   string   `json:"called,omitempty"`
	Result   string   `json:"result,omitempty"`
	IsError  bool     `json:"isError,omitempty"`
	Error    string   `json:"error,omitempty"`
	Events   []string `json:"events"`
}

const mcpClientUsage = `usage: harness mcp-client [-scenario NAME] [-timeout D] [-json] [-v] URL

Connects to the streamable-HTTP MCP server at URL through the reference runtime and
does what the official conformance client scenario expects (the runner passes the
URL as the last argument and the scenario in $` + ScenarioEnv + `).

`

// runMCPClient is "harness mcp-client URL": a client on top of the reference
// runtime for the official MCP conformance suite's client mode. It
// configures one streamable-HTTP server (elicitation answered with the
// schema's defaults, as a host without a UI does), opens a session, does
// what the scenario named by MCP_CONFORMANCE_SCENARIO (or -scenario)
// expects, closes everything and exits: 0 when every step succeeded.
func runMCPClient(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mcp-client", mcpClientUsage, stdout, stderr)
	scenario := fs.String("scenario", os.Getenv(ScenarioEnv), "official client scenario (default $"+ScenarioEnv+")")
	timeout := fs.Duration("timeout", 30*time.Second, "bound on the whole run")
	jsonOut := fs.Bool("json", false, "print a JSON report instead of text")
	verbose := fs.Bool("v", false, "log the runtime's debug output to stderr")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() < 1 {
		return fs.badUsage()
	}
	url := fs.Arg(fs.NArg() - 1)

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := mcpClientRun(ctx, *scenario, url, *verbose, stderr)
	if err != nil {
		rep.Error = err.Error()
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		// The tool names, the result and errors come from the server.
		fmt.Fprintf(stdout, "scenario %s: tools [%s]", textsafe.Line(orNone(rep.Scenario)), textsafe.Line(strings.Join(rep.Tools, ", ")))
		if rep.Called != "" {
			fmt.Fprintf(stdout, "; called %s: %s", textsafe.Line(rep.Called), clipLine(textsafe.Line(rep.Result), 120))
		}
		fmt.Fprintln(stdout)
		if err != nil {
			fmt.Fprintf(stderr, "harness mcp-client: %s\n", textsafe.Line(err.Error()))
		}
	}
	if err != nil || rep.IsError {
		return 1
	}
	return 0
}

func mcpClientRun(ctx context.Context, scenario, url string, verbose bool, stderr io.Writer) (*mcpClientReport, error) {
	rep := &mcpClientReport{Scenario: scenario, URL: url, Tools: []string{}, Events: []string{}}
	var ctxVals map[string]any
	if raw := os.Getenv(ContextEnv); raw != "" {
		if err := json.Unmarshal([]byte(raw), &ctxVals); err != nil {
			return rep, fmt.Errorf("$%s: %w", ContextEnv, err)
		}
	}
	cfg := map[string]any{
		"type": "http", "url": url,
		"elicitation": string(config.ElicitationDefaults),
		"restart":     string(config.RestartNever),
	}
	if a := authBlock(scenario, ctxVals); a != nil {
		cfg["auth"] = a
	}
	entry, err := json.Marshal(cfg)
	if err != nil {
		return rep, err
	}
	env := func(k string) (string, bool) {
		if k == secretVar {
			sec, ok := ctxVals["client_secret"].(string)
			return sec, ok
		}
		return os.LookupEnv(k)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	home, err := os.MkdirTemp("", "mcp-client-home-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(home)
	const name = "server"
	rt, err := host.New(host.Options{
		Logger: logger,
		// Only the inline server: an empty home keeps the user's files out.
		Discovery:   config.Options{HomeDir: home, Inline: map[string]json.RawMessage{name: entry}, Env: env},
		Authorize:   headlessAuthorize,
		StartupGate: 24 * time.Hour, // the context bounds the start instead
	})
	if err != nil {
		return rep, fmt.Errorf("runtime: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Close(cctx)
		for _, e := range rt.Events().Events() {
			if e.Kind == event.ElicitationAnswered || strings.HasPrefix(string(e.Kind), "server.") || strings.HasPrefix(string(e.Kind), "remote.") {
				rep.Events = append(rep.Events, e.String())
			}
		}
	}()
	sess, err := rt.OpenSession(ctx, host.SessionOptions{Name: "conformance"})
	if err != nil {
		return rep, fmt.Errorf("open session: %w", err)
	}
	defer sess.Close(context.WithoutCancel(ctx))
	if r := sess.StartReport(); len(r.Ready) != 1 {
		if e := r.Errors[name]; e != nil {
			return rep, fmt.Errorf("connect %s: %w", url, e)
		}
		for _, e := range rt.Events().Events() {
			if e.Kind == event.ConfigError {
				return rep, fmt.Errorf("connect %s: the generated config was refused: %s", url, e.String())
			}
		}
		return rep, fmt.Errorf("connect %s: server not ready at session start (%+v)", url, r)
	}
	tools := sess.Tools()
	for _, t := range tools {
		rep.Tools = append(rep.Tools, t.MCPName)
	}
	sc, known := scenarioPlan(scenario)
	if !known && len(tools) > 0 {
		sc = clientScenario{tool: tools[0].MCPName, args: map[string]any{}}
	}
	if sc.tool == "" {
		return rep, nil
	}
	exposed := ""
	for _, t := range tools {
		if t.MCPName == sc.tool {
			exposed = t.Name
		}
	}
	if exposed == "" {
		return rep, fmt.Errorf("scenario %s: the server lists no tool %q (tools: %s)", scenario, sc.tool, strings.Join(rep.Tools, ", "))
	}
	rep.Called = sc.tool
	res, err := sess.CallTool(ctx, exposed, sc.args)
	rep.Result, rep.IsError = res.Text, res.IsError
	if err != nil {
		return rep, fmt.Errorf("tools/call %s: %w", sc.tool, err)
	}
	if res.IsError {
		return rep, errors.New("tools/call " + sc.tool + " returned an error result")
	}
	return rep, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// clipLine flattens s to one line of at most n runes.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
