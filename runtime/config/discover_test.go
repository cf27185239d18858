package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type dirs struct{ project, home, extra string }

func newDirs(t *testing.T) dirs {
	return dirs{project: t.TempDir(), home: t.TempDir(), extra: filepath.Join(t.TempDir(), "extra.json")}
}

func (d dirs) opts() Options {
	return Options{ProjectDir: d.project, HomeDir: d.home, Env: envOf()}
}

// TestDiscoverPrecedence defines "x" in every source from position k on and
// checks that source k wins and all later ones are shadowed, in order.
func TestDiscoverPrecedence(t *testing.T) {
	type spec struct {
		label string
		want  func(d dirs) Source
	}
	specs := []spec{
		{"inline", func(d dirs) Source { return Source{Level: LevelInline, Provider: "inline"} }},
		{"explicit", func(d dirs) Source { return Source{File: d.extra, Level: LevelUser, Provider: "host"} }},
		{"mcplife-project", func(d dirs) Source {
			return Source{File: filepath.Join(d.project, ".mcplife", "mcp.json"), Level: LevelProject, Provider: "mcplife"}
		}},
		{"mcplife-user", func(d dirs) Source {
			return Source{File: filepath.Join(d.home, ".mcplife", "mcp.json"), Level: LevelUser, Provider: "mcplife"}
		}},
		{"claude-project", func(d dirs) Source {
			return Source{File: filepath.Join(d.project, ".mcp.json"), Level: LevelProject, Provider: "claude"}
		}},
		{"claude-local", func(d dirs) Source {
			return Source{File: filepath.Join(d.home, ".claude.json"), Level: LevelUser, Provider: "claude"}
		}},
		{"claude-user", func(d dirs) Source {
			return Source{File: filepath.Join(d.home, ".claude.json"), Level: LevelUser, Provider: "claude"}
		}},
		{"cursor-project", func(d dirs) Source {
			return Source{File: filepath.Join(d.project, ".cursor", "mcp.json"), Level: LevelProject, Provider: "cursor"}
		}},
		{"cursor-user", func(d dirs) Source {
			return Source{File: filepath.Join(d.home, ".cursor", "mcp.json"), Level: LevelUser, Provider: "cursor"}
		}},
		{"vscode-project", func(d dirs) Source {
			return Source{File: filepath.Join(d.project, ".vscode", "mcp.json"), Level: LevelProject, Provider: "vscode"}
		}},
		{"root-mcp.json", func(d dirs) Source {
			return Source{File: filepath.Join(d.project, "mcp.json"), Level: LevelProject, Provider: "mcp.json"}
		}},
	}
	entry := func(label string) map[string]any {
		return map[string]any{"type": "http", "url": "https://example.com/" + label}
	}
	for k := range specs {
		t.Run(specs[k].label, func(t *testing.T) {
			d := newDirs(t)
			opts := d.opts()
			files := map[string]map[string]any{}
			put := func(path, key string, v map[string]any) {
				if files[path] == nil {
					files[path] = map[string]any{}
				}
				files[path][key] = v
			}
			claude := map[string]any{}
			for i := k; i < len(specs); i++ {
				label := specs[i].label
				servers := map[string]any{"x": entry(label), "only-" + label: entry(label)}
				switch label {
				case "inline":
					opts.Inline = map[string]json.RawMessage{}
					for n, v := range servers {
						b, _ := json.Marshal(v)
						opts.Inline[n] = b
					}
				case "explicit":
					opts.Files = []File{{Path: d.extra, Level: LevelUser, Provider: "host"}}
					put(d.extra, "mcpServers", servers)
				case "mcplife-project":
					put(specs[i].want(d).File, "servers", servers) // our files accept "servers"
				case "claude-local":
					claude["projects"] = map[string]any{d.project: map[string]any{"mcpServers": servers}, "/elsewhere": map[string]any{"mcpServers": map[string]any{"x": entry("elsewhere")}}}
				case "claude-user":
					claude["mcpServers"] = servers
				case "vscode-project":
					put(specs[i].want(d).File, "servers", servers)
				default:
					put(specs[i].want(d).File, "mcpServers", servers)
				}
			}
			if len(claude) > 0 {
				claude["numStartups"] = 3 // unrelated keys are ignored
				files[filepath.Join(d.home, ".claude.json")] = claude
			}
			for path, v := range files {
				writeJSON(t, path, v)
			}
			res, err := Discover(opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Diagnostics) > 0 {
				t.Fatalf("unexpected diagnostics:\n%s", diagStrings(res.Diagnostics))
			}
			x := byName(res.Servers, "x")
			if x == nil {
				t.Fatalf("x not loaded; servers %s", serverNames(res.Servers))
			}
			if got, want := x.Source, specs[k].want(d); got != want {
				t.Errorf("x from %+v, want %+v", got, want)
			}
			if x.URL != "https://example.com/"+specs[k].label {
				t.Errorf("x.URL = %s", x.URL)
			}
			// Every later source is shadowed, in priority order.
			var shadowed []Source
			for _, s := range res.Shadowed {
				if s.Name != "x" {
					t.Errorf("unexpected shadowed %+v", s)
				}
				if s.Winner != specs[k].want(d) {
					t.Errorf("shadowed winner %+v", s.Winner)
				}
				shadowed = append(shadowed, s.Shadowed)
			}
			if len(shadowed) != len(specs)-k-1 {
				t.Fatalf("%d shadowed, want %d: %+v", len(shadowed), len(specs)-k-1, shadowed)
			}
			for i, s := range shadowed {
				if want := specs[k+1+i].want(d); s != want {
					t.Errorf("shadowed[%d] = %+v, want %+v", i, s, want)
				}
			}
			// Each source's own server loads; nothing from another project's entry.
			if len(res.Servers) != len(specs)-k+1 {
				t.Errorf("servers %s", serverNames(res.Servers))
			}
			for i := k; i < len(specs); i++ {
				if s := byName(res.Servers, "only-"+specs[i].label); s == nil || s.Source != specs[i].want(d) {
					t.Errorf("only-%s: %+v", specs[i].label, s)
				}
			}
			for i := 1; i < len(res.Servers); i++ {
				if res.Servers[i-1].Name >= res.Servers[i].Name {
					t.Errorf("servers not sorted: %s", serverNames(res.Servers))
				}
			}
		})
	}
}

