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
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/runtime/bridge"
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

// toolCall is one tools/call of a client scenario: the tool's raw MCP name
// and its arguments. When schemaOf is set, the arguments are
// {"schema": S} where S is the input schema the runtime exposes for the
// tool named schemaOf (what an agent would see of it).
type toolCall struct {
	tool     string
	args     map[string]any
	schemaOf string
}

// clientScenario is what the client does in one official client scenario
// once the server is connected and its tools are listed: steps in order,
// the calls of one step at the same time; with no steps it only lists.
type clientScenario struct {
	steps [][]toolCall
}

// one is a scenario of a single call.
func one(tool string, args map[string]any) clientScenario {
	return clientScenario{steps: [][]toolCall{{{tool: tool, args: args}}}}
}

// scenarioPlan says what the client does in the official client scenarios
// (@modelcontextprotocol/conformance 0.1.16 and 0.2.0-alpha.12) that need
// more than connecting, listing the tools and calling the first one; known
// is false for any other scenario (auth/*, http-standard-headers,
// http-invalid-tool-headers, request-metadata), which connects, lists the
// tools and calls the first one with no arguments, unless the scenario's
// context names the calls (contextCalls).
func scenarioPlan(name string) (_ clientScenario, known bool) {
	noArgs := func() map[string]any { return map[string]any{} } // one map per call
	switch name {
	case "initialize":
		return clientScenario{}, true
	case "json-schema-ref-no-deref":
		// Its mock serves tools/list only: list, do not call.
		return clientScenario{}, true
	case "tools_call":
		return one("add_numbers", map[string]any{"a": 5, "b": 3}), true
	case "elicitation-sep1034-client-defaults":
		return one("test_client_elicitation_defaults", noArgs()), true
	case "sse-retry":
		return one("test_reconnection", noArgs()), true
	case "json-schema-2020-12-preservation":
		// Hand the listed schema back as the runtime exposes it.
		return clientScenario{steps: [][]toolCall{{{tool: "json_schema_echo", schemaOf: "json_schema_2020_12_tool"}}}}, true
	case "sep-2322-client-request-state":
		// Multi round-trip tool calls (SEP-2322): one answered with
		// input_required and a requestState while an unrelated call is in
		// flight, one without requestState, one whose result has no
		// resultType. The runtime's go-sdk session does the retries.
		return clientScenario{steps: [][]toolCall{
			{{tool: "test_mrtr_echo_state", args: noArgs()}, {tool: "test_mrtr_unrelated", args: noArgs()}},
			{{tool: "test_mrtr_no_state", args: noArgs()}},
			{{tool: "test_mrtr_no_result_type", args: noArgs()}},
		}}, true
	}
	return clientScenario{}, false
}

// Bounds on the scenario context the runner passes in $MCP_CONFORMANCE_CONTEXT.
const (
	maxContextBytes = 1 << 20
	maxContextCalls = 16
	maxToolName     = 256
)

// contextCalls reads the "toolCalls" of a scenario's context, the calls
// the runner asks the client to make in order (0.2.0-alpha.12's
// http-custom-headers passes the arguments whose header encoding it
// checks): a list of {"name": string, "arguments": object}. ok is false
// when the context has no toolCalls.
func contextCalls(ctxVals map[string]any) (_ clientScenario, ok bool, _ error) {
	raw, ok := ctxVals["toolCalls"]
	if !ok {
		return clientScenario{}, false, nil
	}
	list, isList := raw.([]any)
	if !isList {
		return clientScenario{}, true, fmt.Errorf("$%s: toolCalls is not a list", ContextEnv)
	}
	if len(list) > maxContextCalls {
		return clientScenario{}, true, fmt.Errorf("$%s: %d toolCalls, more than %d", ContextEnv, len(list), maxContextCalls)
	}
	var sc clientScenario
	for i, item := range list {
		c, isObj := item.(map[string]any)
		name, _ := c["name"].(string)
		if !isObj || name == "" || len(name) > maxToolName {
			return clientScenario{}, true, fmt.Errorf("$%s: toolCalls[%d] has no tool name of 1-%d bytes", ContextEnv, i, maxToolName)
		}
		args := map[string]any{}
		if a, present := c["arguments"]; present && a != nil {
			if args, isObj = a.(map[string]any); !isObj {
				return clientScenario{}, true, fmt.Errorf("$%s: toolCalls[%d].arguments is not an object", ContextEnv, i)
			}
		}
		sc.steps = append(sc.steps, []toolCall{{tool: name, args: args}})
	}
	return sc, true, nil
}

// protocolVersionEnv names the environment variable in which the official
// runner (0.2.0 and later) passes the protocol version the client must
// speak when it runs with --spec-version: the lifecycle follows from it
// (the initialize handshake through 2025-11-25, stateless from 2026-07-28).
const protocolVersionEnv = "MCP_CONFORMANCE_PROTOCOL_VERSION"

var protocolVersionRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// mcpClientReport is the -json output of harness mcp-client.
type mcpClientReport struct {
	Scenario string       `json:"scenario"`
	URL      string       `json:"url"`
	Protocol string       `json:"protocolVersion,omitempty"`
	Tools    []string     `json:"tools"`
	Calls    []callReport `json:"calls,omitempty"`
	Error    string       `json:"error,omitempty"`
	Events   []string     `json:"events"`
}

