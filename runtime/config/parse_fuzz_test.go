package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// fuzzEnv is the fake process environment of the config fuzz targets. It
// holds a secret that must never reach a project-level server's url or
// headers.
var fuzzEnv = map[string]string{
	"HOME": "/home/u", "TOKEN": "s3cret-token", "EMPTY": "", "BANG": "!echo hi", "REF": "${HOME}",
}

const fuzzSecret = "s3cret-token"

func fuzzLookup(k string) (string, bool) {
	v, ok := fuzzEnv[k]
	return v, ok
}

// configSeeds are config file texts shared by the parser fuzz targets.
var configSeeds = []string{
	``,
	`{}`,
	`[]`,
	`{"mcpServers":{"a":{"command":"node","args":["x.js","${HOME}"],"env":{"K":"${TOKEN}","B":"!pass show k"}}}}`,
	`{"servers":{"r":{"type":"http","url":"https://example.com/${TOKEN}","headers":{"Authorization":"Bearer ${TOKEN:-none}"}}}}`,
	`{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}},"servers":{"a":{"url":"http://h"}}}`,
	"\xEF\xBB\xBF{\n  // comment\n  \"mcpServers\": {\n    /* block */ \"b\": {\"command\": \"c\",},\n  },\n}\n",
	`{"mcpServers":{"bad name":{"command":"x"},"t":{"type":7},"u":{"type":"sse"},"v":{"command":"c","url":"http://x"}}}`,
	`{"mcpServers":{"w":{"command":"c","timeout":-1,"toolTimeout":"x","restartDelays":[],"maxResultChars":1.5,"enabled":"no","auth":{"type":"basic"}}}}`,
	`{"mcpServers":{"x":{"command":"c","restart":"sometimes","healthProbe":"poke","includeTools":[1],"env":{"A=B":"v"}}}}`,
	`{"mcpServers":null,"servers":[1,2]}`,
	`{"mcpServers":{"h":{"url":"${NOPE}"},"i":{"url":"ftp://x"},"j":{"type":"http","url":"http://x","headers":{"X":"${EMPTY:-!rm}"}}}}`,
	`{"projects":{"/p":{"mcpServers":{"p":{"command":"c"}}}},"mcpServers":{"p":{"command":"d"}}}`,
	`{"mcpServers":{"a":{"command":"c","timeout":1e400}}}`,
	`{"mcpServers":{"\u00e9":{"command":"c"},"":{"command":"c"}}}`,
	`{"mcpServers":{"a":"not an object","b":{"command":"c","auth":{"type":"oauth"}}}}`,
	`{"mcpServers":{"a":{"command":"c"} /* unterminated`,
	`{"mcpServers":{"a":{"command":"c","cwd":"${HOME}/w","url":null}}}`,
	`{"mcpServers":{"a":{"command":"cat","command":"rm"},"b":{"command":"c","env":{"K":"1","K":"2"}}}}`,
	`{"mcpServers":{"a":{"command":"c","args":[{"x":1,"\u0078":2}],"auth":{"type":"oauth","type":"oauth"}}}}`,
	`{"mcpServers":{"a":{"command":"c"}},"mcpServers":{"a":{"command":"d"}},"servers":{"b":{"command":"c"}}}`,
	`{"projects":{"/p":{"mcpServers":{"p":{"command":"c"}}},"/p":{"mcpServers":{"p":{"command":"d"}}}}}`,
}

// member is one member of a JSON object as encoding/json's tokenizer
// reads it, in file order, duplicates included.
type member struct {
	key string
	val json.RawMessage
}

// orderedMembers reads the members of the object raw with encoding/json's
// Token and Decode; ok is false when raw is not an object.
func orderedMembers(raw []byte) (ms []member, ok bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	ms = []member{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, false
		}
		ms = append(ms, member{key: tok.(string), val: val})
	}
	return ms, true
}

