package config

import (
	"path/filepath"
	"testing"
)

func TestConfigHash(t *testing.T) {
	parse := func(name, entry string, env func(string) (string, bool)) *Server {
		t.Helper()
		servers, diags := ParseFile("/f.json", []byte(fileWith(name, entry)), LevelUser, "mcplife", env)
		if len(servers) != 1 {
			t.Fatalf("diagnostics:\n%s", diagStrings(diags))
		}
		return servers[0]
	}
	base := parse("s", `{"command": "x", "env": {"T": "${TOKEN}"}, "args": ["a", "b"], "timeout": 1000}`, envOf("TOKEN", "one"))
	h := base.ConfigHash()
	if len(h) != 64 {
		t.Fatalf("hash %q", h)
	}
	same := []*Server{
		// reordered keys, other whitespace
		parse("s", "{\n  \"timeout\": 1000,\n  \"args\": [ \"a\",\"b\" ],\n  \"env\": {\"T\":\"${TOKEN}\"},\n  \"command\": \"x\"\n}", envOf("TOKEN", "one")),
		// rotated secret
		parse("s", `{"command": "x", "env": {"T": "${TOKEN}"}, "args": ["a", "b"], "timeout": 1000}`, envOf("TOKEN", "two")),
		// escaped the same string differently, with a comment
		parse("s", `{"command": "\u0078", /* c */ "env": {"T": "${TOKEN}"}, "args": ["a", "b"], "timeout": 1000}`, envOf()),
	}
	for i, s := range same {
		if s.ConfigHash() != h {
			t.Errorf("variant %d changed the hash", i)
		}
	}
	if same[1].Env["T"] == base.Env["T"] {
		t.Fatal("test setup: env values should differ")
	}
	different := []*Server{
		parse("other", `{"command": "x", "env": {"T": "${TOKEN}"}, "args": ["a", "b"], "timeout": 1000}`, envOf()),
		parse("s", `{"command": "x", "env": {"T": "${TOKEN}"}, "args": ["b", "a"], "timeout": 1000}`, envOf()),
		parse("s", `{"command": "x", "env": {"T": "${TOKEN}"}, "args": ["a", "b"], "timeout": 2000}`, envOf()),
	}
	for i, s := range different {
		if s.ConfigHash() == h {
			t.Errorf("variant %d kept the hash", i)
		}
	}

	// The same definition found through Discover hashes the same.
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".mcplife", "mcp.json"), `{"mcpServers": {"s": {"timeout": 1000, "command": "x", "args": ["a","b"], "env": {"T": "${TOKEN}"}}}}`)
	res, err := Discover(Options{HomeDir: home, Env: envOf("TOKEN", "three")})
	if err != nil || len(res.Servers) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	if res.Servers[0].ConfigHash() != h {
		t.Error("discovered server hashes differently")
	}

	// A Server built in code still hashes deterministically.
	a := &Server{Name: "c", Command: "x", Env: map[string]string{"B": "1", "A": "2"}}
	b := &Server{Name: "c", Command: "x", Env: map[string]string{"A": "2", "B": "1"}}
	if a.ConfigHash() != b.ConfigHash() {
		t.Error("built servers differ")
	}
}
