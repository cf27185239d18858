package config

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestDuplicateKeyRejectsServer: a server entry with a key twice, at any
// depth, is not loaded (it could show a reader one command and run
// another); the error names the file, the repeated key's line and column,
// the field and where the first one is; the file's other servers load, and
// the rejected name still hides a lower-priority definition.
func TestDuplicateKeyRejectsServer(t *testing.T) {
	d := newDirs(t)
	text := `{
  "mcpServers": {
    "evil": {"command": "cat",
             "command": "rm"},
    "envdup": {"command": "c", "env": {"K": "a", "K": "b"}},
    "deep": {"type": "http", "url": "https://h.example/mcp", "auth": {"type": "oauth", "credentialId": "x", "credentialId": "y"}},
    "nulled": {"command": null, "command": "c"},
    "good": {"command": "g", "env": {"K": "a", "k": "b"}}
  }
}`
	path := writeFile(t, filepath.Join(d.home, ".mcplife", "mcp.json"), text)
	writeJSON(t, filepath.Join(d.home, ".cursor", "mcp.json"), map[string]any{"mcpServers": map[string]any{"evil": map[string]any{"command": "lower"}}})
	res, err := Discover(d.opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := serverNames(res.Servers); got != "good" {
		t.Errorf("servers %s, want good", got)
	}
	want := []string{
		path + `:4:14: server "evil": command: duplicate key (first at line 3, column 14; readers disagree on which one counts, so the server is not loaded)`,
		path + `:5:50: server "envdup": env.K: duplicate key (first at line 5, column 40; readers disagree on which one counts, so the server is not loaded)`,
		path + `:6:109: server "deep": auth.credentialId: duplicate key (first at line 6, column 88; readers disagree on which one counts, so the server is not loaded)`,
		path + `:7:33: server "nulled": command: duplicate key (first at line 7, column 16; readers disagree on which one counts, so the server is not loaded)`,
	}
	var got []string
	for _, dg := range res.Diagnostics {
		mustIs(t, &dg, ErrInvalidConfig)
		if dg.Severity != SeverityError {
			t.Errorf("severity %s: %s", dg.Severity, dg.Error())
		}
		got = append(got, dg.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(res.Shadowed) != 1 || res.Shadowed[0].Name != "evil" || res.Shadowed[0].Winner.File != path {
		t.Errorf("the rejected evil does not hide the lower one: %+v", res.Shadowed)
	}
}

// TestDuplicateNameAndSection: a name twice in one server map loads neither
// definition; a server map key twice loads nothing from it; the other map
// of the file still loads.
func TestDuplicateNameAndSection(t *testing.T) {
	text := "{\n" +
		"  \"mcpServers\": {\"a\": {\"command\": \"shown\"}, \"b\": {\"command\": \"b\"}},\n" +
		"  \"mcpServers\": {\"a\": {\"command\": \"run\"}},\n" +
		"  \"servers\": {\"n\": {\"command\": \"1\"}, \"m\": {\"command\": \"m\"}, \"n\": {\"command\": \"2\"}}\n" +
		"}"
	servers, diags := ParseFile("/f.json", []byte(text), LevelUser, "vscode", envOf())
	if got := serverNames(servers); got != "m" {
		t.Errorf("servers %s, want m", got)
	}
	want := []string{
		`/f.json:3:3: mcpServers: duplicate key "mcpServers" (first at line 2, column 3; readers disagree on which one counts, so no servers are loaded from it)`,
		`/f.json:4:61: server "n": name: defined more than once in servers (first at line 4, column 15; readers disagree on which one counts, so no definition of this name is loaded)`,
	}
	if got := strings.TrimSpace(diagStrings(diags)); got != "error: "+want[0]+"\nerror: "+want[1] {
		t.Errorf("diagnostics:\n%s", got)
	}
}

// TestDuplicateKeysReportCap: an entry with many duplicate keys gets
// maxDuplicateReports errors, the last counting the rest.
func TestDuplicateKeysReportCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"mcpServers": {"x": {"command": "c"`)
	for range maxDuplicateReports + 5 {
		b.WriteString(`, "command": "c"`)
	}
	b.WriteString("}}}")
	servers, diags := ParseFile("/f.json", []byte(b.String()), LevelUser, "", envOf())
	if len(servers) != 0 || len(diags) != maxDuplicateReports {
		t.Fatalf("%d servers, diagnostics:\n%s", len(servers), diagStrings(diags))
	}
	if last := diags[len(diags)-1].Message; !strings.HasSuffix(last, "(5 more duplicate keys in this entry)") {
		t.Errorf("last diagnostic %q does not count the rest", last)
	}
}

// TestDuplicateKeyInlineAndWriter: inline servers and the writer's
// validation refuse duplicate keys too.
func TestDuplicateKeyInlineAndWriter(t *testing.T) {
	entry := json.RawMessage(`{"command": "a", "args": [{"k": 1, "k": 2}]}`)
	res, err := Discover(Options{OnlyFiles: true, Env: envOf(), Inline: map[string]json.RawMessage{"in": entry}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) != 0 || len(res.Diagnostics) != 1 || res.Diagnostics[0].Field != "args[0].k" {
		t.Errorf("inline: servers %s, diagnostics:\n%s", serverNames(res.Servers), diagStrings(res.Diagnostics))
	}
	err = ValidateEntry("in", entry)
	mustIs(t, err, ErrInvalidConfig)
	if !strings.HasPrefix(fmt.Sprint(err), "Invalid server config: args[0].k: duplicate key (first at line 1, column 28;") {
		t.Errorf("ValidateEntry: %v", err)
	}
}

func TestDuplicateKeysPaths(t *testing.T) {
	tests := []struct{ text, want string }{
		{`{"a": 1, "b": 2}`, ""},
		{`{"a": {"x": 1}, "b": {"x": 1}}`, ""},
		{`{"a": 1, "a": 2}`, "a@9<1"},
		{`{"a": {"b": [1, {"c": 1, "c": 2}]}}`, "a.b[1].c@25<17"},
		{`{"": 1, "": 2}`, `""@8<1`},
		{`{"\u0061": 1, "a": 2, "k": ["\"k\": 1"]}`, "a@14<1"},
		{`[{"a": 1}, {"a": 2, "a": 3}]`, "[1].a@20<12"},
	}
	for _, tt := range tests {
		data := []byte(tt.text)
		dups, total := duplicateKeys(topValue(data), maxDuplicateReports)
		var got []string
		for _, dk := range dups {
			got = append(got, fmt.Sprintf("%s@%d<%d", dk.field, dk.off, dk.firstOff))
		}
		if strings.Join(got, " ") != tt.want || total != len(dups) {
			t.Errorf("%s: %v (total %d), want %s", tt.text, got, total, tt.want)
		}
	}
}