// hasDuplicateKey reports whether any object within raw holds a key twice,
// as encoding/json decodes keys.
func hasDuplicateKey(raw []byte) bool {
	var v json.RawMessage = raw
	if ms, ok := orderedMembers(v); ok {
		seen := map[string]bool{}
		for _, m := range ms {
			if seen[m.key] || hasDuplicateKey(m.val) {
				return true
			}
			seen[m.key] = true
		}
		return false
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) == nil {
		for _, e := range elems {
			if hasDuplicateKey(e) {
				return true
			}
		}
	}
	return false
}

// section is one server map of a file as encoding/json reads it.
type section struct {
	label string
	// dupPath: a key on the way to the map is repeated, so the map is
	// ambiguous.
	dupPath bool
	// members of the map, in file order; nil when the value is not an
	// object.
	members []member
}

// sectionMaps reads, with encoding/json, the server maps of the blanked
// text data at each section key path. found is false when data is not a
// JSON object; a section that is absent or null is left out.
func sectionMaps(data []byte, sections [][]string) (out []section, found bool) {
	top, ok := orderedMembers(data)
	if !ok {
		return nil, false
	}
	for _, sec := range sections {
		cur, raw := top, json.RawMessage(nil)
		present, dup := true, false
		for i, k := range sec {
			var hits []json.RawMessage
			for _, m := range cur {
				if m.key == k {
					hits = append(hits, m.val)
				}
			}
			if len(hits) == 0 {
				present = false
				break
			}
			if len(hits) > 1 {
				dup = true
				break
			}
			if i == len(sec)-1 {
				raw = hits[0]
				break
			}
			if cur, ok = orderedMembers(hits[0]); !ok {
				present = false
				break
			}
		}
		if !present || (!dup && strings.TrimSpace(string(raw)) == "null") {
			continue
		}
		s := section{label: sectionLabel(sec), dupPath: dup}
		if !dup {
			s.members, _ = orderedMembers(raw)
		}
		out = append(out, s)
	}
	return out, true
}

