package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleConfig = `{
    "$schema": "https://example.com/schema.json",
    "mcpServers": {
        "zeta": {
            "command": "z",
            "x-note": "keep me"
        },
        "alpha": {"url": "https://a.example/mcp", "type": "http"}
    },
    "other": {"k": [1, 2]}
}
`

func sample(t *testing.T) string {
	t.Helper()
	return writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), sampleConfig)
}

func noTempFiles(t *testing.T, path string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestWriterEdits(t *testing.T) {
	tests := []struct {
		name string
		op   func(path string) error
		want string
	}{
		{"add", func(p string) error {
			return AddServer(p, "mid", json.RawMessage(`{"command": "m", "args": ["-v"]}`))
		}, `{
    "$schema": "https://example.com/schema.json",
    "mcpServers": {
        "zeta": {
            "command": "z",
            "x-note": "keep me"
        },
        "alpha": {"url": "https://a.example/mcp", "type": "http"},
        "mid": {
            "command": "m",
            "args": [
                "-v"
            ]
        }
    },
    "other": {"k": [1, 2]}
}
`},
		{"update keeps key order, drops missing fields", func(p string) error {
			return UpdateServer(p, "zeta", json.RawMessage(`{"args": ["a"], "x-note": "changed", "command": "z2"}`))
		}, `{
    "$schema": "https://example.com/schema.json",
    "mcpServers": {
        "zeta": {
            "command": "z2",
            "x-note": "changed",
            "args": [
                "a"
            ]
        },
        "alpha": {"url": "https://a.example/mcp", "type": "http"}
    },
    "other": {"k": [1, 2]}
}
`},
		{"update to another transport", func(p string) error {
			return UpdateServer(p, "zeta", json.RawMessage(`{"type": "http", "url": "https://z"}`))
		}, `{
    "$schema": "https://example.com/schema.json",
    "mcpServers": {
        "zeta": {
            "type": "http",
            "url": "https://z"
        },
        "alpha": {"url": "https://a.example/mcp", "type": "http"}
    },
    "other": {"k": [1, 2]}
}
`},
		{"remove first", func(p string) error { return RemoveServer(p, "zeta") }, `{
    "$schema": "https://example.com/schema.json",
    "mcpServers": {
        "alpha": {"url": "https://a.example/mcp", "type": "http"}
    },
    "other": {"k": [1, 2]}
}
`},
		{"remove last", func(p string) error { return RemoveServer(p, "alpha") }, `{
    "$schema": "https://example.com/schema.json",
    "mcpServers": {
        "zeta": {
            "command": "z",
            "x-note": "keep me"
        }
    },
    "other": {"k": [1, 2]}
}
`},
		{"remove both", func(p string) error {
			if err := RemoveServer(p, "alpha"); err != nil {
				return err
			}
			return RemoveServer(p, "zeta")
		}, `{
    "$schema": "https://example.com/schema.json",
    "mcpServers": {},
    "other": {"k": [1, 2]}
}
`},
		{"disable multi-line entry", func(p string) error { return SetEnabled(p, "zeta", false) }, `{
    "$schema": "https://example.com/schema.json",
    "mcpServers": {
        "zeta": {
            "command": "z",
            "x-note": "keep me",
            "enabled": false
        },
        "alpha": {"url": "https://a.example/mcp", "type": "http"}
    },
    "other": {"k": [1, 2]}
}
`},
		{"disable one-line entry, then enable", func(p string) error {
			if err := SetEnabled(p, "alpha", false); err != nil {
				return err
			}
			if got := readFile(t, p); !strings.Contains(got, `"alpha": {"url": "https://a.example/mcp", "type": "http", "enabled": false}`) {
				t.Errorf("disable: %s", got)
			}
			return SetEnabled(p, "alpha", true)
		}, strings.Replace(sampleConfig, `"type": "http"}`, `"type": "http", "enabled": true}`, 1)},
		{"enable an enabled server changes nothing", func(p string) error { return SetEnabled(p, "zeta", true) }, sampleConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := sample(t)
			if err := tt.op(path); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			noTempFiles(t, path)
			if _, diags := ParseFile(path, []byte(readFile(t, path)), LevelUser, "mcplife", envOf()); len(diags) != 0 {
				t.Errorf("result does not load cleanly:\n%s", diagStrings(diags))
			}
		})
	}
}

