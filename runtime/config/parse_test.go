package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fileWith puts one entry on line 3 of a config file.
func fileWith(name, entry string) string {
	return fmt.Sprintf("{\n  \"mcpServers\": {\n    %q: %s\n  }\n}\n", name, entry)
}

func TestParseEntryErrors(t *testing.T) {
	long := strings.Repeat("a", 101)
	tests := []struct {
		name, entry, field, msg string
	}{
		{"srv", `{}`, "command", "required for stdio servers"},
		{"srv", `{"args": ["x"]}`, "command", "required for stdio servers"},
		{"srv", `{"type": "stdio", "url": "https://x"}`, "command", "required for stdio"},
		{"srv", `{"command": "x", "url": "https://x"}`, "url", "cannot be used together with command"},
		{"srv", `{"type": "http", "command": "x", "url": "https://x"}`, "url", "cannot be used together with command"},
		{"srv", `{"type": "http"}`, "url", "required for http servers"},
		{"srv", `{"type": "sse", "headers": {}}`, "url", "required for sse servers"},
		{"srv", `{"type": "websocket", "url": "ws://x"}`, "type", `unknown type "websocket"`},
		{"srv", `{"type": 5, "command": "x"}`, "type", "must be a string, got number"},
		{"srv", `{"command": ["node"]}`, "command", "must be a string, got array"},
		{"srv", `{"command": "x", "args": "-v"}`, "args", "must be an array of strings, got string"},
		{"srv", `{"command": "x", "args": ["-v", 3]}`, "args[1]", "must be a string, got number"},
		{"srv", `{"command": "x", "env": ["A=1"]}`, "env", "must be an object of strings"},
		{"srv", `{"command": "x", "env": {"PORT": 8080}}`, "env.PORT", "must be a string, got number"},
		{"srv", `{"command": "x", "env": {"A=B": "1"}}`, "env.A=B", "no '='"},
		{"srv", `{"command": "x", "cwd": false}`, "cwd", "must be a string, got boolean"},
		{"srv", `{"type": "http", "url": "https://x", "headers": {"X-Key": true}}`, "headers.X-Key", "must be a string, got boolean"},
		{"srv", `{"type": "http", "url": "example.com/mcp"}`, "url", "absolute http or https URL"},
		{"srv", `{"type": "http", "url": "${UNSET_URL}"}`, "url", "unresolved ${...} reference"},
		{"srv", `{"type": "http", "url": 7}`, "url", "must be a string"},
		{"srv", `{"command": "x", "auth": "oauth"}`, "auth", "must be an object"},
		{"srv", `{"command": "x", "auth": {"type": "basic", "credentialId": "c"}}`, "auth.type", `unknown auth type "basic"`},
		{"srv", `{"command": "x", "auth": {"credentialId": "c"}}`, "auth.type", "required"},
		{"srv", `{"command": "x", "auth": {"type": "oauth", "credentialId": 4}}`, "auth.credentialId", "must be a string"},
		{"srv", `{"type": "http", "url": "https://x", "auth": {"type": "oauth", "grant": "implicit"}}`, "auth.grant", `unknown grant "implicit"`},
		{"srv", `{"type": "http", "url": "https://x", "auth": {"type": "oauth", "grant": "client_credentials", "clientId": "a"}}`, "auth.clientSecret", `required for grant "client_credentials"`},
		{"srv", `{"type": "http", "url": "https://x", "auth": {"type": "oauth", "grant": "client_credentials", "clientSecret": "S"}}`, "auth.clientId", `required for grant "client_credentials"`},
		{"srv", `{"type": "http", "url": "https://x", "auth": {"type": "oauth", "grant": "authorization_code", "clientId": "a", "clientSecret": "abc-123"}}`, "auth.clientSecret", "a secret written into the config is not accepted"},
		{"srv", `{"type": "http", "url": "https://x", "auth": {"type": "oauth", "grant": "authorization_code", "clientSecret": "S"}}`, "auth.clientSecret", `needs "clientId"`},
		{"srv", `{"type": "http", "url": "https://x", "auth": {"type": "oauth", "grant": "authorization_code", "clientMetadataUrl": "http://x/c.json"}}`, "auth.clientMetadataUrl", "must be an https URL with a path"},
		{"srv", `{"type": "http", "url": "https://x", "auth": {"type": "oauth", "grant": "authorization_code", "dynamicRegistration": false}}`, "auth.dynamicRegistration", "leaves no way to register the client"},
		{"srv", `{"type": "http", "url": "https://x", "auth": {"type": "oauth", "grant": "authorization_code", "redirectUri": "callback"}}`, "auth.redirectUri", "must be an absolute URL"},
		{"srv", `{"type": "http", "url": "https://x", "auth": {"type": "oauth", "grant": "authorization_code", "offlineAccess": "yes"}}`, "auth.offlineAccess", "must be true or false"},
		{"srv", `{"type": "http", "url": "https://x", "auth": {"type": "oauth", "credentialId": "c", "clientId": "a"}}`, "auth.clientId", `needs "grant"`},
		{"srv", `{"command": "x", "restart": "sometimes"}`, "restart", `unknown restart policy "sometimes"`},
		{"srv", `{"command": "x", "restart": 1}`, "restart", "must be a string"},
		{"srv", `{"command": "x", "healthProbe": "curl"}`, "healthProbe", `unknown health probe "curl"`},
		{"srv", `{"command": "x", "includeTools": "a"}`, "includeTools", "must be an array of strings"},
		{"srv", `{"command": "x", "excludeTools": ["a", 1]}`, "excludeTools[1]", "must be a string"},
		{"srv", `{"command": "x", "roots": "/work"}`, "roots", "must be an array of strings"},
		{"srv", `{"command": "x", "roots": ["/a", 3]}`, "roots[1]", "must be a string"},
		{"srv", `{"command": "x", "roots": ["/a", "https://example.com/x"]}`, "roots[1]", `unsupported scheme "https"`},
		{"srv", `{"command": "x", "roots": ["file://host/x"]}`, "roots[0]", `with host "host"`},
		{"srv", `{"command": "x", "roots": [""]}`, "roots[0]", "empty root"},
		{"srv", `"npx server"`, "", "server entry must be an object, got string"},
		{"bad name", `{"command": "x"}`, "name", "only letters, digits"},
		{"bad/name", `{"command": "x"}`, "name", "only letters, digits"},
		{"", `{"command": "x"}`, "name", "must not be empty"},
		{long, `{"command": "x"}`, "name", "at most 100 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.field+"/"+tt.msg, func(t *testing.T) {
			path := "/p/.mcp.json"
			servers, diags := ParseFile(path, []byte(fileWith(tt.name, tt.entry)), LevelUser, "claude", envOf())
			if len(servers) != 0 {
				t.Errorf("invalid entry loaded: %+v", servers[0])
			}
			errs := 0
			for _, d := range diags {
				if d.Severity == SeverityError {
					errs++
				}
			}
			if errs != 1 {
				t.Fatalf("want exactly one error:\n%s", diagStrings(diags))
			}
			ds := findDiag(diags, tt.name, tt.field)
			if len(ds) != 1 {
				t.Fatalf("no diagnostic for field %q:\n%s", tt.field, diagStrings(diags))
			}
			d := ds[0]
			if d.Severity != SeverityError || d.File != path || d.Line != 3 || d.Column < 5 || !strings.Contains(d.Message, tt.msg) {
				t.Errorf("got %+v", d)
			}
			mustIs(t, &d, ErrInvalidConfig)
			text := d.Error()
			for _, part := range []string{path + ":3:", fmt.Sprintf("server %q", tt.name), tt.field + ": "} {
				if tt.name == "" && strings.HasPrefix(part, "server") {
					continue
				}
				if !strings.Contains(text, part) {
					t.Errorf("Error() = %q lacks %q", text, part)
				}
			}
		})
	}
}