// checkDoc checks the properties every parse of a config file has.
func checkDoc(t *testing.T, path string, data []byte, level Level, sections [][]string, entries []entry, diags []Diagnostic) {
	t.Helper()
	src := Source{File: path, Level: level, Provider: "fuzz"}
	// Every diagnostic names the file, has a position and a known cause.
	for _, d := range diags {
		if d.File != path || d.Line < 1 || d.Column < 1 || d.Message == "" {
			t.Fatalf("diagnostic without file, position or message: %+v", d)
		}
		if d.Severity != SeverityError && d.Severity != SeverityWarning {
			t.Fatalf("diagnostic severity %q", d.Severity)
		}
		if !errors.Is(&d, ErrInvalidConfig) && !errors.Is(&d, ErrMalformedJSON) {
			t.Fatalf("diagnostic cause %v is neither ErrInvalidConfig nor ErrMalformedJSON", d.Err)
		}
		// A server's error names the offending field, unless the whole
		// entry is wrong.
		if d.Severity == SeverityError && d.Server != "" && d.Field == "" && !strings.HasPrefix(d.Message, "server entry must be an object") {
			t.Fatalf("error about server %q names no field: %+v", d.Server, d)
		}
	}
	errorFor := func(name string) bool {
		for _, d := range diags {
			if d.Severity == SeverityError && d.Server == name {
				return true
			}
		}
		return false
	}
	// Every entry is either a valid server or named by an error.
	for _, e := range entries {
		if e.src != src {
			t.Fatalf("entry %q source %+v, want %+v", e.name, e.src, src)
		}
		if e.server == nil {
			if !errorFor(e.name) {
				t.Fatalf("invalid entry %q has no error naming it; diagnostics:\n%s", e.name, diagStrings(diags))
			}
			continue
		}
		checkServer(t, e.server, src, data)
	}
	// Cross-check with encoding/json: every name in every server map is
	// accounted for, every section that is not an object is reported, and no
	// duplicate key is ever accepted silently.
	blank := blankJSONC(data)
	maps, ok := sectionMaps(blank, sections)
	if !ok {
		if len(entries) != 0 {
			t.Fatalf("%d entries from a file that is not a JSON object", len(entries))
		}
		if len(strings.TrimSpace(string(blank))) > 0 && len(diags) == 0 {
			t.Fatalf("no diagnostic for a file that is not a JSON object")
		}
		return
	}
	fileError := func(label string) bool {
		for _, d := range diags {
			if d.Severity == SeverityError && d.Server == "" && d.Field == label {
				return true
			}
		}
		return false
	}
	nameError := func(name string) bool {
		for _, d := range diags {
			if d.Severity == SeverityError && d.Server == name && d.Field == "name" {
				return true
			}
		}
		return false
	}
	// unique holds, per name, the values it has in the maps where it is
	// defined once: a loaded server must be one of them.
	unique := map[string][]json.RawMessage{}
	for _, sec := range maps {
		switch {
		case sec.dupPath:
			if !fileError(sec.label) {
				t.Fatalf("a key on the way to %s is repeated but no error names it:\n%s", sec.label, diagStrings(diags))
			}
			continue
		case sec.members == nil:
			if !fileError(sec.label) {
				t.Fatalf("section %s is not an object but no error names it:\n%s", sec.label, diagStrings(diags))
			}
			continue
		}
		count := map[string]int{}
		for _, m := range sec.members {
			count[m.key]++
		}
		for _, m := range sec.members {
			if count[m.key] > 1 {
				if !nameError(m.key) {
					t.Fatalf("server %q is defined %d times in %s but no error names it:\n%s", m.key, count[m.key], sec.label, diagStrings(diags))
				}
				continue
			}
			unique[m.key] = append(unique[m.key], m.val)
			has := false
			for _, e := range entries {
				has = has || (e.name == m.key && e.server != nil)
			}
			if !has && !errorFor(m.key) {
				t.Fatalf("server %q of %s neither loaded nor reported:\n%s", m.key, sec.label, diagStrings(diags))
			}
		}
	}
	for _, e := range entries {
		if e.server == nil {
			continue
		}
		if hasDuplicateKey(e.server.Raw) {
			t.Fatalf("server %q loaded with a duplicate key: %s", e.name, e.server.Raw)
		}
		from := false
		for _, v := range unique[e.name] {
			from = from || bytes.Equal(v, e.server.Raw)
		}
		if !from {
			t.Fatalf("server %q loaded from no map that defines it exactly once: %s", e.name, e.server.Raw)
		}
	}
}

