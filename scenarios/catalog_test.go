package scenarios_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/docsection"
	"github.com/mcplife/mcplife/scenarios"
)

const testingDoc = "../docs/TESTING.md"

// TestDocs fails when the generated scenario sections of docs/TESTING.md
// are stale; MCPLIFE_UPDATE_DOCS=1 rewrites them.
func TestDocs(t *testing.T) {
	if err := docsection.Check(testingDoc, "scenario-commands", scenarios.RenderCommands()); err != nil {
		t.Error(err)
	}
	cat, err := scenarios.RenderCatalog()
	if err != nil {
		t.Fatal(err)
	}
	if err := docsection.Check(testingDoc, "scenario-catalog", cat); err != nil {
		t.Error(err)
	}
}

// script returns the command lines of a scenario file (the archive
// comment), without comments.
func script(t *testing.T, file string) []string {
	t.Helper()
	data, err := scenarios.Catalog.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "-- ") && strings.HasSuffix(l, " --") {
			break
		}
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// command returns the command word of a script line and its conditions.
func command(line string) (cmd string, conds []string) {
	f := strings.Fields(line)
	for len(f) > 0 && strings.HasPrefix(f[0], "[") {
		conds = append(conds, strings.Trim(f[0], "[]"))
		f = f[1:]
	}
	if len(f) > 0 && f[0] == "!" {
		f = f[1:]
	}
	if len(f) == 0 {
		return "", conds
	}
	return f[0], conds
}

// TestCatalog checks the catalog's rules: headers, numbering, the seed's
// numbers, one scenario per field failure, capability guards and checks.
func TestCatalog(t *testing.T) {
	list, err := scenarios.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < 40 {
		t.Errorf("%d scenarios, want at least 40", len(list))
	}
	numbers := map[string]string{}
	for _, sc := range list {
		if prev, dup := numbers[sc.Number]; dup {
			t.Errorf("number %s used by %s and %s", sc.Number, prev, sc.Name)
		}
		numbers[sc.Number] = sc.Name
		if !strings.HasSuffix(sc.Description, ".") {
			t.Errorf("%s: the first header line should be one sentence ending with a period: %q", sc.Name, sc.Description)
		}
	}
	// The seed's numbers are kept.
	for _, n := range []string{"066a", "066b", "067", "071", "072a", "072b", "072c", "073", "074"} {
		name, ok := numbers[n]
		if !ok {
			t.Errorf("no scenario numbered %s (seed 001)", n)
			continue
		}
		var sc scenarios.Scenario
		for _, s := range list {
			if s.Name == name {
				sc = s
			}
		}
		if want := "scenario " + strings.TrimLeft(n[:3], "0"); !strings.Contains(sc.Guards, want) {
			t.Errorf("%s guards %q, want it to name seed 001 %s", name, sc.Guards, want)
		}
	}
	// Every field failure has its own 1NN scenario.
	for ff := 1; ff <= 15; ff++ {
		prefix := fmt.Sprintf("1%02d", ff)
		found := false
		for _, sc := range list {
			if strings.HasPrefix(sc.Number, prefix) {
				found = true
				if !strings.Contains(sc.Guards, fmt.Sprintf("field failure %d ", ff)) &&
					!strings.Contains(sc.Guards, fmt.Sprintf("field failure %d", ff)+")") &&
					!strings.Contains(sc.Guards, fmt.Sprintf("field failure %d", ff)+";") &&
					!strings.Contains(sc.Guards, fmt.Sprintf("field failure %d", ff)+".") {
					t.Errorf("%s does not name field failure %d in its Guards line: %q", sc.Name, ff, sc.Guards)
				}
			}
		}
		if !found {
			t.Errorf("no scenario numbered %s for field failure %d", prefix, ff)
		}
	}

	registry := map[string]scenarios.Command{}
	for _, c := range scenarios.Commands() {
		registry[c.Name] = c
	}
	for _, sc := range list {
		data, err := scenarios.Catalog.ReadFile(sc.File)
		if err != nil {
			t.Fatal(err)
		}
		// Only a scenario that uses a virtual-time command (one whose
		// Needs include virtual-clock) is guarded by the virtual clock,
		// with the command in the reason; any other runs on the real
		// clock of a driver without it (issue 28).
		vcmd, virtual := scenarios.UsesVirtualTime(data)
		guarded := map[string]bool{}
		checks := 0
		for _, line := range script(t, sc.File) {
			cmd, conds := command(line)
			if cmd == "skip" {
				for _, c := range conds {
					if capName, ok := strings.CutPrefix(c, "!cap:"); ok {
						guarded[capName] = true
						if capName != "virtual-clock" {
							continue
						}
						if want := "skip 'needs virtual-clock (uses " + vcmd + ")'"; !virtual {
							t.Errorf("%s is guarded by the virtual clock but uses no command that needs it: remove %q", sc.Name, line)
						} else if !strings.HasSuffix(line, want) {
							t.Errorf("%s: %q, want the guard to end %q", sc.Name, line, want)
						}
					}
				}
				continue
			}
			c, ok := registry[cmd]
			if !ok {
				continue
			}
			if c.Check && (cmd != "open" || strings.Contains(line, "=")) {
				checks++
			}
			needs := c.Needs
			if cmd == "start" && strings.Contains(line, "-clock virtual") {
				needs = append(needs, "virtual-clock")
			}
			for _, n := range needs {
				if !guarded[string(n)] && !slices.Contains(conds, "cap:"+string(n)) {
					t.Errorf("%s uses %s, which needs capability %s, without a preceding [!cap:%s] skip line", sc.Name, cmd, n, n)
				}
			}
		}
		if checks == 0 {
			t.Errorf("%s has no check", sc.Name)
		}
	}
}