func TestDiscoverMalformedFileOthersLoad(t *testing.T) {
	d := newDirs(t)
	bad := writeFile(t, filepath.Join(d.project, ".mcp.json"), "{\n  \"mcpServers\": {\n    \"a\": {\"command\": x}\n  }\n}\n")
	writeJSON(t, filepath.Join(d.home, ".mcplife", "mcp.json"), map[string]any{"mcpServers": map[string]any{"good": map[string]any{"command": "ok"}}})
	writeJSON(t, filepath.Join(d.project, "mcp.json"), map[string]any{"mcpServers": map[string]any{"also": map[string]any{"command": "ok"}}})
	res, err := Discover(d.opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := serverNames(res.Servers); got != "also,good" {
		t.Errorf("servers %s", got)
	}
	if len(res.Diagnostics) != 1 {
		t.Fatalf("diagnostics:\n%s", diagStrings(res.Diagnostics))
	}
	diag := res.Diagnostics[0]
	if diag.File != bad || diag.Line != 3 || diag.Column != 22 || diag.Severity != SeverityError {
		t.Errorf("diag = %+v", diag)
	}
	if want := bad + ":3:22: malformed JSON"; !strings.HasPrefix(diag.Error(), want) {
		t.Errorf("Error() = %q, want prefix %q", diag.Error(), want)
	}
	mustIs(t, &diag, ErrMalformedJSON)
	var se *json.SyntaxError
	if !errors.As(&diag, &se) {
		t.Error("no *json.SyntaxError in chain")
	}
}

func TestDiscoverFileProblems(t *testing.T) {
	tests := []struct {
		name, text, field, msg string
		line, col              int
	}{
		{"top-level array", "[1]", "", "top-level value must be an object, got array", 1, 1},
		{"top-level string", `"x"`, "", "got string", 1, 1},
		{"mcpServers not object", "{\n  \"mcpServers\": [1]\n}", "mcpServers", "must be an object", 2, 17},
		{"servers not object", `{"servers": "no"}`, "servers", "got string", 1, 13},
		{"unexpected end", "{\"mcpServers\": {", "", "malformed JSON", 1, 16},
		{"unterminated comment", "{ /* x", "", "malformed JSON", 1, 3},
		// A comma after the top-level value is not a trailing comma: there is
		// no } or ] after it.
		{"comma after the value", "{\"mcpServers\": {}},\n", "", "malformed JSON", 1, 19},
		{"comma at the end", "{\"mcpServers\": {}},", "", "malformed JSON", 1, 19},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDirs(t)
			path := writeFile(t, filepath.Join(d.home, ".mcplife", "mcp.json"), tt.text)
			writeJSON(t, filepath.Join(d.home, ".cursor", "mcp.json"), map[string]any{"mcpServers": map[string]any{"c": map[string]any{"command": "c"}}})
			res, err := Discover(d.opts())
			if err != nil {
				t.Fatal(err)
			}
			if serverNames(res.Servers) != "c" {
				t.Errorf("servers %s", serverNames(res.Servers))
			}
			if len(res.Diagnostics) != 1 {
				t.Fatalf("diagnostics:\n%s", diagStrings(res.Diagnostics))
			}
			dg := res.Diagnostics[0]
			if dg.File != path || dg.Field != tt.field || !strings.Contains(dg.Message, tt.msg) || dg.Line != tt.line || dg.Column != tt.col || dg.Severity != SeverityError {
				t.Errorf("got %+v", dg)
			}
		})
	}
}