// checkServer checks the invariants of a server that passed validation.
func checkServer(t *testing.T, s *Server, src Source, data []byte) {
	t.Helper()
	if err := ValidateName(s.Name); err != nil {
		t.Fatalf("server with invalid name loaded: %v", err)
	}
	if s.Source != src {
		t.Fatalf("server %q source %+v, want %+v", s.Name, s.Source, src)
	}
	if !json.Valid(s.Raw) {
		t.Fatalf("server %q Raw is not JSON: %q", s.Name, s.Raw)
	}
	switch s.EffectiveType() {
	case Stdio:
		if s.URL != "" {
			t.Fatalf("stdio server %q has url %q", s.Name, s.URL)
		}
	case HTTP, SSE:
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Fatalf("%s server %q loaded with url %q", s.EffectiveType(), s.Name, s.URL)
		}
		if s.Command != "" {
			t.Fatalf("remote server %q has command %q", s.Name, s.Command)
		}
	default:
		t.Fatalf("server %q type %q", s.Name, s.Type)
	}
	if s.Timeout < NoTimeout || s.ToolTimeout < NoTimeout || s.MaxResultChars < 0 {
		t.Fatalf("server %q: negative limits %v %v %d", s.Name, s.Timeout, s.ToolTimeout, s.MaxResultChars)
	}
	for _, d := range s.RestartDelays {
		if d < 0 {
			t.Fatalf("server %q: negative restart delay %v", s.Name, d)
		}
	}
	if s.Restart != RestartDefault && s.Restart != RestartRelentless && s.Restart != RestartOnce && s.Restart != RestartBounded && s.Restart != RestartNever {
		t.Fatalf("server %q: restart %q", s.Name, s.Restart)
	}
	// A project file never sends the process environment's secrets over the
	// network.
	if src.Level == LevelProject && !strings.Contains(string(data), fuzzSecret) {
		leak := strings.Contains(s.URL, fuzzSecret)
		for _, v := range s.Headers {
			leak = leak || strings.Contains(v, fuzzSecret)
		}
		if leak {
			t.Fatalf("project server %q: a process secret reached its url or headers: %q %q", s.Name, s.URL, s.Headers)
		}
	}
	// Values that were not "!commands" as written never become one.
	for k, v := range s.Headers {
		if strings.HasPrefix(v, "!") && !strings.Contains(string(data), "!") {
			t.Fatalf("server %q: header %q became a shell command %q", s.Name, k, v)
		}
	}
}

// FuzzParseFile parses arbitrary config file text (mcpServers and servers
// maps, JSON with comments) at user and project level: it never panics and
// is deterministic; every diagnostic names the file with a line and column
// and wraps ErrInvalidConfig or ErrMalformedJSON; every name in a server map
// (as encoding/json reads it) is either a loaded, valid server or named by an
// error; a duplicate key is never accepted silently (no loaded server holds
// one, a repeated name or server map key is named by an error, and a loaded
// server comes from a map that defines its name once); loaded servers
// satisfy the validation rules; a project file never sends a process secret
// to its url or headers.
func FuzzParseFile(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	const path = "/cfg/mcp.json"
	f.Fuzz(func(t *testing.T, data []byte, project bool) {
		level := LevelUser
		if project {
			level = LevelProject
		}
		servers, diags := ParseFile(path, data, level, "fuzz", fuzzLookup)
		servers2, diags2 := ParseFile(path, data, level, "fuzz", fuzzLookup)
		if !reflect.DeepEqual(servers, servers2) || fmt.Sprint(diags) != fmt.Sprint(diags2) {
			t.Fatalf("ParseFile is not deterministic")
		}
		entries, ediags := parseDoc(path, data, level, "fuzz", fuzzLookup, nil)
		var valid []*Server
		for _, e := range entries {
			if e.server != nil {
				valid = append(valid, e.server)
			}
		}
		if !reflect.DeepEqual(valid, servers) || len(ediags) != len(diags) {
			t.Fatalf("ParseFile and parseDoc disagree")
		}
		checkDoc(t, path, data, level, [][]string{{"mcpServers"}, {"servers"}}, entries, diags)
	})
}