// TestParseEraDirective checks the "# Era:" header directive: the era and
// its reason (over more lines of its paragraph) are taken out of the
// prose; a scenario without it runs in both eras; a bad era, a missing
// reason or a second directive is an error naming the file.
func TestParseEraDirective(t *testing.T) {
	const head = "# Checks one thing.\n#\n# How it does.\n#\n"
	sc, err := scenarios.Parse("900-x.txtar", []byte(head+"# Era: legacy. Ping exists only\n# in the handshake era.\n#\n# Guards: issue 26.\n\nshutdown\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Era != scenarios.EraLegacy || sc.EraReason != "Ping exists only in the handshake era." {
		t.Errorf("era %q reason %q", sc.Era, sc.EraReason)
	}
	if sc.Prose != "How it does." || sc.Guards != "issue 26." {
		t.Errorf("prose %q guards %q", sc.Prose, sc.Guards)
	}
	if !sc.AppliesTo(scenarios.EraLegacy) || sc.AppliesTo(scenarios.EraModern) {
		t.Errorf("AppliesTo: legacy %v, modern %v", sc.AppliesTo(scenarios.EraLegacy), sc.AppliesTo(scenarios.EraModern))
	}
	if got, want := sc.NotApplicable(scenarios.EraModern), "not applicable in modern: Ping exists only in the handshake era."; got != want {
		t.Errorf("NotApplicable = %q, want %q", got, want)
	}
	both, err := scenarios.Parse("901-y.txtar", []byte(head+"# Guards: issue 26.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if both.Era != "" || !both.AppliesTo(scenarios.EraLegacy) || !both.AppliesTo(scenarios.EraModern) {
		t.Errorf("a scenario without the directive: era %q", both.Era)
	}
	for _, bad := range []struct{ text, want string }{
		{"# Era: future. Why.\n", `names era "future"`},
		{"# Era: modern\n", "gives no reason"},
		{"# Era: modern. A.\n#\n# Era: legacy. B.\n", "more than one"},
	} {
		_, err := scenarios.Parse("902-z.txtar", []byte(head+bad.text+"#\n# Guards: issue 26.\n"))
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "902-z.txtar") {
			t.Errorf("%q: err %v, want one naming the file and %q", bad.text, err, bad.want)
		}
	}
}

// TestUsesVirtualTime checks which scripts need the virtual clock (issue
// 28): a virtual-time command (now, pending, await-timer, cmp-trace), or a
// snapshot check right after advance before any check that waits; not an
// advance followed by a wait, nor lines conditioned [cap:virtual-clock].
func TestUsesVirtualTime(t *testing.T) {
	for _, tc := range []struct {
		script, want string
		virtual      bool
	}{
		{"advance 1s\nawait tool.timeout\ncount 1 tool.timeout\n", "", false},
		{"advance 1s\ncount 0 tool.timeout\n", "advance then count", true},
		{"advance 1s\ncall s1 c1 t\nmark m\nrunning open s1\n", "advance then running", true},
		{"advance 1s\n[era:modern] status fx state=connected\n", "advance then status", true},
		{"advance 1s\nresult c1 outcome=ok\ntools s1 count=1\n", "", false},
		{"[cap:virtual-clock] advance 1s\n[cap:virtual-clock] count 0 x\n", "", false},
		{"now 0s\nadvance 1s\ncount-journal fx.journal 1 launch\n", "advance then count-journal", true},
		{"open s1\n[cap:virtual-clock] now 0s\nawait-timer 1s\n", "await-timer", true},
		{"advance 1s\nawait x\n\n-- f.txt --\ncount 0 x\n", "", false},
		{"advance 5s\nawait x\nadvance 1h\nresult c1 outcome=ok\n", "advance 1h", true},
		{"advance 1m\nawait x\n", "", false},
	} {
		got, virtual := scenarios.UsesVirtualTime([]byte(tc.script))
		if got != tc.want || virtual != tc.virtual {
			t.Errorf("UsesVirtualTime(%q) = %q, %v; want %q, %v", tc.script, got, virtual, tc.want, tc.virtual)
		}
	}
}