func TestParseEntryReportsEveryProblem(t *testing.T) {
	_, diags := ParseFile("/f.json", []byte(fileWith("s", `{"command": 1, "args": [2], "restart": "x"}`)), LevelUser, "mcplife", envOf())
	for _, f := range []string{"command", "args[0]", "restart"} {
		if len(findDiag(diags, "s", f)) != 1 {
			t.Errorf("no diagnostic for %s:\n%s", f, diagStrings(diags))
		}
	}
}

func TestParseEntryWarnings(t *testing.T) {
	tests := []struct {
		entry, field string
		check        func(*Server) bool
	}{
		{`{"command": "x", "enabled": "false"}`, "enabled", func(s *Server) bool { return s.Enabled }},
		{`{"command": "x", "enabled": 0}`, "enabled", func(s *Server) bool { return s.Enabled }},
		{`{"command": "x", "timeout": "5000"}`, "timeout", func(s *Server) bool { return s.Timeout == 0 && s.ConnectTimeout() == DefaultConnectTimeout }},
		{`{"command": "x", "timeout": -1}`, "timeout", func(s *Server) bool { return s.Timeout == 0 }},
		{`{"command": "x", "timeout": true}`, "timeout", func(s *Server) bool { return s.Timeout == 0 }},
		{`{"command": "x", "toolTimeout": "1m"}`, "toolTimeout", func(s *Server) bool { return s.ToolTimeout == 0 }},
		{`{"command": "x", "shared": "no"}`, "shared", func(s *Server) bool { return s.Shared }},
		{`{"command": "x", "requiresApproval": "no"}`, "requiresApproval", func(s *Server) bool { return s.RequiresApproval }},
		{`{"command": "x", "restartDelays": 1000}`, "restartDelays", func(s *Server) bool { return s.RestartDelays == nil }},
		{`{"command": "x", "restartDelays": []}`, "restartDelays", func(s *Server) bool { return s.RestartDelays == nil }},
		{`{"command": "x", "restartDelays": [1000, -1]}`, "restartDelays[1]", func(s *Server) bool { return s.RestartDelays == nil }},
		{`{"command": "x", "restartDelays": [1000, "2s"]}`, "restartDelays[1]", func(s *Server) bool { return s.RestartDelays == nil }},
		{`{"command": "x", "maxResultChars": 0}`, "maxResultChars", func(s *Server) bool { return s.MaxResultChars == 0 }},
		{`{"command": "x", "maxResultChars": 1.5}`, "maxResultChars", func(s *Server) bool { return s.MaxResultChars == 0 }},
		{`{"command": "x", "maxResultChars": "big"}`, "maxResultChars", func(s *Server) bool { return s.MaxResultChars == 0 }},
		{`{"command": "x", "maxMessageBytes": 100}`, "maxMessageBytes", func(s *Server) bool { return s.MaxMessageBytes == 0 }},
		{`{"command": "x", "maxMessageBytes": 1023}`, "maxMessageBytes", func(s *Server) bool { return s.MaxMessageBytes == 0 }},
		{`{"command": "x", "maxMessageBytes": 1073741825}`, "maxMessageBytes", func(s *Server) bool { return s.MaxMessageBytes == 0 }},
		{`{"command": "x", "maxMessageBytes": 2e9}`, "maxMessageBytes", func(s *Server) bool { return s.MaxMessageBytes == 0 }},
		{`{"command": "x", "maxMessageBytes": "16MiB"}`, "maxMessageBytes", func(s *Server) bool { return s.MaxMessageBytes == 0 }},
		{`{"command": "x", "stderrLimit": 100}`, "stderrLimit", func(s *Server) bool { return s.StderrLimit == 0 }},
		{`{"command": "x", "stderrLimit": 255}`, "stderrLimit", func(s *Server) bool { return s.StderrLimit == 0 }},
		{`{"command": "x", "stderrLimit": 1048577}`, "stderrLimit", func(s *Server) bool { return s.StderrLimit == 0 }},
		{`{"command": "x", "stderrLimit": 1e7}`, "stderrLimit", func(s *Server) bool { return s.StderrLimit == 0 }},
		{`{"command": "x", "stderrLimit": 4096.5}`, "stderrLimit", func(s *Server) bool { return s.StderrLimit == 0 }},
		{`{"command": "x", "stderrLimit": "8KiB"}`, "stderrLimit", func(s *Server) bool { return s.StderrLimit == 0 }},
		{`{"command": "x", "protocolVersion": 2025}`, "protocolVersion", func(s *Server) bool { return s.ProtocolVersion == "" }},
		{`{"command": "x", "elicitation": "ask"}`, "elicitation", func(s *Server) bool { return s.Elicitation == "" }},
		{`{"command": "x", "elicitation": true}`, "elicitation", func(s *Server) bool { return s.Elicitation == "" }},
		{`{"command": "x", "sampling": "yes"}`, "sampling", func(s *Server) bool { return !s.Sampling }},
		{`{"command": "x", "progress": 1}`, "progress", func(s *Server) bool { return !s.Progress }},
		{`{"command": "x", "resources": "on"}`, "resources", func(s *Server) bool { return !s.Resources }},
		{`{"command": "x", "prompts": [true]}`, "prompts", func(s *Server) bool { return !s.Prompts }},
		{`{"command": "x", "auth": {"type": "oauth"}}`, "auth.credentialId", func(s *Server) bool { return s.Auth != nil && s.Auth.CredentialID == "" }},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			servers, diags := ParseFile("/u.json", []byte(fileWith("w", tt.entry)), LevelUser, "mcplife", envOf())
			if len(servers) != 1 {
				t.Fatalf("server not loaded:\n%s", diagStrings(diags))
			}
			if len(diags) != 1 {
				t.Fatalf("want one warning:\n%s", diagStrings(diags))
			}
			d := diags[0]
			if d.Severity != SeverityWarning || d.Field != tt.field || d.Server != "w" || d.File != "/u.json" || d.Line != 3 {
				t.Errorf("got %+v", d)
			}
			if !tt.check(servers[0]) {
				t.Errorf("field did not fall back to its default: %+v", servers[0])
			}
		})
	}
}

