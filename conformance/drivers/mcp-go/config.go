package main

// What a host author writes around any MCP client library, the Go
// counterpart of conformance/drivers/common/host.js: reading the servers of
// start (inline, then configFiles; the first definition of a name wins),
// validating each server on its own, ${VAR} expansion from start.env,
// flattening MCP content to text, and a stderr tail. None of it is MCP-client
// behaviour under test.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/runtime/event"
)

// serverDef is one valid server definition.
type serverDef struct {
	Name             string
	Transport        string // stdio, http or sse
	Command          string
	Args             []string
	Env              map[string]string
	Cwd              string
	URL              string
	Headers          map[string]string
	Enabled          bool
	RequiresApproval bool
	// TimeoutMs bounds a connect attempt (the host's context deadline);
	// 0 means none.
	TimeoutMs int64
	// ToolTimeoutMs, when not nil, is this server's tool timeout.
	ToolTimeoutMs *int64
	Source        driver.Source
}

// invalidDef is a server entry rejected by validation.
type invalidDef struct {
	Name   string
	Error  string
	Source driver.Source
}

// defaultConnectTimeoutMs bounds a connect attempt unless the server's
// "timeout" says otherwise (mcp-go itself bounds only its server/discover
// probe).
const defaultConnectTimeoutMs = 30000

// knownFields are the server fields the driver understands; others are
// ignored with a config.warning.
var knownFields = []string{"type", "command", "args", "env", "cwd", "url", "headers", "enabled", "shared", "requiresApproval", "timeout", "toolTimeout", "restart", "restartDelays"}

// varRef matches ${VAR} and ${VAR:-default}.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// expand replaces ${VAR} references from lookup; unresolved ones stay
// literal.
func expand(s string, lookup func(string) (string, bool)) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		if v, ok := lookup(m[1]); ok && v != "" {
			return v
		}
		if strings.Contains(ref, ":-") {
			return m[2]
		}
		return ref
	})
}

// entry is one server object with where it came from.
type entry struct {
	name   string
	raw    json.RawMessage
	source driver.Source
}