// callReport is one tools/call of the run and what came back.
type callReport struct {
	Tool    string `json:"tool"`
	Result  string `json:"result"`
	IsError bool   `json:"isError,omitempty"`
}

const mcpClientUsage = `usage: harness mcp-client [-scenario NAME] [-protocol VERSION] [-timeout D] [-json] [-v] URL

Connects to the streamable-HTTP MCP server at URL through the reference runtime and
does what the official conformance client scenario expects (the runner passes the
URL as the last argument, the scenario in $` + ScenarioEnv + `, its context in
$` + ContextEnv + ` and, with --spec-version, the protocol version in
$` + protocolVersionEnv + `).

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
	protocol := fs.String("protocol", os.Getenv(protocolVersionEnv), "MCP protocol version to pin in the server's config, \"\" for the runtime's default (default $"+protocolVersionEnv+")")
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
	rep, err := mcpClientRun(ctx, *scenario, *protocol, url, *verbose, stderr)
	if err != nil {
		rep.Error = err.Error()
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		// The tool names, the result and errors come from the server.
		fmt.Fprintf(stdout, "scenario %s", textsafe.Line(orNone(rep.Scenario)))
		if rep.Protocol != "" {
			fmt.Fprintf(stdout, " (protocol %s)", clipLine(textsafe.Line(rep.Protocol), 40))
		}
		fmt.Fprintf(stdout, ": tools [%s]", textsafe.Line(strings.Join(rep.Tools, ", ")))
		for _, c := range rep.Calls {
			fmt.Fprintf(stdout, "; called %s: %s", clipLine(textsafe.Line(c.Tool), 80), clipLine(textsafe.Line(c.Result), 120))
		}
		fmt.Fprintln(stdout)
		if err != nil {
			fmt.Fprintf(stderr, "harness mcp-client: %s\n", clipLine(textsafe.Line(err.Error()), 2000))
		}
	}
	if err != nil {
		return 1
	}
	return 0
}

func mcpClientRun(ctx context.Context, scenario, protocol, url string, verbose bool, stderr io.Writer) (*mcpClientReport, error) {
	rep := &mcpClientReport{Scenario: scenario, URL: url, Protocol: protocol, Tools: []string{}, Events: []string{}}
	var ctxVals map[string]any
	if raw := os.Getenv(ContextEnv); raw != "" {
		if len(raw) > maxContextBytes {
			return rep, fmt.Errorf("$%s: %d bytes, more than %d", ContextEnv, len(raw), maxContextBytes)
		}
		if err := json.Unmarshal([]byte(raw), &ctxVals); err != nil {
			return rep, fmt.Errorf("$%s: %w", ContextEnv, err)
		}
	}
	cfg := map[string]any{
		"type": "http", "url": url,
		"elicitation": string(config.ElicitationDefaults),
		"restart":     string(config.RestartNever),
	}
	if protocol != "" {
		if !protocolVersionRE.MatchString(protocol) {
			return rep, fmt.Errorf("protocol version %q: want YYYY-MM-DD", clipLine(textsafe.Line(protocol), 40))
		}
		// Pinned: the runtime speaks this revision's lifecycle or fails.
		cfg["protocolVersion"] = protocol
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
	logger := slog.New(slog.DiscardHandler)
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
	if !known {
		csc, ok, err := contextCalls(ctxVals)
		if err != nil {
			return rep, err
		}
		sc, known = csc, ok
	}
	if !known && len(tools) > 0 {
		sc = one(tools[0].MCPName, map[string]any{})
	}
	for _, step := range sc.steps {
		if err := runStep(ctx, sess, tools, scenario, step, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// runStep makes the calls of one step of a scenario at the same time
// through the session and adds them to rep in the step's order; the error
// joins those of every failed call, a call whose result is an error result
// included.
func runStep(ctx context.Context, sess *host.Session, tools []bridge.Tool, scenario string, step []toolCall, rep *mcpClientReport) error {
	byMCP := map[string]bridge.Tool{}
	for _, t := range tools {
		byMCP[t.MCPName] = t
	}
	type resolved struct {
		exposed string
		args    map[string]any
	}
	calls := make([]resolved, len(step))
	for i, c := range step {
		t, ok := byMCP[c.tool]
		if !ok {
			return fmt.Errorf("scenario %s: the server lists no tool %q (tools: %s)", scenario, c.tool, strings.Join(rep.Tools, ", "))
		}
		calls[i] = resolved{exposed: t.Name, args: c.args}
		if c.schemaOf != "" {
			src, ok := byMCP[c.schemaOf]
			if !ok {
				return fmt.Errorf("scenario %s: the server lists no tool %q whose schema to send (tools: %s)", scenario, c.schemaOf, strings.Join(rep.Tools, ", "))
			}
			calls[i].args = map[string]any{"schema": src.InputSchema}
		}
	}
	reports := make([]callReport, len(step))
	errs := make([]error, len(step))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := sess.CallTool(ctx, c.exposed, c.args)
			reports[i] = callReport{Tool: step[i].tool, Result: res.Text, IsError: res.IsError}
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("tools/call %s: %w", step[i].tool, err)
			case res.IsError:
				errs[i] = errors.New("tools/call " + step[i].tool + " returned an error result")
			}
		}()
	}
	wg.Wait()
	rep.Calls = append(rep.Calls, reports...)
	return errors.Join(errs...)
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