// TestParseEntryLimits checks that the ends of the documented ranges are
// accepted without a warning.
func TestParseEntryLimits(t *testing.T) {
	tests := []struct {
		entry string
		check func(*Server) bool
	}{
		{`{"command": "x", "maxResultChars": 1}`, func(s *Server) bool { return s.MaxResultChars == 1 }},
		{`{"command": "x", "maxResultChars": 2147483647}`, func(s *Server) bool { return s.MaxResultChars == 2147483647 }},
		{`{"command": "x", "maxMessageBytes": 1024}`, func(s *Server) bool { return s.MaxMessageBytes == 1024 }},
		{`{"command": "x", "maxMessageBytes": 1073741824}`, func(s *Server) bool { return s.MaxMessageBytes == 1073741824 }},
		{`{"command": "x", "stderrLimit": 256}`, func(s *Server) bool { return s.StderrLimit == MinStderrLimit }},
		{`{"command": "x", "stderrLimit": 1048576}`, func(s *Server) bool { return s.StderrLimit == MaxStderrLimit }},
		{`{"command": "x", "timeout": 0, "toolTimeout": 0}`, func(s *Server) bool { return s.Timeout == NoTimeout && s.ToolTimeout == NoTimeout }},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			servers, diags := ParseFile("/u.json", []byte(fileWith("w", tt.entry)), LevelUser, "mcplife", envOf())
			if len(servers) != 1 || len(diags) != 0 {
				t.Fatalf("servers %d, diagnostics:\n%s", len(servers), diagStrings(diags))
			}
			if !tt.check(servers[0]) {
				t.Errorf("got %+v", servers[0])
			}
		})
	}
}

