package driver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/mcplife/mcplife/internal/docsection"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

func TestSchemaFilesMatchMethods(t *testing.T) {
	files, err := schemaFiles()
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(slices.Values(SchemaNames()))
	if !slices.Equal(files, names) {
		t.Errorf("schema files %v\nwant %v", files, names)
	}
	if _, err := NewValidator(); err != nil {
		t.Fatal(err)
	}
	// Every method has a handler in the reference driver (or is one Conn
	// answers itself), and its announcement is one the client accepts;
	// timers.pending is for drivers on the real clock only (the reference
	// does not announce pending-timers).
	hs := newDriver(ServeOptions{}).handlers()
	if err := hs.check(); err != nil {
		t.Fatal(err)
	}
	for _, m := range Methods() {
		if m.Name != MethodTimersPending && !hs.handles(m.Name) {
			t.Errorf("method %s has no handler", m.Name)
		}
	}
}

// enumAt returns the enum found by walking keys through the schema.
func enumAt(t *testing.T, name string, keys ...string) []string {
	t.Helper()
	data, err := Schema(name)
	if err != nil {
		t.Fatal(err)
	}
	var node any
	if err := json.Unmarshal(data, &node); err != nil {
		t.Fatal(err)
	}
	for _, k := range append(keys, "enum") {
		m, ok := node.(map[string]any)
		if !ok {
			t.Fatalf("%s: no object at %q", name, k)
		}
		node = m[k]
	}
	list, ok := node.([]any)
	if !ok {
		t.Fatalf("%s: no enum at %v", name, keys)
	}
	out := make([]string, len(list))
	for i, v := range list {
		out[i], _ = v.(string)
	}
	return out
}

func TestSchemaVocabularies(t *testing.T) {
	var kinds, caps, profiles, eras, codes, outcomes []string
	for _, e := range Eras() {
		eras = append(eras, string(e.Name))
	}
	for _, k := range event.Kinds() {
		kinds = append(kinds, string(k.Kind))
	}
	for _, c := range Capabilities() {
		caps = append(caps, string(c.Name))
	}
	for _, p := range Profiles() {
		profiles = append(profiles, string(p.Name))
	}
	for _, c := range ErrorCodes() {
		codes = append(codes, string(c.Code))
	}
	for _, c := range OutcomeCodes() {
		outcomes = append(outcomes, string(c.Code))
	}
	for _, c := range []struct {
		schema string
		path   []string
		want   []string
	}{
		{SchemaEvent, []string{"properties", "event", "properties", "kind"}, kinds},
		{"hello.result", []string{"properties", "capabilities", "items"}, caps},
		{"hello.result", []string{"properties", "profiles", "items"}, profiles},
		{"hello.result", []string{"properties", "eras", "items"}, eras},
		{SchemaResponse, []string{"properties", "error", "properties", "code"}, codes},
		{SchemaCallResult, []string{"properties", "error", "properties", "code"}, outcomes},
		{SchemaAcquireResult, []string{"properties", "error", "properties", "code"}, outcomes},
		{"status.result", []string{"properties", "servers", "items", "properties", "state"}, ServerStates},
	} {
		if got := enumAt(t, c.schema, c.path...); !slices.Equal(got, c.want) {
			t.Errorf("%s %v enum:\n got %q\nwant %q", c.schema, c.path, got, c.want)
		}
	}
	// The host's states are the protocol's.
	for _, s := range []host.State{host.StateConnecting, host.StateConnected, host.StateRestarting, host.StateFailed,
		host.StateDisconnected, host.StateDisabled, host.StateBlocked} {
		if !slices.Contains(ServerStates, string(s)) {
			t.Errorf("host state %q is not in ServerStates", s)
		}
	}
	// Every capability named by a method or profile exists.
	for _, m := range Methods() {
		if m.Capability != "" && !slices.Contains(caps, string(m.Capability)) {
			t.Errorf("method %s needs unknown capability %s", m.Name, m.Capability)
		}
	}
	for _, p := range Profiles() {
		for _, c := range p.Requires {
			if !slices.Contains(caps, string(c)) {
				t.Errorf("profile %s requires unknown capability %s", p.Name, c)
			}
		}
	}
}