func TestDiscoverMissingAndUnreadable(t *testing.T) {
	d := newDirs(t)
	// Nothing exists: no servers, no diagnostics.
	res, err := Discover(d.opts())
	if err != nil || len(res.Servers)+len(res.Diagnostics) != 0 {
		t.Fatalf("empty dirs: %v %+v", err, res)
	}
	// ~/.cursor is a file, so ~/.cursor/mcp.json cannot exist: still silent.
	writeFile(t, filepath.Join(d.home, ".cursor"), "not a dir")
	// A directory where a file should be cannot be read: a diagnostic.
	if err := os.MkdirAll(filepath.Join(d.project, "mcp.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d.project, ".mcp.json"), "") // empty file: nothing, silently
	res, err = Discover(d.opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diagnostics) != 1 {
		t.Fatalf("diagnostics:\n%s", diagStrings(res.Diagnostics))
	}
	dg := res.Diagnostics[0]
	if dg.File != filepath.Join(d.project, "mcp.json") || dg.Severity != SeverityError || !strings.Contains(dg.Message, "cannot read") || dg.Err == nil {
		t.Errorf("got %+v", dg)
	}

	// With SkipProjectConfig the unreadable project file is not reported, but
	// an unreadable user-level file still is.
	if err := os.MkdirAll(filepath.Join(d.home, ".mcplife", "mcp.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := d.opts()
	opts.SkipProjectConfig = true
	res, err = Discover(opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diagnostics) != 1 {
		t.Fatalf("SkipProjectConfig: diagnostics:\n%s", diagStrings(res.Diagnostics))
	}
	dg = res.Diagnostics[0]
	if dg.File != filepath.Join(d.home, ".mcplife", "mcp.json") || dg.Severity != SeverityError || !strings.Contains(dg.Message, "cannot read") || dg.Err == nil {
		t.Errorf("SkipProjectConfig: got %+v", dg)
	}
}

func TestDiscoverDisabled(t *testing.T) {
	d := newDirs(t)
	writeJSON(t, filepath.Join(d.project, ".mcplife", "mcp.json"), map[string]any{"mcpServers": map[string]any{
		"off":  map[string]any{"command": "o", "enabled": false},
		"hide": map[string]any{"command": "h", "enabled": false},
		"on":   map[string]any{"command": "n", "enabled": true},
	}})
	// A lower-priority enabled definition of "hide" stays hidden: the winner is disabled.
	writeJSON(t, filepath.Join(d.home, ".claude.json"), map[string]any{"mcpServers": map[string]any{
		"hide": map[string]any{"command": "h2"},
	}})
	res, err := Discover(d.opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := serverNames(res.Servers); got != "on" {
		t.Errorf("servers %s", got)
	}
	if got := serverNames(res.Disabled); got != "hide,off" {
		t.Errorf("disabled %s", got)
	}
	if s := byName(res.Disabled, "off"); s.Source.File != filepath.Join(d.project, ".mcplife", "mcp.json") || s.Enabled {
		t.Errorf("off: %+v", s)
	}
	if len(res.Shadowed) != 1 || res.Shadowed[0].Name != "hide" {
		t.Errorf("shadowed %+v", res.Shadowed)
	}
}

func TestDiscoverInvalidWinnerHidesLowerDefinition(t *testing.T) {
	d := newDirs(t)
	proj := writeJSON(t, filepath.Join(d.project, ".mcplife", "mcp.json"), map[string]any{"mcpServers": map[string]any{
		"x": map[string]any{"command": "a", "url": "https://b"},
	}})
	user := writeJSON(t, filepath.Join(d.home, ".mcplife", "mcp.json"), map[string]any{"mcpServers": map[string]any{
		"x": map[string]any{"command": "fallback"},
	}})
	res, err := Discover(d.opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) != 0 {
		t.Errorf("servers %s", serverNames(res.Servers))
	}
	if len(res.Shadowed) != 1 || res.Shadowed[0].Winner.File != proj || res.Shadowed[0].Shadowed.File != user {
		t.Errorf("shadowed %+v", res.Shadowed)
	}
	if ds := findDiag(res.Diagnostics, "x", "url"); len(ds) != 1 || ds[0].File != proj {
		t.Errorf("diagnostics:\n%s", diagStrings(res.Diagnostics))
	}
}

func TestDiscoverSkipProjectConfig(t *testing.T) {
	d := newDirs(t)
	writeJSON(t, filepath.Join(d.project, ".mcplife", "mcp.json"), map[string]any{"mcpServers": map[string]any{
		"x":  map[string]any{"command": "project"},
		"p1": map[string]any{"command": "p"},
	}})
	writeFile(t, filepath.Join(d.project, ".mcp.json"), "{broken") // not reported: project config is off
	writeJSON(t, filepath.Join(d.project, ".vscode", "mcp.json"), map[string]any{"servers": map[string]any{
		"v": map[string]any{"type": "http", "url": "https://v"},
	}})
	writeJSON(t, filepath.Join(d.home, ".cursor", "mcp.json"), map[string]any{"mcpServers": map[string]any{
		"x": map[string]any{"command": "user"},
	}})
	opts := d.opts()
	opts.SkipProjectConfig = true
	res, err := Discover(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := serverNames(res.Servers); got != "x" || res.Servers[0].Command != "user" || res.Servers[0].Source.Level != LevelUser {
		t.Errorf("servers %s %+v", got, res.Servers)
	}
	if got := serverNames(res.Dropped); got != "p1,x,v" {
		t.Errorf("dropped %s", got)
	}
	for _, s := range res.Dropped {
		if s.Source.Level != LevelProject {
			t.Errorf("dropped %s at level %s", s.Name, s.Source.Level)
		}
	}
	if len(res.Diagnostics)+len(res.Shadowed) != 0 {
		t.Errorf("diagnostics %s shadowed %+v", diagStrings(res.Diagnostics), res.Shadowed)
	}

	// Without the switch the project wins and the broken file is reported.
	opts.SkipProjectConfig = false
	res, _ = Discover(opts)
	if s := byName(res.Servers, "x"); s == nil || s.Command != "project" {
		t.Errorf("x = %+v", s)
	}
	if len(res.Diagnostics) != 1 {
		t.Errorf("diagnostics:\n%s", diagStrings(res.Diagnostics))
	}
}

func TestDiscoverProjectIsHome(t *testing.T) {
	home := t.TempDir()
	writeJSON(t, filepath.Join(home, ".mcplife", "mcp.json"), map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": "a"}}})
	writeJSON(t, filepath.Join(home, ".cursor", "mcp.json"), map[string]any{"mcpServers": map[string]any{"c": map[string]any{"command": "c"}}})
	res, err := Discover(Options{ProjectDir: home, HomeDir: home, Env: envOf()})
	if err != nil {
		t.Fatal(err)
	}
	if serverNames(res.Servers) != "a,c" || len(res.Shadowed) != 0 {
		t.Fatalf("servers %s shadowed %+v", serverNames(res.Servers), res.Shadowed)
	}
	for _, s := range res.Servers {
		if s.Source.Level != LevelUser {
			t.Errorf("%s: level %s, want user (the file is the user's own)", s.Name, s.Source.Level)
		}
	}
}

func TestDiscoverInline(t *testing.T) {
	d := newDirs(t)
	opts := d.opts()
	opts.Inline = map[string]json.RawMessage{
		"ok":      json.RawMessage(`{"command": "x"}`),
		"broken":  json.RawMessage(`{"command": `),
		"invalid": json.RawMessage(`{"type": "http"}`),
		"bad!":    json.RawMessage(`{"command": "x"}`),
	}
	res, err := Discover(opts)
	if err != nil {
		t.Fatal(err)
	}
	if serverNames(res.Servers) != "ok" || res.Servers[0].Source != (Source{Level: LevelInline, Provider: "inline"}) {
		t.Errorf("servers %+v", res.Servers)
	}
	if len(findDiag(res.Diagnostics, "broken", "")) != 1 || len(findDiag(res.Diagnostics, "invalid", "url")) != 1 || len(findDiag(res.Diagnostics, "bad!", "name")) != 1 {
		t.Errorf("diagnostics:\n%s", diagStrings(res.Diagnostics))
	}
	for _, dg := range res.Diagnostics {
		if dg.File != "" || dg.Line != 0 {
			t.Errorf("inline diagnostic with a position: %+v", dg)
		}
	}
}

func TestDiscoverOptionErrors(t *testing.T) {
	d := newDirs(t)
	for _, f := range []File{{Path: ""}, {Path: d.extra, Level: "global"}, {Path: d.extra}} {
		opts := d.opts()
		opts.Files = []File{f}
		if _, err := Discover(opts); err == nil {
			t.Errorf("Files %+v: no error", f)
		}
	}
	opts := d.opts()
	opts.Files = []File{{Path: d.extra, Level: LevelProject}}
	writeJSON(t, d.extra, map[string]any{"mcpServers": map[string]any{"e": map[string]any{"command": "e"}}})
	res, err := Discover(opts)
	if err != nil {
		t.Fatal(err)
	}
	if s := byName(res.Servers, "e"); s == nil || s.Source != (Source{File: d.extra, Level: LevelProject, Provider: "mcplife"}) {
		t.Errorf("e = %+v", s)
	}
}

func TestDiscoverTimeoutOverride(t *testing.T) {
	d := newDirs(t)
	writeJSON(t, filepath.Join(d.home, ".mcplife", "mcp.json"), map[string]any{"mcpServers": map[string]any{
		"plain": map[string]any{"command": "p"},
		"own":   map[string]any{"command": "o", "timeout": 5000},
		"off":   map[string]any{"command": "o", "timeout": 0},
	}})
	tests := []struct {
		env             []string
		plain, own, off time.Duration
		warnings        int
	}{
		{nil, DefaultConnectTimeout, 5 * time.Second, NoTimeout, 0},
		{[]string{TimeoutEnvVar, "1500"}, 1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond, 0},
		{[]string{TimeoutEnvVar, "0"}, NoTimeout, NoTimeout, NoTimeout, 0},
		{[]string{TimeoutEnvVar, "soon"}, DefaultConnectTimeout, 5 * time.Second, NoTimeout, 1},
		{[]string{TimeoutEnvVar, "-5"}, DefaultConnectTimeout, 5 * time.Second, NoTimeout, 1},
		// The largest number of milliseconds a time.Duration holds is accepted;
		// one more does not fit and is ignored.
		{[]string{TimeoutEnvVar, "9223372036854"}, 9223372036854 * time.Millisecond, 9223372036854 * time.Millisecond, 9223372036854 * time.Millisecond, 0},
		{[]string{TimeoutEnvVar, "9223372036855"}, DefaultConnectTimeout, 5 * time.Second, NoTimeout, 1},
	}
	for _, tt := range tests {
		opts := d.opts()
		opts.Env = envOf(tt.env...)
		res, err := Discover(opts)
		if err != nil {
			t.Fatal(err)
		}
		got := func(n string) time.Duration { return byName(res.Servers, n).ConnectTimeout() }
		if got("plain") != tt.plain || got("own") != tt.own || got("off") != tt.off {
			t.Errorf("env %v: plain %v own %v off %v", tt.env, got("plain"), got("own"), got("off"))
		}
		if len(res.Diagnostics) != tt.warnings {
			t.Errorf("env %v: diagnostics:\n%s", tt.env, diagStrings(res.Diagnostics))
		}
		for _, dg := range res.Diagnostics {
			if dg.Severity != SeverityWarning || dg.Field != TimeoutEnvVar {
				t.Errorf("diag %+v", dg)
			}
		}
	}
}

func TestDiscoverDefaultHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	writeJSON(t, filepath.Join(home, ".mcplife", "mcp.json"), map[string]any{"mcpServers": map[string]any{"h": map[string]any{"command": "h"}}})
	res, err := Discover(Options{Env: envOf()})
	if err != nil {
		t.Fatal(err)
	}
	if serverNames(res.Servers) != "h" || len(res.Diagnostics) != 0 {
		t.Errorf("servers %s, diagnostics:\n%s", serverNames(res.Servers), diagStrings(res.Diagnostics))
	}
}

// TestDiscoverNoHome checks that without a home directory the user-level
// files are skipped with one warning and the project files still load.
func TestDiscoverNoHome(t *testing.T) {
	t.Setenv("HOME", "")
	project := t.TempDir()
	writeJSON(t, filepath.Join(project, ".mcp.json"), map[string]any{"mcpServers": map[string]any{"p": map[string]any{"command": "p"}}})
	res, err := Discover(Options{ProjectDir: project, Env: envOf()})
	if err != nil {
		t.Fatal(err)
	}
	if serverNames(res.Servers) != "p" {
		t.Errorf("servers %s", serverNames(res.Servers))
	}
	if len(res.Diagnostics) != 1 {
		t.Fatalf("diagnostics:\n%s", diagStrings(res.Diagnostics))
	}
	if dg := res.Diagnostics[0]; dg.Severity != SeverityWarning || dg.File != "" || dg.Err == nil || !strings.HasPrefix(dg.Message, "user-level config skipped: ") {
		t.Errorf("got %+v", dg)
	}
}

// TestDiscoverRelativeDirs checks that relative ProjectDir and HomeDir are
// taken from the working directory and that sources carry absolute paths.
func TestDiscoverRelativeDirs(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	writeJSON(t, filepath.Join(root, "home", ".mcplife", "mcp.json"), map[string]any{"mcpServers": map[string]any{"u": map[string]any{"command": "u"}}})
	writeJSON(t, filepath.Join(root, "proj", ".mcp.json"), map[string]any{"mcpServers": map[string]any{"p": map[string]any{"command": "p"}}})
	res, err := Discover(Options{ProjectDir: "proj", HomeDir: "home", Env: envOf()})
	if err != nil {
		t.Fatal(err)
	}
	if serverNames(res.Servers) != "p,u" || len(res.Diagnostics) != 0 {
		t.Fatalf("servers %s, diagnostics:\n%s", serverNames(res.Servers), diagStrings(res.Diagnostics))
	}
	for _, tc := range []struct{ name, rel string }{{"p", filepath.Join("proj", ".mcp.json")}, {"u", filepath.Join("home", ".mcplife", "mcp.json")}} {
		file := byName(res.Servers, tc.name).Source.File
		if !filepath.IsAbs(file) || !strings.HasSuffix(file, string(filepath.Separator)+tc.rel) {
			t.Errorf("%s: Source.File = %q, want the absolute path of %s", tc.name, file, tc.rel)
			continue
		}
		a, errA := os.Stat(file)
		b, errB := os.Stat(filepath.Join(root, tc.rel))
		if errA != nil || errB != nil || !os.SameFile(a, b) {
			t.Errorf("%s: Source.File = %q is not %s", tc.name, file, filepath.Join(root, tc.rel))
		}
	}
}

// TestDiscoverClaudeProjectEntry checks the projects entry of ~/.claude.json:
// it is found by the project's absolute path, also when the project is opened
// through a symlink and the entry names the real directory; it is read once;
// and diagnostics about it name the entry.
func TestDiscoverClaudeProjectEntry(t *testing.T) {
	realDir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(realDir, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		projectDir string
		text       string // ~/.claude.json; %[1]q is the real project dir
		servers    string
		field, msg string
		sev        Severity
		line       int // of the one diagnostic; 0: no diagnostic
	}{
		{name: "real path", projectDir: realDir, text: `{"projects": {%[1]q: {"mcpServers": {"c": {"command": "c"}}}}}`, servers: "c"},
		{name: "through a symlink", projectDir: link, text: `{"projects": {%[1]q: {"mcpServers": {"c": {"command": "c"}}}}}`, servers: "c"},
		{name: "not an object", projectDir: realDir, text: "{\n  \"projects\": {%[1]q: {\n    \"mcpServers\": [1]}},\n  \"mcpServers\": {\"u\": {\"command\": \"u\"}}\n}",
			servers: "u", field: fmt.Sprintf("projects[%q].mcpServers", realDir), msg: "must be an object mapping server names to entries, got array", sev: SeverityError, line: 3},
		{name: "repeated name", projectDir: realDir, text: "{\"projects\": {%[1]q: {\"mcpServers\": {\n  \"c\": {\"command\": \"1\"},\n  \"c\": {\"command\": \"2\"}}}}}",
			servers: "", field: "name", msg: fmt.Sprintf("defined more than once in projects[%q].mcpServers (first at line 2, column 3; readers disagree on which one counts, so no definition of this name is loaded)", realDir), sev: SeverityError, line: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			path := writeFile(t, filepath.Join(home, ".claude.json"), fmt.Sprintf(tt.text, realDir))
			res, err := Discover(Options{ProjectDir: tt.projectDir, HomeDir: home, Env: envOf()})
			if err != nil {
				t.Fatal(err)
			}
			if got := serverNames(res.Servers); got != tt.servers || len(res.Shadowed) != 0 {
				t.Errorf("servers %s, shadowed %+v", got, res.Shadowed)
			}
			for _, s := range res.Servers {
				if s.Source != (Source{File: path, Level: LevelUser, Provider: "claude"}) {
					t.Errorf("%s: source %+v", s.Name, s.Source)
				}
			}
			if tt.line == 0 {
				if len(res.Diagnostics) != 0 {
					t.Errorf("diagnostics:\n%s", diagStrings(res.Diagnostics))
				}
				return
			}
			if len(res.Diagnostics) != 1 {
				t.Fatalf("diagnostics:\n%s", diagStrings(res.Diagnostics))
			}
			dg := res.Diagnostics[0]
			if dg.File != path || dg.Field != tt.field || dg.Message != tt.msg || dg.Severity != tt.sev || dg.Line != tt.line {
				t.Errorf("got %+v", dg)
			}
		})
	}
}

// TestDiscoverOnlyFiles checks that OnlyFiles reads the given files and no
// project or user file, even when ProjectDir and HomeDir are set.
func TestDiscoverOnlyFiles(t *testing.T) {
	d := newDirs(t)
	writeJSON(t, filepath.Join(d.project, ".mcp.json"), map[string]any{"mcpServers": map[string]any{"proj": map[string]any{"command": "p"}}})
	writeJSON(t, filepath.Join(d.home, ".claude.json"), map[string]any{"mcpServers": map[string]any{"user": map[string]any{"command": "u"}}})
	writeJSON(t, d.extra, map[string]any{"mcpServers": map[string]any{"given": map[string]any{"command": "g"}}})
	opts := d.opts()
	opts.Files = []File{{Path: d.extra, Level: LevelUser}, {Path: d.extra, Level: LevelUser}}
	opts.OnlyFiles = true
	res, err := Discover(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := serverNames(res.Servers); got != "given" || len(res.Shadowed) != 0 || len(res.Diagnostics) != 0 {
		t.Errorf("servers %s, shadowed %v, diagnostics %v", got, res.Shadowed, res.Diagnostics)
	}
	opts.OnlyFiles = false
	res, err = Discover(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := serverNames(res.Servers); got != "given,proj,user" {
		t.Errorf("without OnlyFiles: servers %s", got)
	}
}
