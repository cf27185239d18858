package config

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// FuzzDiscover discovers servers from an arbitrary project .mcp.json and an
// arbitrary ~/.claude.json (where "$W" stands for the project directory, so
// inputs can hold its projects entry), with or without SkipProjectConfig: it
// never fails; the first definition of a name in priority order wins (the
// project file, then the project's ~/.claude.json entry, then its top-level
// servers), an invalid winner still hides the others, every losing
// definition is listed as shadowed and nothing else is; Servers and Disabled
// are sorted, disjoint and split by "enabled"; skipped project servers are
// only listed in Dropped and shadow nothing; and every diagnostic comes from
// a file that is read.
func FuzzDiscover(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"a":{"command":"p"},"b":{"command":"p","enabled":false}}}`),
		[]byte(`{"projects":{"$W":{"mcpServers":{"a":{"command":"l"},"c":{"command":"l"}}}},"mcpServers":{"c":{"command":"u"},"d":{"url":"http://u"}}}`), false)
	f.Add([]byte(`{"mcpServers":{"a":{"command":"p"},"bad":{"type":"x"}}}`),
		[]byte(`{"mcpServers":{"a":{"command":"u"},"bad":{"command":"u"}}}`), true)
	f.Add([]byte(`{"mcpServers":{"bad":{"type":"x"}}}`), []byte(`{"mcpServers":{"bad":{"command":"u"}}}`), false)
	f.Add([]byte(`not json`), []byte(`{"projects":{"$W":{"mcpServers":[]}}}`), false)
	f.Add([]byte(``), []byte(`{"projects":{"$W":{"mcpServers":{"x":{"url":"${TOKEN}"}}}},"servers":{"x":{"command":"c"}}}`), false)
	for _, s := range configSeeds[:8] {
		f.Add([]byte(s), []byte(s), false)
	}
	dir := f.TempDir()
	work, home := filepath.Join(dir, "w"), filepath.Join(dir, "h")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if real, err := filepath.EvalSymlinks(work); err == nil {
		work = real // Discover would also look the resolved path up
	}
	projectPath, userPath := filepath.Join(work, ".mcp.json"), filepath.Join(home, ".claude.json")
	f.Fuzz(func(t *testing.T, project, user []byte, skip bool) {
		w := []byte(strings.Trim(quote(work), `"`))
		user = bytes.ReplaceAll(user, []byte("$W"), w)
		if err := os.WriteFile(projectPath, project, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(userPath, user, 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := Discover(Options{ProjectDir: work, HomeDir: home, Env: fuzzLookup, SkipProjectConfig: skip})
		if err != nil {
			t.Fatalf("Discover: %v", err)
		}
		// The definitions in priority order, as the files' own parses see them.
		projEntries, projDiags := parseDoc(projectPath, project, LevelProject, "claude", fuzzLookup, nil)
		userEntries, userDiags := parseDoc(userPath, user, LevelUser, "claude", fuzzLookup, [][]string{{"projects", work, "mcpServers"}})
		var all []entry
		var dropped []string
		if skip {
			for _, e := range projEntries {
				if e.server != nil {
					dropped = append(dropped, e.name)
				}
			}
		} else {
			all = append(all, projEntries...)
		}
		all = append(all, userEntries...)
		winners := map[string]entry{}
		shadowed := 0
		for _, e := range all {
			if _, ok := winners[e.name]; ok {
				shadowed++
				continue
			}
			winners[e.name] = e
		}
		var wantEnabled, wantDisabled []string
		for name, e := range winners {
			switch {
			case e.server == nil:
			case e.server.Enabled:
				wantEnabled = append(wantEnabled, name)
			default:
				wantDisabled = append(wantDisabled, name)
			}
		}
		sort.Strings(wantEnabled)
		sort.Strings(wantDisabled)
		names := func(list []*Server) []string {
			var out []string
			for _, s := range list {
				out = append(out, s.Name)
			}
			return out
		}
		if got := names(res.Servers); !slices.Equal(got, wantEnabled) {
			t.Fatalf("servers %q, want %q", got, wantEnabled)
		}
		if got := names(res.Disabled); !slices.Equal(got, wantDisabled) {
			t.Fatalf("disabled %q, want %q", got, wantDisabled)
		}
		if got := names(res.Dropped); !slices.Equal(got, dropped) {
			t.Fatalf("dropped %q, want %q", got, dropped)
		}
		for _, s := range append(slices.Clone(res.Servers), res.Disabled...) {
			if w := winners[s.Name]; w.src != s.Source || (s.Enabled != slices.Contains(wantEnabled, s.Name)) {
				t.Fatalf("server %q from %+v, winner from %+v", s.Name, s.Source, w.src)
			}
			if skip && s.Source.Level == LevelProject {
				t.Fatalf("skipped project server %q loaded", s.Name)
			}
		}
		if len(res.Shadowed) != shadowed || !sort.SliceIsSorted(res.Shadowed, func(i, j int) bool { return res.Shadowed[i].Name < res.Shadowed[j].Name }) {
			t.Fatalf("%d shadowed (sorted: %v), want %d", len(res.Shadowed), res.Shadowed, shadowed)
		}
		for _, sh := range res.Shadowed {
			if winners[sh.Name].src != sh.Winner {
				t.Fatalf("shadowed %+v: winner is %+v", sh, winners[sh.Name].src)
			}
		}
		wantDiags := len(userDiags)
		if !skip {
			wantDiags += len(projDiags)
		}
		if len(res.Diagnostics) != wantDiags {
			t.Fatalf("%d diagnostics, want %d:\n%s", len(res.Diagnostics), wantDiags, diagStrings(res.Diagnostics))
		}
		for _, d := range res.Diagnostics {
			if d.File != userPath && (skip || d.File != projectPath) {
				t.Fatalf("diagnostic from %q", d.File)
			}
		}
	})
}
