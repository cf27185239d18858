package config

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// refExpand is a plain re-implementation of Expand's documented rules, the
// oracle of FuzzExpand: the leftmost ${NAME} or ${NAME:-default} (NAME is
// [A-Za-z_][A-Za-z0-9_]*, default has no "}") is replaced, scanning on after
// the replacement, which is never expanded again.
func refExpand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if n, rep, ok := refRef(s[i:], lookup); ok {
			b.WriteString(rep)
			i += n
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func refRef(s string, lookup func(string) (string, bool)) (int, string, bool) {
	if !strings.HasPrefix(s, "${") || len(s) < 3 {
		return 0, "", false
	}
	isStart := func(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	if !isStart(s[2]) {
		return 0, "", false
	}
	j := 3
	for j < len(s) && (isStart(s[j]) || s[j] >= '0' && s[j] <= '9') {
		j++
	}
	name := s[2:j]
	rest := s[j:]
	switch {
	case strings.HasPrefix(rest, "}"):
		v, ok := lookup(name)
		if !ok {
			return j + 1, s[:j+1], true
		}
		return j + 1, v, true
	case strings.HasPrefix(rest, ":-"):
		k := strings.IndexByte(rest[2:], '}')
		if k < 0 {
			return 0, "", false
		}
		def := rest[2 : 2+k]
		end := j + 2 + k + 1
		if v, ok := lookup(name); ok && v != "" {
			return end, v, true
		}
		return end, def, true
	}
	return 0, "", false
}

// FuzzExpand expands arbitrary text with a fake environment holding one
// arbitrary variable: the result equals the plain re-implementation of the
// documented ${VAR} / ${VAR:-default} rules (unresolved references stay,
// replacements are not expanded again), Expand is deterministic, and text
// without "${" is returned unchanged. Nothing is ever executed.
func FuzzExpand(f *testing.F) {
	f.Add("${HOME}/x", "V", "v")
	f.Add("${NOPE} ${NOPE:-d} ${EMPTY:-e} ${EMPTY}", "V", "v")
	f.Add("$${V}}${V:-${V}}", "V", "${V}")
	f.Add("${1A} ${_a1} ${V:-} ${V:-a:-b} ${V", "V", "")
	f.Add("!${V}", "V", "!rm -rf /")
	f.Add("\xff${V}\xfe${\xff}", "V", "\xff")
	f.Add("${V:-}}}", "V", "x")
	f.Fuzz(func(t *testing.T, s, name, value string) {
		env := map[string]string{"HOME": "/h", "EMPTY": "", name: value}
		lookup := mapLookup(env)
		got := Expand(s, lookup)
		if want := refExpand(s, lookup); got != want {
			t.Fatalf("Expand(%q) = %q, want %q", s, got, want)
		}
		if again := Expand(s, lookup); again != got {
			t.Fatalf("not deterministic: %q then %q", got, again)
		}
		if !strings.Contains(s, "${") && got != s {
			t.Fatalf("text without references changed: %q -> %q", s, got)
		}
	})
}

// FuzzResolve resolves a server with one arbitrary env value and one
// arbitrary header value, at project or user level, trusted or not, through
// a fake shell (no command is ever run): project stdio servers of an
// untrusted workspace are blocked without running anything; the shell runs
// exactly the "!command" values that are allowed, once per command; every
// value resolves as documented (shell output trimmed, else a variable's
// non-empty value, else the literal); project headers never see the process
// environment; the child environment is sorted KEY=VALUE pairs holding only
// allowlisted variables and the server's own; diagnostics name the server
// and field; and resolution is deterministic.
func FuzzResolve(f *testing.F) {
	f.Add(uint8(0), false, false, "K", "TOKEN", "Authorization", "TOKEN", " out\n", false)
	f.Add(uint8(1), true, true, "K", "!pass show k", "X", "!get", "tok", false)
	f.Add(uint8(3), false, false, "K", "!pass", "X", "!pass", "", false)
	f.Add(uint8(2), true, true, "PATH", "!x", "Authorization", "K", "o", true)
	f.Add(uint8(1), false, false, "K", "HOME", "H", "K", "o", false)
	f.Add(uint8(3), true, false, "TOKEN", "TOKEN", "A", "TOKEN", "o", false)
	f.Fuzz(func(t *testing.T, mode uint8, project, trusted bool, envKey, envVal, hdrKey, hdrVal, shellOut string, shellFail bool) {
		typ := []Transport{"", Stdio, HTTP, SSE}[mode%4]
		level := LevelUser
		if project {
			level = LevelProject
		}
		s := &Server{Name: "s", Type: typ, Source: Source{File: "/f.json", Level: level, Provider: "fuzz"}}
		if s.EffectiveType() == Stdio {
			s.Command = "c"
		} else {
			s.URL = "http://h"
		}
		s.Env = map[string]string{envKey: envVal}
		s.Headers = map[string]string{hdrKey: hdrVal}
		raw, err := json.Marshal(map[string]any{"command": "c", "env": s.Env})
		if err != nil {
			t.Skip()
		}
		s.Raw = raw
		var ran []string
		r := &Resolver{Env: fuzzLookup, Trusted: trusted, Shell: func(_ context.Context, cmd string) (string, error) {
			ran = append(ran, cmd)
			if shellFail {
				return "", errors.New("exit status 1")
			}
			return shellOut, nil
		}}
		res, diags := r.Resolve(context.Background(), s)
		ran1 := slices.Clone(ran)
		ran = nil
		r2 := &Resolver{Env: fuzzLookup, Trusted: trusted, Shell: r.Shell}
		res2, diags2 := r2.Resolve(context.Background(), s)
		if !reflect.DeepEqual(res, res2) || len(diags) != len(diags2) || !slices.Equal(ran1, ran) {
			t.Fatalf("Resolve is not deterministic")
		}
		for _, d := range diags {
			if d.Server != "s" || d.File != "/f.json" || d.Severity != SeverityWarning || d.Field == "" {
				t.Fatalf("diagnostic does not name server and field: %+v", d)
			}
		}
		stdio := s.EffectiveType() == Stdio
		if stdio && project && !trusted {
			if res.Blocked == "" || res.Env != nil || res.Headers != nil || len(ran1) != 0 || len(diags) != 0 {
				t.Fatalf("untrusted project stdio server not blocked cleanly: %+v ran %q", res, ran1)
			}
			return
		}
		if res.Blocked != "" {
			t.Fatalf("blocked: %s", res.Blocked)
		}
		allowCmd := !project || trusted
		// value resolves v the documented way; ok is false when it is dropped.
		var wantRan []string
		value := func(v string, names func(string) (string, bool)) (string, bool) {
			if cmd, isCmd := strings.CutPrefix(v, "!"); isCmd {
				if !allowCmd {
					return "", false
				}
				wantRan = append(wantRan, cmd)
				out := strings.TrimSpace(shellOut)
				if shellFail || out == "" {
					return "", false
				}
				return out, true
			}
			if x, ok := names(v); ok && x != "" {
				return x, true
			}
			return v, true
		}
		if stdio {
			if res.Headers != nil {
				t.Fatalf("stdio server has headers")
			}
			want := map[string]string{}
			for _, k := range envAllowlist {
				if v, ok := fuzzEnv[k]; ok {
					want[k] = v
				}
			}
			if v, ok := value(envVal, fuzzLookup); ok {
				want[envKey] = v
			}
			if !slices.IsSorted(res.Env) && !sortedByKey(res.Env) {
				t.Fatalf("child env not sorted: %q", res.Env)
			}
			got := map[string]string{}
			for _, kv := range res.Env {
				k, v, _ := strings.Cut(kv, "=")
				if kv == envKey+"="+want[envKey] {
					k, v = envKey, want[envKey]
				}
				got[k] = v
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("child env %q, want %q", res.Env, want)
			}
		} else {
			if res.Env != nil {
				t.Fatalf("remote server has a child env")
			}
			names := fuzzLookup
			if project {
				// Only the env block as written in the file.
				var written struct{ Env map[string]string }
				if err := json.Unmarshal(raw, &written); err != nil {
					t.Fatal(err)
				}
				names = mapLookup(written.Env)
			}
			want := map[string]string{}
			if v, ok := value(hdrVal, names); ok {
				want[hdrKey] = v
			}
			if !reflect.DeepEqual(res.Headers, want) {
				t.Fatalf("headers %q, want %q", res.Headers, want)
			}
			if project && !strings.Contains(envKey+envVal+hdrKey+hdrVal+shellOut, fuzzSecret) {
				for _, v := range res.Headers {
					if strings.Contains(v, fuzzSecret) {
						t.Fatalf("project header got a process secret: %q", res.Headers)
					}
				}
			}
		}
		// The shell runs each allowed command once (the first run is cached
		// when it succeeds).
		wantRan = slices.Compact(wantRan)
		if !slices.Equal(ran1, wantRan) {
			t.Fatalf("shell ran %q, want %q", ran1, wantRan)
		}
	})
}

// sortedByKey reports whether KEY=VALUE pairs are sorted by KEY.
func sortedByKey(kvs []string) bool {
	return slices.IsSortedFunc(kvs, func(a, b string) int {
		ka, _, _ := strings.Cut(a, "=")
		kb, _, _ := strings.Cut(b, "=")
		return strings.Compare(ka, kb)
	})
}
