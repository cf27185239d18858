package main

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/redact"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/scenarios/repro"
)

// TestRecordRedactsSecrets: a secret expanded from ${VAR} into a stdio
// server's args and env and into a remote server's url query, a literal
// query value, and a tool that echoes the secret: the trace file holds none
// of them anywhere (servers, calls, events, journals), the command and url
// show the references and markers instead, and harness repro still turns
// the trace into a scenario.
func TestRecordRedactsSecrets(t *testing.T) {
	const secret = "sk-test-7Hq2vX9pL4mN8rT1"
	const literal = "sig-literal-0c4f9a2b"
	t.Setenv("MCPLIFE_RECORD_SECRET", secret)
	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fx": map[string]any{"command": exe(t), "args": []string{"fixture", "--token=${MCPLIFE_RECORD_SECRET}"},
			"env": map[string]string{roleEnv: "cli", "GORACE": "atexit_sleep_ms=0", "FX_TOKEN": "${MCPLIFE_RECORD_SECRET}"}},
		"remote": map[string]any{"type": "http", "restart": "never",
			"url": "http://127.0.0.1:1/mcp?api_key=${MCPLIFE_RECORD_SECRET}&sig=" + literal + "&v=1"},
	}})
	cfgFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "session.trace.json")
	code, out, errs := harness(t, "record", "-config", cfgFile, "-o", trace, "-startup-gate", "20s",
		"-call", `fx:echo:{"text":"the token is `+secret+`"}`)
	if code != 0 {
		t.Fatalf("record: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, literal} {
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("the trace holds %q:\n%s", s, data)
		}
	}
	tr, err := repro.Read(trace)
	if err != nil {
		t.Fatal(err)
	}
	wantCmd := []string{exe(t), "fixture", "--token=${MCPLIFE_RECORD_SECRET}"}
	if got := tr.Servers["fx"].Command; strings.Join(got, " ") != strings.Join(wantCmd, " ") {
		t.Errorf("fx command %q, want %q", got, wantCmd)
	}
	if got, want := tr.Servers["remote"].URL, "http://127.0.0.1:1/mcp?api_key=${MCPLIFE_RECORD_SECRET}&sig=[redacted:query.sig]&v=[redacted:query.v]"; got != want {
		t.Errorf("remote url %q, want %q", got, want)
	}
	if len(tr.Calls) != 1 || tr.Calls[0].Outcome != "ok" || !strings.Contains(tr.Calls[0].Text, "the token is ${MCPLIFE_RECORD_SECRET}") {
		t.Errorf("calls %+v: want the echo, redacted", tr.Calls)
	}
	// The proxy's journal saw the secret on the wire and in the upstream
	// command line: the trace keeps the lines, redacted.
	journal, _ := json.Marshal(tr.Journals["fx"])
	if !bytes.Contains(journal, []byte("--token=${MCPLIFE_RECORD_SECRET}")) || !bytes.Contains(journal, []byte("the token is ${MCPLIFE_RECORD_SECRET}")) {
		t.Errorf("the fx journal lacks the redacted upstream and echo:\n%s", journal)
	}

	scen := filepath.Join(dir, "951-recorded-secret.txtar")
	// remote never connected (nothing listens there): the scenario leaves
	// it out, which -partial accepts.
	code, out, errs = harness(t, "repro", "-partial", "-o", scen, trace)
	if code != 0 {
		t.Fatalf("repro of a redacted trace: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if s, err := os.ReadFile(scen); err != nil || !strings.Contains(string(s), "mcp_fx_echo") {
		t.Errorf("scenario %v:\n%s", err, s)
	}
}

// TestTraceSecrets: what counts as a secret of a server, and the markers.
func TestTraceSecrets(t *testing.T) {
	env := map[string]string{"TOKEN": "tok-value-123", "NAMED": "named-value-456", "HOME": "/home/someone", "SHORT": "ab"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	text := `{"mcpServers": {
  "s": {"command": "srv", "args": ["--t=${TOKEN}", "${HOME}/data", "${SHORT}"],
        "env": {"BY_NAME": "NAMED", "API_KEY": "literal-key-789", "LEVEL": "debug-verbose"}},
  "r": {"type": "http", "url": "https://u:url-pass-000@h.example/mcp?k=q-value-111&e=",
        "headers": {"Authorization": "Bearer hdr-token-222"}}}}`
	servers, diags := config.ParseFile("/c.json", []byte(text), config.LevelUser, "", lookup)
	if len(diags) != 0 || len(servers) != 2 {
		t.Fatalf("%d servers, diagnostics %v", len(servers), diags)
	}
	set := traceSecrets(servers, lookup)
	in := "tok-value-123 /home/someone named-value-456 literal-key-789 url-pass-000 q-value-111 Bearer hdr-token-222 hdr-token-222 debug-verbose ab"
	want := "${TOKEN} ${HOME} ${NAMED} [redacted:env.API_KEY] [redacted:url-password] [redacted:query.k] [redacted:header.Authorization] [redacted:header.Authorization] debug-verbose ab"
	if got := set.String(in); got != want {
		t.Errorf("redacted:\n%s\nwant:\n%s", got, want)
	}
	if got := writtenCommand(servers[0], set); strings.Join(got, " ") != "srv --t=${TOKEN} ${HOME}/data ${SHORT}" {
		t.Errorf("command %q", got)
	}
	if got := writtenURL(servers[1], set); got != "https://u:[redacted:url-password]@h.example/mcp?k=[redacted:query.k]&e=" {
		t.Errorf("url %q", got)
	}
	var empty redact.Set
	if empty.String(in) != in {
		t.Error("an empty set changed the text")
	}
}

// FuzzWrittenURL: whatever url a config holds, the url a trace keeps holds
// none of its query values or its password (of redact.MinLen bytes or more).
func FuzzWrittenURL(f *testing.F) {
	f.Add("https://u:pass-word@h.example/mcp?k=q-value-111&e=&k=second-val#frag")
	f.Add("http://h/mcp?api_key=${KEY}&v=abcd")
	f.Add("http://h/?abcd=abcd&%61bcd=x%20yz1")
	f.Add("http://a:b@c:d@h/?=zzzz")
	f.Fuzz(func(t *testing.T, rawURL string) {
		raw, err := json.Marshal(map[string]string{"url": rawURL})
		if err != nil {
			return
		}
		srv := &config.Server{Name: "r", Type: config.HTTP, URL: rawURL, Raw: raw}
		set := traceSecrets([]*config.Server{srv}, func(string) (string, bool) { return "", false })
		got := writtenURL(srv, set)
		u, err := url.Parse(rawURL)
		if err != nil {
			return
		}
		var secrets []string
		if pw, ok := u.User.Password(); ok {
			secrets = append(secrets, pw)
		}
		for _, vs := range u.Query() {
			secrets = append(secrets, vs...)
		}
		for _, v := range secrets {
			if len(v) >= redact.MinLen && strings.Contains(got, v) {
				t.Fatalf("writtenURL(%q) = %q holds %q", rawURL, got, v)
			}
		}
	})
}