// loadConfig reads the servers of a start request, reporting config.*
// events through conn. ${VAR} expands from start.env (p.LookupEnv).
func loadConfig(p *driver.StartParams, conn *driver.Conn) ([]*serverDef, []invalidDef) {
	lookup := p.LookupEnv
	var entries []entry
	names := make([]string, 0, len(p.Inline))
	for name := range p.Inline {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		entries = append(entries, entry{name, p.Inline[name], driver.Source{File: "", Level: "inline", Provider: "inline"}})
	}
	for _, f := range p.ConfigFiles {
		provider := f.Provider
		if provider == "" {
			provider = "mcplife"
		}
		src := driver.Source{File: f.Path, Level: f.Level, Provider: provider}
		data, err := os.ReadFile(f.Path)
		if err != nil {
			conn.Emit(event.ConfigError, "", "", map[string]any{"file": f.Path, "line": int64(0), "column": int64(0), "field": "", "message": err.Error()})
			continue
		}
		var doc struct {
			MCPServers json.RawMessage `json:"mcpServers"`
			Servers    json.RawMessage `json:"servers"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			conn.Emit(event.ConfigError, "", "", map[string]any{"file": f.Path, "line": int64(0), "column": int64(0), "field": "", "message": err.Error()})
			continue
		}
		raw := doc.MCPServers
		if raw == nil {
			raw = doc.Servers
		}
		servers, err := orderedObject(raw)
		if err != nil {
			conn.Emit(event.ConfigError, "", "", map[string]any{"file": f.Path, "line": int64(0), "column": int64(0), "field": "mcpServers", "message": err.Error()})
			continue
		}
		conn.Emit(event.ConfigLoaded, "", "", map[string]any{"file": f.Path, "provider": provider, "level": f.Level, "servers": int64(len(servers))})
		for _, e := range servers {
			entries = append(entries, entry{e.name, e.raw, src})
		}
	}
	seen := map[string]driver.Source{}
	var defs []*serverDef
	var invalid []invalidDef
	for _, e := range entries {
		if winner, ok := seen[e.name]; ok {
			conn.Emit(event.ConfigShadowed, e.name, "", map[string]any{"file": e.source.File, "winner": winner.File})
			continue
		}
		seen[e.name] = e.source
		def, ignored, field, err := validate(e, lookup)
		if err != nil {
			conn.Emit(event.ConfigError, e.name, "", map[string]any{"file": e.source.File, "line": int64(0), "column": int64(0), "field": field, "message": err.Error()})
			invalid = append(invalid, invalidDef{Name: e.name, Error: err.Error(), Source: e.source})
			continue
		}
		for _, k := range ignored {
			conn.Emit(event.ConfigWarning, e.name, "", map[string]any{"file": e.source.File, "line": int64(0), "column": int64(0), "field": k, "message": "field " + k + " is not supported by this driver and was ignored"})
		}
		defs = append(defs, def)
	}
	return defs, invalid
}

// orderedObject returns the members of a JSON object in document order.
func orderedObject(raw json.RawMessage) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("no \"mcpServers\" object")
	}
	var out []entry
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("reading the servers: %w", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("reading server %v: %w", k, err)
		}
		out = append(out, entry{name: k.(string), raw: v})
	}
	return out, nil
}

// validate checks one server object. On error it names the field at fault.
func validate(e entry, lookup func(string) (string, bool)) (def *serverDef, ignored []string, field string, err error) {
	bad := func(f, format string, args ...any) (*serverDef, []string, string, error) {
		return nil, nil, f, fmt.Errorf("server %q: %s: %s", e.name, f, fmt.Sprintf(format, args...))
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(e.raw, &m) != nil || m == nil {
		return bad("", "a server must be a JSON object")
	}
	for k, v := range m {
		if string(v) == "null" {
			delete(m, k)
		} else if !slices.Contains(knownFields, k) {
			ignored = append(ignored, k)
		}
	}
	sort.Strings(ignored)
	str := func(k string) (string, bool, error) {
		v, ok := m[k]
		if !ok {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", true, fmt.Errorf("must be a string")
		}
		return s, true, nil
	}
	strMap := func(k string) (map[string]string, error) {
		out := map[string]string{}
		if v, ok := m[k]; ok {
			if err := json.Unmarshal(v, &out); err != nil {
				return nil, fmt.Errorf("must be an object of strings")
			}
		}
		return out, nil
	}
	boolean := func(k string, def bool) (bool, error) {
		v, ok := m[k]
		if !ok {
			return def, nil
		}
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return false, fmt.Errorf("must be true or false")
		}
		return b, nil
	}
	d := &serverDef{Source: e.source, Name: e.name, TimeoutMs: defaultConnectTimeoutMs}
	var hasCommand, hasURL bool
	var typ string
	if d.Command, hasCommand, err = str("command"); err != nil {
		return bad("command", "%v", err)
	}
	if d.URL, hasURL, err = str("url"); err != nil {
		return bad("url", "%v", err)
	}
	if typ, _, err = str("type"); err != nil {
		return bad("type", "%v", err)
	}
	switch {
	case hasCommand && hasURL:
		return bad("url", "command and url are mutually exclusive")
	case !hasCommand && !hasURL:
		return bad("command", "a server needs a command (stdio) or a url (http, sse)")
	}
	if typ == "" {
		typ = "stdio"
		if hasURL {
			typ = "http"
		}
	}
	if typ == "streamable-http" || typ == "streamableHttp" {
		typ = "http"
	}
	if typ != "stdio" && typ != "http" && typ != "sse" {
		return bad("type", "unknown transport %q", typ)
	}
	d.Transport = typ
	if typ == "stdio" && d.Command == "" {
		return bad("command", "must be a non-empty string")
	}
	if typ != "stdio" && d.URL == "" {
		return bad("url", "must be a non-empty string")
	}
	if v, ok := m["args"]; ok {
		if json.Unmarshal(v, &d.Args) != nil {
			return bad("args", "must be a list of strings")
		}
	}
	if d.Env, err = strMap("env"); err != nil {
		return bad("env", "%v", err)
	}
	if d.Headers, err = strMap("headers"); err != nil {
		return bad("headers", "%v", err)
	}
	if d.Cwd, _, err = str("cwd"); err != nil {
		return bad("cwd", "%v", err)
	}
	if d.Enabled, err = boolean("enabled", true); err != nil {
		return bad("enabled", "%v", err)
	}
	if d.RequiresApproval, err = boolean("requiresApproval", true); err != nil {
		return bad("requiresApproval", "%v", err)
	}
	for _, k := range []string{"timeout", "toolTimeout"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		var ms float64
		if json.Unmarshal(v, &ms) != nil || ms < 0 {
			return bad(k, "must be a number of milliseconds >= 0")
		}
		if k == "timeout" {
			d.TimeoutMs = int64(ms)
		} else {
			t := int64(ms)
			d.ToolTimeoutMs = &t
		}
	}
	d.Command = expand(d.Command, lookup)
	d.URL = expand(d.URL, lookup)
	d.Cwd = expand(d.Cwd, lookup)
	for i, a := range d.Args {
		d.Args[i] = expand(a, lookup)
	}
	for k, v := range d.Env {
		d.Env[k] = expand(v, lookup)
	}
	for k, v := range d.Headers {
		d.Headers[k] = expand(v, lookup)
	}
	return d, ignored, "", nil
}

// flatten joins the content of a tool result the way a chat host shows it:
// text blocks verbatim, other blocks as their JSON; with no content, the
// JSON of structuredContent.
func flatten(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, t.Text)
			continue
		}
		b, _ := json.Marshal(c)
		parts = append(parts, string(b))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	return strings.Join(parts, "\n")
}

// tail keeps the last bytes written to it (a server's stderr).
type tail struct {
	mu  sync.Mutex
	buf []byte
	cut bool // older bytes were dropped
}

const tailMax = 4096

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailMax:]...)
		t.cut = true
	}
	return len(p), nil
}

// String returns the tail, trimmed and made valid UTF-8. A cut tail
// begins at a character: the continuation bytes it starts with are
// dropped, not shown as U+FFFD.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	for i := 0; t.cut && i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	// A read of the pipe may end inside a character whose other bytes
	// are still on their way: leave that incomplete last one out.
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if c := b[len(b)-i]; utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				b = b[:len(b)-i]
			}
			break
		}
	}
	return strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD")
}