// FuzzClaudeProjects parses arbitrary ~/.claude.json text with the project
// entry of an arbitrary project path, as discovery does: the properties of
// FuzzParseFile hold, and the project's servers come before the top-level
// ones.
func FuzzClaudeProjects(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s), "/p")
	}
	f.Add([]byte(`{"projects":{"/home/u/w":{"mcpServers":{"a":{"command":"c"},"b":{"url":"x"}}},"/other":{}},"mcpServers":{"a":{"command":"top"}}}`), "/home/u/w")
	f.Add([]byte(`{"projects":{"/w":{"mcpServers":null}},"servers":{"s":{"command":"c"}}}`), "/w")
	f.Add([]byte(`{"projects":{"/w":{"mcpServers":7}}}`), "/w")
	f.Add([]byte(`{"projects":[{"mcpServers":{}}]}`), "0")
	f.Add([]byte(`{"projects":{"C:\\w \"q\"":{"mcpServers":{"a":{"command":"c"}}}}}`), "C:\\w \"q\"")
	const path = "/home/u/.claude.json"
	f.Fuzz(func(t *testing.T, data []byte, project string) {
		sections := [][]string{{"projects", project, "mcpServers"}, {"mcpServers"}, {"servers"}}
		entries, diags := parseDoc(path, data, LevelUser, "fuzz", fuzzLookup, sections[:1])
		entries2, diags2 := parseDoc(path, data, LevelUser, "fuzz", fuzzLookup, sections[:1])
		if !reflect.DeepEqual(entries, entries2) || fmt.Sprint(diags) != fmt.Sprint(diags2) {
			t.Fatalf("parseDoc is not deterministic")
		}
		checkDoc(t, path, data, LevelUser, sections, entries, diags)
		// The project's entries come first, in the order of its map.
		maps, ok := sectionMaps(blankJSONC(data), sections[:1])
		if ok && len(maps) == 1 && maps[0].members != nil {
			names := map[string]bool{}
			for _, m := range maps[0].members {
				names[m.key] = true
			}
			n := len(names) // a repeated name is one (invalid) entry
			if len(entries) < n {
				t.Fatalf("%d entries, project map has %d names", len(entries), n)
			}
			for _, e := range entries[:n] {
				if !names[e.name] {
					t.Fatalf("entry %q before the project's own entries", e.name)
				}
			}
		}
	})
}

// FuzzValidateEntry checks one arbitrary server entry as the writer does: it
// never panics; an error wraps ErrInvalidConfig and reads "Invalid server
// config: ..." (naming "name" for a bad name); and an entry without ${...}
// passes exactly when discovery would load it from a user file without any
// diagnostic.
func FuzzValidateEntry(f *testing.F) {
	f.Add("a", []byte(`{"command":"c"}`))
	f.Add("a", []byte(`{"command":"c","url":"http://x"}`))
	f.Add("bad name", []byte(`{"command":"c"}`))
	f.Add("", []byte(`{}`))
	f.Add("r", []byte(`{"type":"http","url":"https://h/${X}"}`))
	f.Add("r", []byte(`{"type":"sse","url":"not a url"}`))
	f.Add("w", []byte(`{"command":"c","timeout":"x","enabled":1} // trailing`))
	f.Add("x", []byte(`/* c */ {"command":"c",}`))
	f.Add("y", []byte(`[1]`))
	f.Add("z", []byte(`{"command":"c","auth":{"type":"oauth","credentialId":""}}`))
	f.Add("h", []byte(`{"url":"http://h","headers":{"A":"${X:-!cmd}"}}`))
	f.Fuzz(func(t *testing.T, name string, entry []byte) {
		err := ValidateEntry(name, entry)
		err2 := ValidateEntry(name, entry)
		if fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		if nameProblem(name) != "" {
			if err == nil || !strings.Contains(err.Error(), "name: ") {
				t.Fatalf("bad name %q: error %v does not name the field", name, err)
			}
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "Invalid server config: ") {
				t.Fatalf("error %q does not wrap ErrInvalidConfig", err)
			}
		}
		if nameProblem(name) != "" || strings.Contains(string(entry), "${") {
			return
		}
		blank := blankJSONC(entry)
		if checkJSON(blank) != nil {
			if err == nil {
				t.Fatalf("invalid JSON accepted")
			}
			return
		}
		file := `{"mcpServers":{` + quote(name) + ":" + string(blank) + "\n}}"
		servers, diags := ParseFile("/f.json", []byte(file), LevelUser, "fuzz", noEnv)
		loads := len(servers) == 1 && servers[0].Name == name && len(diags) == 0
		if loads != (err == nil) {
			t.Fatalf("ValidateEntry says %v; discovery loads %d servers with diagnostics:\n%s", err, len(servers), diagStrings(diags))
		}
	})
}
