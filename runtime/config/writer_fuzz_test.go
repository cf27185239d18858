package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// effectiveEntries returns, decoded by encoding/json, the server definitions
// discovery uses from a config text (the first server map that has a name
// wins), and the text's other top-level members. ok is false when the text
// is not a JSON object.
func effectiveEntries(text []byte) (servers map[string]any, other map[string]any, ok bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(blankJSONC(text), &top) != nil || top == nil {
		return nil, nil, false
	}
	servers, other = map[string]any{}, map[string]any{}
	for k, raw := range top {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return nil, nil, false
		}
		if k != "mcpServers" && k != "servers" {
			other[k] = v
		}
	}
	for _, k := range serverKeys {
		var m map[string]any
		if json.Unmarshal(top[k], &m) != nil {
			continue
		}
		for name, v := range m {
			if _, seen := servers[name]; !seen {
				servers[name] = v
			}
		}
	}
	return servers, other, true
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(blankJSONC(b), &v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

// FuzzWriter applies one edit (add, update, remove, disable, enable) with an
// arbitrary name and entry to an arbitrary config file: a failed edit leaves
// the file byte for byte as it was; a successful one leaves valid JSON in
// which the edited server is exactly as asked (added or updated to the
// entry, removed from every map, "enabled" set) while every other server and
// every other top-level member (unknown fields included) decodes exactly as
// before; and an entry ValidateEntry rejects is never written.
func FuzzWriter(f *testing.F) {
	files := []string{
		"",
		"{}",
		"{\n  // servers\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\", \"custom\": [1, 2]},\n  },\n  \"theme\": \"dark\"\n}\n",
		"{\"servers\":{\"a\":{\"url\":\"http://h\"}},\"mcpServers\":{\"b\":{\"command\":\"y\"},\"b\":{\"command\":\"z\"}}}",
		"{\r\n\t\"mcpServers\": {\r\n\t\t\"a\": {\"command\": \"x\" /* keep */}\r\n\t}\r\n}\r\n",
		"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"enabled\":true}} // end",
		"{\"mcpServers\":[]}",
		"{\"projects\":{\"/p\":{}},\"mcpServers\":{}}",
		"\xEF\xBB\xBF{\"mcpServers\":{\"a\":7}}",
		"not json",
	}
	entries := []string{`{"command":"n","args":["1"]}`, `{"url":"http://n","custom":{"k":1}}`, `{"command":"n",}`, `{"bad":`, `{"command":"n","enabled":false}`}
	for i, file := range files {
		for op := uint8(0); op < 5; op++ {
			f.Add([]byte(file), []string{"a", "b", "n"}[int(op)%3], []byte(entries[(i+int(op))%len(entries)]), op)
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, file []byte, name string, entry []byte, op uint8) {
		path := filepath.Join(dir, "mcp.json")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		switch op % 5 {
		case 0:
			err = AddServer(path, name, entry)
		case 1:
			err = UpdateServer(path, name, entry)
		case 2:
			err = RemoveServer(path, name)
		case 3:
			err = SetEnabled(path, name, false)
		case 4:
			err = SetEnabled(path, name, true)
		}
		after, rerr := os.ReadFile(path)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if leftovers, _ := filepath.Glob(filepath.Join(dir, ".mcp.json.tmp-*")); len(leftovers) > 0 {
			t.Fatalf("temporary files left behind: %q", leftovers)
		}
		if err != nil {
			if !bytes.Equal(after, file) {
				t.Fatalf("failed edit (%v) changed the file:\n%q\n->\n%q", err, file, after)
			}
			return
		}
		if op%5 <= 1 && ValidateEntry(name, entry) != nil {
			t.Fatalf("an entry ValidateEntry rejects was written: %v", ValidateEntry(name, entry))
		}
		beforeServers, beforeOther, beforeOK := effectiveEntries(file)
		afterServers, afterOther, ok := effectiveEntries(after)
		if !ok {
			t.Fatalf("edit produced a file that is not a JSON object:\n%q\n->\n%q", file, after)
		}
		if !beforeOK {
			if len(bytes.TrimSpace(file)) != 0 {
				t.Fatalf("edited a file that is not a JSON object: %q", file)
			}
			beforeServers, beforeOther = map[string]any{}, map[string]any{}
		}
		if !reflect.DeepEqual(beforeOther, afterOther) {
			t.Fatalf("other top-level members changed:\n%q\n->\n%q", file, after)
		}
		for n, v := range beforeServers {
			if n != name && !reflect.DeepEqual(afterServers[n], v) {
				t.Fatalf("server %q changed:\n%q\n->\n%q", n, file, after)
			}
		}
		for n := range afterServers {
			if _, was := beforeServers[n]; !was && n != name {
				t.Fatalf("server %q appeared:\n%q\n->\n%q", n, file, after)
			}
		}
		got, has := afterServers[name]
		switch op % 5 {
		case 0, 1:
			if want := decodeAny(t, entry); !has || !reflect.DeepEqual(got, want) {
				t.Fatalf("server %q is %#v, want %#v:\n%q\n->\n%q", name, got, want, file, after)
			}
			if op%5 == 0 && beforeServers[name] != nil {
				t.Fatalf("added %q over an existing definition", name)
			}
		case 2:
			if has || bytes.Contains(after, []byte(quote(name)+":")) && findDefinition(after, name) {
				t.Fatalf("server %q still defined after remove:\n%q", name, after)
			}
		case 3, 4:
			old, _ := beforeServers[name].(map[string]any)
			now, _ := got.(map[string]any)
			if old == nil || now == nil {
				t.Fatalf("enable/disable of %q succeeded on %#v", name, beforeServers[name])
			}
			want := map[string]any{}
			for k, v := range old {
				want[k] = v
			}
			if op%5 == 3 {
				want["enabled"] = false
			} else if _, set := old["enabled"]; set {
				want["enabled"] = true
			}
			if !reflect.DeepEqual(now, want) {
				t.Fatalf("enabled=%v on %q gave %#v", op%5 == 4, name, now)
			}
		}
		// The edit keeps the file readable by discovery.
		if _, diags := ParseFile(path, after, LevelUser, "fuzz", noEnv); len(diags) > 0 {
			for _, d := range diags {
				if errors.Is(&d, ErrMalformedJSON) {
					t.Fatalf("discovery cannot read the edited file: %v", &d)
				}
			}
		}
	})
}

// findDefinition reports whether any server map of text has name.
func findDefinition(text []byte, name string) bool {
	d := &doc{exists: true}
	if d.parse(text) != nil {
		return false
	}
	return len(d.find(name)) > 0
}