func TestParseAllFields(t *testing.T) {
	entry := `{
	"type": "stdio", "command": "node", "args": ["server.js", "--port", "1"],
	"env": {"A": "1"}, "cwd": "/srv", "enabled": false, "timeout": 2500, "toolTimeout": 0,
	"shared": false, "restart": "bounded", "restartDelays": [0, 1000, 2500.5], "healthProbe": "tools-list",
	"protocolVersion": "2025-06-18", "includeTools": ["a", "b"], "excludeTools": [], "maxResultChars": 1000, "maxMessageBytes": 65536,
	"stderrLimit": 4096, "elicitation": "defaults", "sampling": true, "progress": true, "resources": true, "prompts": true, "roots": ["rel/dir", "/abs", "file:///u/v"],
	"requiresApproval": false, "auth": {"type": "oauth", "credentialId": "gh"}, "x-unknown": {"kept": true},
	"description": null
}`
	servers, diags := ParseFile("/f.json", []byte(fileWith("full", entry)), LevelUser, "mcplife", envOf())
	if len(diags) != 0 || len(servers) != 1 {
		t.Fatalf("diagnostics:\n%s", diagStrings(diags))
	}
	s := servers[0]
	want := &Server{
		Name: "full", Type: Stdio, Command: "node", Args: []string{"server.js", "--port", "1"},
		Env: map[string]string{"A": "1"}, Cwd: "/srv", Auth: &Auth{Type: "oauth", CredentialID: "gh"},
		Enabled: false, Timeout: 2500 * time.Millisecond, ToolTimeout: NoTimeout, Shared: false,
		Restart: RestartBounded, RestartDelays: []time.Duration{0, time.Second, 2500*time.Millisecond + 500*time.Microsecond},
		Probe: ProbeToolsList, ProtocolVersion: "2025-06-18", IncludeTools: []string{"a", "b"}, ExcludeTools: []string{},
		MaxResultChars: 1000, MaxMessageBytes: 65536, StderrLimit: 4096, RequiresApproval: false, Elicitation: ElicitationDefaults,
		Sampling: true, Progress: true, Resources: true, Prompts: true,
		Roots: []Root{{URI: "file:///rel/dir", Name: "dir"}, {URI: "file:///abs", Name: "abs"}, {URI: "file:///u/v", Name: "v"}},
	}
	got := fmt.Sprintf("%+v %+v", *s.Auth, stripMeta(s))
	if exp := fmt.Sprintf("%+v %+v", *want.Auth, stripMeta(want)); got != exp {
		t.Errorf("got  %s\nwant %s", got, exp)
	}
	if !strings.Contains(string(s.Raw), `"x-unknown": {"kept": true}`) || !strings.HasPrefix(string(s.Raw), "{\n\t\"type\"") {
		t.Errorf("Raw not as written: %s", s.Raw)
	}

	// Defaults.
	servers, _ = ParseFile("/f.json", []byte(fileWith("min", `{"command": "x"}`)), LevelUser, "mcplife", envOf())
	m := servers[0]
	if !m.Enabled || !m.Shared || !m.RequiresApproval || m.Type != "" || m.EffectiveType() != Stdio || m.Timeout != 0 || m.Restart != RestartDefault || m.Probe != ProbeDefault || m.Elicitation != "" ||
		m.Sampling || m.Progress || m.Resources || m.Prompts || m.Roots != nil {
		t.Errorf("defaults: %+v", m)
	}
}