func TestSchemaExamples(t *testing.T) {
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		schema string
		doc    string
		ok     bool
	}{
		{SchemaRequest, `{"id":1,"method":"hello","params":{"protocol":"mcplife-driver/1"}}`, true},
		{SchemaRequest, `{"id":1.5,"method":"hello"}`, false},
		{"hello.result", `{"protocol":"mcplife-driver/2","implementation":{"name":"x","version":"1"},"capabilities":[],"profiles":[],"eras":["legacy"]}`, true},
		{"hello.result", `{"protocol":"mcplife-driver/2","implementation":{"name":"x","version":"1"},"capabilities":[],"profiles":[]}`, false},
		{"hello.result", `{"protocol":"mcplife-driver/2","implementation":{"name":"x","version":"1"},"capabilities":[],"profiles":[],"eras":[]}`, false},
		{"hello.result", `{"protocol":"mcplife-driver/2","implementation":{"name":"x","version":"1"},"capabilities":[],"profiles":[],"eras":["stateless"]}`, false},
		{"hello.result", `{"protocol":"mcplife-driver/1","implementation":{"name":"x","version":"1"},"capabilities":[],"profiles":[]}`, true},
		{"hello.result", `{"protocol":"mcplife-driver/1","implementation":{"name":"x","version":"1"},"capabilities":[],"profiles":[],"eras":["legacy"]}`, false},
		{SchemaRequest, `{"method":"hello"}`, false},
		{SchemaResponse, `{"type":"response","id":1,"result":{}}`, true},
		{SchemaResponse, `{"type":"response","id":null,"error":{"code":"bad_request","message":"x"}}`, true},
		{SchemaResponse, `{"type":"response","id":null,"result":{}}`, false},
		{SchemaResponse, `{"type":"response","id":1,"result":{},"error":{"code":"failed","message":"x"}}`, false},
		{SchemaResponse, `{"type":"response","id":1,"error":{"code":"mcp_tool_timeout","message":"x"}}`, false},
		{SchemaEvent, `{"type":"event","event":{"seq":1,"at_ms":0,"kind":"gate.opened","attrs":{"servers":2,"timeout_ms":250}}}`, true},
		{SchemaEvent, `{"type":"event","event":{"seq":1,"at_ms":0,"kind":"gate.opend"}}`, false},
		{SchemaEvent, `{"type":"event","event":{"seq":1,"at_ms":0,"kind":"gate.opened","attrs":{"x":[1]}}}`, false},
		{SchemaCallResult, `{"type":"call_result","callId":"c","result":{"text":"","isError":true,"aborted":true,"code":"","truncated":false,"originalChars":0,"signals":[],"server":"a","tool":"mcp_a_b"},"error":{"code":"aborted","message":"x"}}`, true},
		{SchemaCallResult, `{"type":"call_result","callId":"c","result":{"text":""}}`, false},
		{SchemaAcquireResult, `{"type":"acquire_result","acquireId":"a","ok":true}`, true},
		{SchemaAcquireResult, `{"type":"acquire_result","acquireId":"a","ok":false}`, false},
		{SchemaAcquireResult, `{"type":"acquire_result","acquireId":"a","ok":true,"error":{"code":"failed","message":"x"}}`, false},
		{"start.params", `{"clock":"virtual","inline":{"a":{"command":"mcp-fixture","env":{"MCP_FIXTURE_HANG_MS":"5000"}}},"options":{"startupGateMs":0}}`, true},
		{"start.params", `{"clock":"virtual","options":{"probeTimeoutMs":0}}`, false},
		{"start.params", `{"clock":"virtual","colour":"blue"}`, false},
		{"tool.call.params", `{"session":"s","callId":"c","tool":"t","arguments":{"x":1},"timeoutMs":1000}`, true},
		{"tool.call.params", `{"session":"s","callId":"c","tool":"t","arguments":[1]}`, false},
		{"shutdown.params", `{}`, true},
		{"shutdown.params", `{"now":true}`, false},
	} {
		err := v.Validate(c.schema, []byte(c.doc))
		if (err == nil) != c.ok {
			t.Errorf("%s %s: valid=%v, want %v (%v)", c.schema, c.doc, err == nil, c.ok, err)
		}
	}
}

func TestDocSections(t *testing.T) {
	schemas, err := SchemaSection()
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		DocSectionSchemas:    schemas,
		DocSectionVocabulary: VocabularySection(),
	} {
		if err := docsection.Check("../../docs/DRIVER.md", name, body); err != nil {
			t.Error(err)
		}
	}
}

func TestOutcomeCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want OutcomeCode
	}{
		{&host.ServerError{Code: host.CodeToolTimeout, Server: "a", Kind: host.ErrToolTimeout}, OutcomeToolTimeout},
		{&host.ServerError{Code: host.CodeRestartFailed, Server: "a", Kind: host.ErrRestartFailed}, OutcomeRestartFailed},
		{&host.ServerError{Code: host.CodeRestartInProgress, Server: "a", Kind: host.ErrRestartInProgress}, OutcomeRestartInProgress},
		{&host.ServerError{Code: host.CodeUnavailable, Server: "a", Kind: host.ErrUnavailable}, OutcomeUnavailable},
		{&host.ServerError{Code: host.CodeConnectionLost, Server: "a", Kind: host.ErrConnectionLost}, OutcomeConnectionLost},
		{&host.ServerError{Code: host.CodeBlocked, Server: "a", Kind: host.ErrBlocked}, OutcomeBlocked},
		{&host.ServerError{Code: host.CodeFailed, Server: "a", Kind: host.ErrFailed}, OutcomeServerFailed},
		{host.ErrAborted, OutcomeAborted},
		{context.Canceled, OutcomeAborted},
		{host.ErrUnknownTool, OutcomeUnknownTool},
		{host.ErrClosed, OutcomeClosed},
		{errors.New("jsonrpc2: invalid params"), OutcomeFailed},
	} {
		if got := outcomeCode(c.err); got != c.want {
			t.Errorf("outcomeCode(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}