func TestWriterErrors(t *testing.T) {
	path := sample(t)
	tests := []struct {
		name   string
		err    error
		target error
		msg    string
	}{
		{"duplicate", AddServer(path, "zeta", json.RawMessage(`{"command": "x"}`)), ErrDuplicateServer, `Server "zeta" already exists in ` + path},
		{"bad name", AddServer(path, "bad name", json.RawMessage(`{"command": "x"}`)), ErrInvalidConfig, "Invalid server config: name: "},
		{"missing command", AddServer(path, "n", json.RawMessage(`{"args": []}`)), ErrInvalidConfig, "Invalid server config: command: required for stdio servers"},
		{"both", AddServer(path, "n", json.RawMessage(`{"command": "x", "url": "https://x"}`)), ErrInvalidConfig, "Invalid server config: url: cannot be used together with command"},
		{"warning-level problem", AddServer(path, "n", json.RawMessage(`{"command": "x", "timeout": "soon"}`)), ErrInvalidConfig, "Invalid server config: timeout: must be a number of milliseconds"},
		{"not an object", AddServer(path, "n", json.RawMessage(`"x"`)), ErrInvalidConfig, "Invalid server config: server entry must be an object"},
		{"not JSON", AddServer(path, "n", json.RawMessage(`{`)), ErrInvalidConfig, "Invalid server config: entry is not valid JSON"},
		{"update invalid", UpdateServer(path, "zeta", json.RawMessage(`{"type": "sse"}`)), ErrInvalidConfig, "Invalid server config: url: required for sse servers"},
		{"update missing", UpdateServer(path, "nope", json.RawMessage(`{"command": "x"}`)), ErrServerNotFound, `Server "nope" not found in ` + path},
		{"remove missing", RemoveServer(path, "nope"), ErrServerNotFound, `Server "nope" not found in ` + path},
		{"enable missing", SetEnabled(path, "nope", true), ErrServerNotFound, `Server "nope" not found in ` + path},
		{"remove from missing file", RemoveServer(filepath.Join(t.TempDir(), "none.json"), "x"), ErrServerNotFound, `Server "x" not found in `},
		// "other" is not a server object: its keys are not servers.
		{"remove a key of another object", RemoveServer(path, "k"), ErrServerNotFound, `Server "k" not found in ` + path},
		{"enable a key of another object", SetEnabled(path, "k", false), ErrServerNotFound, `Server "k" not found in ` + path},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		if !errors.Is(tt.err, tt.target) || !strings.HasPrefix(tt.err.Error(), tt.msg) {
			t.Errorf("%s: %v (want %v, prefix %q)", tt.name, tt.err, tt.target, tt.msg)
		}
	}
	if got := readFile(t, path); got != sampleConfig {
		t.Errorf("failed operations changed the file:\n%s", got)
	}
	noTempFiles(t, path)
}

func TestWriterMalformedFileIsNotRewritten(t *testing.T) {
	text := "{\n  \"mcpServers\": {\n    \"a\": {\"command\": x}\n  }\n}\n"
	path := writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), text)
	err := AddServer(path, "b", json.RawMessage(`{"command": "b"}`))
	var d *Diagnostic
	if !errors.As(err, &d) || !errors.Is(err, ErrMalformedJSON) || d.Line != 3 || d.Column != 22 {
		t.Fatalf("err = %v", err)
	}
	if !strings.HasPrefix(err.Error(), path+":3:22: malformed JSON") {
		t.Errorf("Error() = %q", err)
	}
	for _, bad := range []string{`[]`, `{"mcpServers": []}`} {
		path := writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), bad)
		if err := AddServer(path, "b", json.RawMessage(`{"command": "b"}`)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v", bad, err)
		}
		if readFile(t, path) != bad {
			t.Errorf("%s rewritten", bad)
		}
	}
	if readFile(t, path) != text {
		t.Error("file changed")
	}
}

func TestWriterCreatesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "home", ".mcplife", "mcp.json")
	if err := AddServer(path, "a", json.RawMessage(`{"type": "http", "url": "https://a", "headers": {"Authorization": "!op read x"}}`)); err != nil {
		t.Fatal(err)
	}
	want := `{
  "mcpServers": {
    "a": {
      "type": "http",
      "url": "https://a",
      "headers": {
        "Authorization": "!op read x"
      }
    }
  }
}
`
	if got := readFile(t, path); got != want {
		t.Errorf("got:\n%s", got)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v %v", st.Mode(), err)
	}
	if err := AddServer(path, "b", json.RawMessage(`{"command": "b"}`)); err != nil {
		t.Fatal(err)
	}
	servers, diags := ParseFile(path, []byte(readFile(t, path)), LevelUser, "mcplife", envOf())
	if serverNames(servers) != "a,b" || len(diags) != 0 {
		t.Errorf("%s %s", serverNames(servers), diagStrings(diags))
	}

	// An empty existing file is filled in, keeping its mode.
	empty := writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), "\n")
	if err := os.Chmod(empty, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := AddServer(empty, "a", json.RawMessage(`{"command": "a"}`)); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(empty); st.Mode().Perm() != 0o640 || !strings.Contains(readFile(t, empty), `"mcpServers"`) {
		t.Errorf("empty file: %v %s", st.Mode(), readFile(t, empty))
	}
}