func stripMeta(s *Server) Server {
	c := *s
	c.Raw, c.Auth, c.Source = nil, nil, Source{}
	return c
}

func TestParseTypeInference(t *testing.T) {
	servers, diags := ParseFile("/f.json", []byte(`{"mcpServers": {
		"remote": {"url": "https://r.example/mcp"},
		"sse": {"type": "sse", "url": "http://localhost:1/sse"},
		"local": {"command": "x"}
	}}`), LevelUser, "cursor", envOf())
	if len(diags) != 0 {
		t.Fatalf("diagnostics:\n%s", diagStrings(diags))
	}
	types := map[string]Transport{}
	for _, s := range servers {
		types[s.Name] = s.EffectiveType()
	}
	if types["remote"] != HTTP || types["sse"] != SSE || types["local"] != Stdio {
		t.Errorf("types %v", types)
	}
}

func TestParseFileShapes(t *testing.T) {
	// Both keys, comments, trailing commas, a BOM, a duplicate name.
	text := "\xEF\xBB\xBF{\n" +
		"  // servers for this repo\n" +
		"  \"mcpServers\": {\"a\": {\"command\": \"first\"}, \"a\": {\"command\": \"second\",},},\n" +
		"  /* the VS Code key */ \"servers\": {\"b\": {\"command\": \"b\"}, \"a\": {\"command\": \"third\"}},\n" +
		"  \"inputs\": []\n" +
		"}"
	servers, diags := ParseFile("/f.json", []byte(text), LevelUser, "vscode", envOf())
	var got []string
	for _, s := range servers {
		got = append(got, s.Name+"="+s.Command)
	}
	// The repeated "a" of mcpServers loads neither definition; the "a" of
	// servers is another map's (Discover shadows it with the invalid one).
	if strings.Join(got, " ") != "b=b a=third" {
		t.Errorf("servers %v", got)
	}
	if len(diags) != 1 || diags[0].Severity != SeverityError || diags[0].Server != "a" || diags[0].Field != "name" || diags[0].Line != 3 || diags[0].Column != 45 || !strings.Contains(diags[0].Message, "more than once in mcpServers (first at line 3, column 18;") {
		t.Errorf("diagnostics:\n%s", diagStrings(diags))
	}
}

// TestParseFileComments checks block comments that are empty or touch the
// next token: the text around them is read as written.
func TestParseFileComments(t *testing.T) {
	tests := []struct{ name, text string }{
		{"empty block comment", `{/**/"mcpServers": {"a": {"type": "http", "url": "https://a.example/mcp"}}}`},
		{"comment touching a key", `{/* ours */"mcpServers": {"a": {"type": "http", "url": "https://a.example/mcp"}}}`},
		{"comment touching a value", `{"mcpServers": {"a": {"type": "http", "url":/* remote */"https://a.example/mcp"}}}`},
		{"comment before the top-level value", "/* generated */{\"mcpServers\": {\"a\": {\"type\": \"http\", \"url\": \"https://a.example/mcp\"}}}"},
		{"comments in a row", `{/**//* x */"mcpServers": {"a": {"type": "http", "url": "https://a.example/mcp"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			servers, diags := ParseFile("/f.json", []byte(tt.text), LevelUser, "vscode", envOf())
			if len(diags) != 0 {
				t.Fatalf("diagnostics:\n%s", diagStrings(diags))
			}
			if len(servers) != 1 || servers[0].Name != "a" || servers[0].URL != "https://a.example/mcp" {
				t.Errorf("servers %+v", servers)
			}
		})
	}
}

func TestParseExpansion(t *testing.T) {
	env := envOf("BIN", "/usr/bin/node", "A", "a-val", "EMPTY", "", "TOK", "s3cret", "DIR", "/work", "HOST", "h.example", "BANG", "!rm -rf ~")
	entry := `{
		"command": "${BIN}", "args": ["${A}", "${UNSET}", "${UNSET:-dflt}", "${EMPTY:-dflt}", "$A", "x${A}y${A}"],
		"env": {"T": "${TOK}", "C": "!echo ${TOK}", "U": "${NOPE}"}, "cwd": "${DIR}/sub"
	}`
	servers, diags := ParseFile("/f.json", []byte(fileWith("s", entry)), LevelUser, "mcplife", env)
	if len(diags) != 0 {
		t.Fatalf("diagnostics:\n%s", diagStrings(diags))
	}
	s := servers[0]
	if s.Command != "/usr/bin/node" || s.Cwd != "/work/sub" {
		t.Errorf("command %q cwd %q", s.Command, s.Cwd)
	}
	if got := strings.Join(s.Args, "|"); got != "a-val|${UNSET}|dflt|dflt|$A|xa-valya-val" {
		t.Errorf("args %s", got)
	}
	if s.Env["T"] != "s3cret" || s.Env["C"] != "!echo ${TOK}" || s.Env["U"] != "${NOPE}" {
		t.Errorf("env %v", s.Env)
	}
	if strings.Contains(string(s.Raw), "s3cret") {
		t.Errorf("Raw was expanded: %s", s.Raw)
	}

	// Expansion never creates a "!command".
	servers, diags = ParseFile("/f.json", []byte(fileWith("s", `{"type": "http", "url": "https://x", "headers": {"H": "${BANG}"}}`)), LevelUser, "mcplife", env)
	if servers[0].Headers["H"] != "${BANG}" || len(findDiag(diags, "s", "headers.H")) != 1 {
		t.Errorf("headers %v diags:\n%s", servers[0].Headers, diagStrings(diags))
	}
}

// A project-level server's url and headers see only its own env block as
// written; a user-level server's see the process environment.
func TestParseHeaderScoping(t *testing.T) {
	env := envOf("ANTHROPIC_API_KEY", "sk-secret", "HOST", "h.example")
	entry := `{
		"type": "http", "url": "https://${HOST:-fallback.example}/mcp?k=${ANTHROPIC_API_KEY}",
		"env": {"LOCAL": "local-token", "RELAY": "${ANTHROPIC_API_KEY}"},
		"headers": {"Authorization": "Bearer ${ANTHROPIC_API_KEY}", "X-Local": "${LOCAL}", "X-Relay": "${RELAY}", "X-Default": "${MISSING:-d}"}
	}`
	tests := []struct {
		level                         Level
		url, auth, local, relay, dflt string
	}{
		{LevelProject, "https://fallback.example/mcp?k=${ANTHROPIC_API_KEY}", "Bearer ${ANTHROPIC_API_KEY}", "local-token", "${ANTHROPIC_API_KEY}", "d"},
		{LevelUser, "https://h.example/mcp?k=sk-secret", "Bearer sk-secret", "${LOCAL}", "${RELAY}", "d"},
		{LevelInline, "https://h.example/mcp?k=sk-secret", "Bearer sk-secret", "${LOCAL}", "${RELAY}", "d"},
	}
	for _, tt := range tests {
		servers, diags := ParseFile("/f.json", []byte(fileWith("s", entry)), tt.level, "claude", env)
		if len(diags) != 0 {
			t.Fatalf("diagnostics:\n%s", diagStrings(diags))
		}
		s := servers[0]
		h := s.Headers
		if s.URL != tt.url || h["Authorization"] != tt.auth || h["X-Local"] != tt.local || h["X-Relay"] != tt.relay || h["X-Default"] != tt.dflt {
			t.Errorf("%s: url %q headers %v", tt.level, s.URL, h)
		}
		if strings.Contains(string(s.Raw), "sk-secret") {
			t.Errorf("%s: Raw expanded", tt.level)
		}
		if tt.level == LevelProject && s.Env["RELAY"] != "sk-secret" {
			t.Errorf("env values still expand from the process: %v", s.Env)
		}
	}
}

func TestParseOAuthGrant(t *testing.T) {
	entry := `{"type": "http", "url": "https://x/mcp", "auth": {"type": "oauth", "grant": "authorization_code", "clientId": "app",
		"clientSecret": "${APP_SECRET}", "clientMetadataUrl": "https://app.example/client.json", "redirectUri": "http://127.0.0.1:9/cb", "offlineAccess": true}}`
	servers, diags := ParseFile("/f.json", []byte(fileWith("s", entry)), LevelUser, "mcplife", envOf("APP_SECRET", "hunter2"))
	if len(servers) != 1 || len(diags) != 0 {
		t.Fatalf("servers %v, diags:\n%s", servers, diagStrings(diags))
	}
	want := Auth{Type: "oauth", Grant: GrantAuthorizationCode, ClientID: "app", ClientSecret: "${APP_SECRET}",
		ClientMetadataURL: "https://app.example/client.json", DynamicRegistration: true, RedirectURI: "http://127.0.0.1:9/cb", OfflineAccess: true}
	if got := *servers[0].Auth; got != want {
		t.Fatalf("auth = %+v, want %+v (the secret stays a reference)", got, want)
	}
	// client_credentials: registration fields are ignored with a warning.
	entry = `{"type": "http", "url": "https://x/mcp", "auth": {"type": "oauth", "grant": "client_credentials", "clientId": "svc", "clientSecret": "SVC", "offlineAccess": true}}`
	servers, diags = ParseFile("/f.json", []byte(fileWith("s", entry)), LevelUser, "mcplife", envOf())
	if len(servers) != 1 || len(findDiag(diags, "s", "auth.offlineAccess")) != 1 || servers[0].Auth.OfflineAccess || servers[0].Auth.DynamicRegistration {
		t.Fatalf("servers %+v, diags:\n%s", servers, diagStrings(diags))
	}
}

// TestParseOAuthRedirectURI checks that any absolute redirect URI is
// accepted, including a native app's private-use scheme without a host.
func TestParseOAuthRedirectURI(t *testing.T) {
	for _, uri := range []string{"http://127.0.0.1:9/cb", "https://app.example/cb", "com.example.app:/oauth2redirect", "myapp:callback"} {
		entry := fmt.Sprintf(`{"type": "http", "url": "https://x/mcp", "auth": {"type": "oauth", "grant": "authorization_code", "redirectUri": %q}}`, uri)
		servers, diags := ParseFile("/f.json", []byte(fileWith("s", entry)), LevelUser, "mcplife", envOf())
		if len(servers) != 1 || len(diags) != 0 {
			t.Errorf("%s: diagnostics:\n%s", uri, diagStrings(diags))
			continue
		}
		if got := servers[0].Auth.RedirectURI; got != uri {
			t.Errorf("%s: RedirectURI = %q", uri, got)
		}
	}
	for _, uri := range []string{"callback", "/cb", "https:///cb", "http:cb"} {
		entry := fmt.Sprintf(`{"type": "http", "url": "https://x/mcp", "auth": {"type": "oauth", "grant": "authorization_code", "redirectUri": %q}}`, uri)
		servers, diags := ParseFile("/f.json", []byte(fileWith("s", entry)), LevelUser, "mcplife", envOf())
		if len(servers) != 0 || len(findDiag(diags, "s", "auth.redirectUri")) != 1 {
			t.Errorf("%s accepted: diagnostics:\n%s", uri, diagStrings(diags))
		}
	}
}

// TestParseClientCredentialsIgnoresRegistration checks that each
// registration field of a client_credentials grant gets exactly one warning
// naming it, and nothing else does.
func TestParseClientCredentialsIgnoresRegistration(t *testing.T) {
	tests := []struct{ field, value string }{
		{"", ""},
		{"clientMetadataUrl", `"https://app.example/client.json"`},
		{"dynamicRegistration", "true"},
		{"redirectUri", `"http://127.0.0.1:9/cb"`},
		{"offlineAccess", "false"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			extra := ""
			if tt.field != "" {
				extra = fmt.Sprintf(", %q: %s", tt.field, tt.value)
			}
			entry := `{"type": "http", "url": "https://x/mcp", "auth": {"type": "oauth", "grant": "client_credentials", "clientId": "svc", "clientSecret": "SVC"` + extra + `}}`
			servers, diags := ParseFile("/f.json", []byte(fileWith("s", entry)), LevelUser, "mcplife", envOf())
			if len(servers) != 1 {
				t.Fatalf("not loaded:\n%s", diagStrings(diags))
			}
			want := 0
			if tt.field != "" {
				want = 1
				if ds := findDiag(diags, "s", "auth."+tt.field); len(ds) != 1 || ds[0].Severity != SeverityWarning || ds[0].Message != `ignored with grant "client_credentials"` {
					t.Errorf("diagnostics:\n%s", diagStrings(diags))
				}
			}
			if len(diags) != want {
				t.Errorf("want %d diagnostics:\n%s", want, diagStrings(diags))
			}
			a := *servers[0].Auth
			if want := (Auth{Type: "oauth", Grant: GrantClientCredentials, ClientID: "svc", ClientSecret: "SVC"}); a != want {
				t.Errorf("auth = %+v, want %+v", a, want)
			}
		})
	}
}

func TestParseRootsRelative(t *testing.T) {
	servers, diags := ParseFile("/home/me/proj/.mcp.json", []byte(fileWith("s", `{"command": "x", "roots": ["src", "../other", "./"]}`)), LevelProject, "claude", envOf())
	if len(diags) != 0 || len(servers) != 1 {
		t.Fatalf("diagnostics:\n%s", diagStrings(diags))
	}
	want := []Root{{URI: "file:///home/me/proj/src", Name: "src"}, {URI: "file:///home/me/other", Name: "other"}, {URI: "file:///home/me/proj", Name: "proj"}}
	// Without a scheme before "://" a root is a path, not a URI.
	if r, err := ParseRoot("://odd", "/home/me/proj/.mcp.json"); err != nil || r != (Root{URI: "file:///home/me/proj/:/odd", Name: "odd"}) {
		t.Errorf(`ParseRoot("://odd") = %+v, %v`, r, err)
	}
	if fmt.Sprint(servers[0].Roots) != fmt.Sprint(want) {
		t.Errorf("roots = %+v, want %+v", servers[0].Roots, want)
	}
	// An inline server has no file to resolve against.
	_, diags = ParseFile("", []byte(fileWith("s", `{"command": "x", "roots": ["src"]}`)), LevelInline, "inline", envOf())
	if ds := findDiag(diags, "s", "roots[0]"); len(ds) != 1 || !strings.Contains(ds[0].Message, "needs a config file") {
		t.Errorf("inline relative root:\n%s", diagStrings(diags))
	}
}