func TestWriterKeepsModeAndSymlink(t *testing.T) {
	dir := t.TempDir()
	target := writeFile(t, filepath.Join(dir, "real", "mcp.json"), sampleConfig)
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := SetEnabled(link, "zeta", false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink replaced: %v %v", fi, err)
	}
	st, _ := os.Stat(target)
	if st.Mode().Perm() != 0o640 || !strings.Contains(readFile(t, target), `"enabled": false`) {
		t.Errorf("target mode %v content %s", st.Mode(), readFile(t, target))
	}
	noTempFiles(t, target)
}

func TestWriterOtherShapes(t *testing.T) {
	t.Run("servers key and comments", func(t *testing.T) {
		text := "{\n\t// VS Code style\n\t\"servers\": {\n\t\t\"a\": {\"command\": \"a\"}, // first\n\t},\n\t\"inputs\": []\n}\n"
		path := writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), text)
		if err := AddServer(path, "b", json.RawMessage(`{"command": "b"}`)); err != nil {
			t.Fatal(err)
		}
		want := "{\n\t// VS Code style\n\t\"servers\": {\n\t\t\"a\": {\"command\": \"a\"},\n\t\t\"b\": {\n\t\t\t\"command\": \"b\"\n\t\t}, // first\n\t},\n\t\"inputs\": []\n}\n"
		if got := readFile(t, path); got != want {
			t.Errorf("got:\n%q\nwant:\n%q", got, want)
		}
		if err := SetEnabled(path, "a", false); err != nil {
			t.Fatal(err)
		}
		servers, _ := ParseFile(path, []byte(readFile(t, path)), LevelUser, "vscode", envOf())
		if len(servers) != 2 || servers[0].Enabled || !servers[1].Enabled {
			t.Errorf("%+v", servers)
		}
	})
	t.Run("no server key yet", func(t *testing.T) {
		path := writeFile(t, filepath.Join(t.TempDir(), ".claude.json"), "{\n  \"numStartups\": 4,\n  \"projects\": {}\n}\n")
		if err := AddServer(path, "a", json.RawMessage(`{"command": "a"}`)); err != nil {
			t.Fatal(err)
		}
		want := "{\n  \"numStartups\": 4,\n  \"projects\": {},\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"a\"\n    }\n  }\n}\n"
		if got := readFile(t, path); got != want {
			t.Errorf("got:\n%s", got)
		}
	})
	t.Run("compact file", func(t *testing.T) {
		path := writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), `{"mcpServers":{"a":{"command":"a"}}}`)
		if err := AddServer(path, "b", json.RawMessage(`{"command":"b"}`)); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); got != `{"mcpServers":{"a":{"command":"a"}, "b": {"command":"b"}}}` {
			t.Errorf("got %s", got)
		}
		if err := RemoveServer(path, "a"); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); got != `{"mcpServers":{"b": {"command":"b"}}}` {
			t.Errorf("got %s", got)
		}
	})
	t.Run("duplicate definitions are all removed", func(t *testing.T) {
		path := writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), `{"mcpServers": {"a": {"command": "1"}, "b": {"command": "b"}, "a": {"command": "2"}}, "servers": {"a": {"command": "3"}}}`)
		if err := SetEnabled(path, "a", false); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); !strings.Contains(got, `"a": {"command": "2", "enabled": false}`) {
			t.Errorf("SetEnabled did not edit the effective definition: %s", got)
		}
		if err := RemoveServer(path, "a"); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); got != `{"mcpServers": {"b": {"command": "b"}}, "servers": {}}` {
			t.Errorf("got %s", got)
		}
	})
	t.Run("CRLF", func(t *testing.T) {
		path := writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), "{\r\n  \"mcpServers\": {\r\n    \"a\": {\"command\": \"a\"}\r\n  }\r\n}\r\n")
		if err := AddServer(path, "b", json.RawMessage(`{"command": "b"}`)); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); strings.Count(got, "\n") != strings.Count(got, "\r\n") {
			t.Errorf("mixed line endings: %q", got)
		}
	})
	t.Run("writer accepts ${VAR} urls", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mcp.json")
		if err := AddServer(path, "a", json.RawMessage(`{"type": "http", "url": "${MCP_URL}"}`)); err != nil {
			t.Fatal(err)
		}
	})
}
