package doctor_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/doctor"
	"github.com/mcplife/mcplife/internal/fixturelink"
	"github.com/mcplife/mcplife/runtime/event"
)

// hostile holds what a project config or a server can put in a name, an
// error or a stderr line to act on the terminal instead of being shown:
// retitle the window (OSC 0, ended by BEL), clear the screen (CSI 2J),
// hide a link (OSC 8), overwrite the line (CR), reorder it (a bidi
// override).
var hostile = map[string]string{
	"title": "t\x1b]0;pwned\x07",
	"clear": "c\x1b[2J\x1b[H",
	"link":  "l\x1b]8;;https://evil.example\x1b\\docs\x1b]8;;\x1b\\",
	"cr":    "ok\rFAILED",
	"bidi":  "b\u202eexe.txt",
	"c1":    "c1\u009b2J",
}

// raw fails the test when text holds a character that acts on a terminal.
func raw(t *testing.T, what, text string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\r", "\u202e", "\u009b", "\xff"} {
		if strings.Contains(text, c) {
			t.Errorf("%s holds a raw %q:\n%s", what, c, text)
		}
	}
}

// A project config whose server names hold terminal escapes, a server that
// writes escapes to stderr and fails, and a command whose path holds them
// (it comes back in the error): the table shows every one of them as
// visible escapes and holds no raw control character.
func TestTableShowsHostileTextEscaped(t *testing.T) {
	fx := fixturelink.ForTest(t)
	project, home := t.TempDir(), t.TempDir()
	servers := map[string]any{}
	for _, v := range hostile {
		servers[v] = map[string]any{"command": fx}
	}
	servers["noisy"] = map[string]any{"command": fx, "restart": "never",
		"env": map[string]string{"MCP_FIXTURE_FAIL_ON_START": "1", "MCP_FIXTURE_STDERR": "fatal\x1b]0;pwned\x07 \x1b[2J\rall good \u202eok"}}
	servers["missing"] = map[string]any{"command": filepath.Join(project, "no-such\x1b[2J\x07-server")}
	writeConfig(t, project, ".mcp.json", servers)
	rep := check(t, doctor.Options{ProjectDir: project, HomeDir: home, Trusted: true})

	noisy, missing := server(t, rep, "noisy"), server(t, rep, "missing")
	if noisy.Status != doctor.StatusFailed || len(noisy.Stderr) == 0 || !strings.Contains(noisy.Stderr[0], "\x1b]0;pwned") {
		t.Fatalf("noisy: want a failure quoting its stderr as written: %+v", noisy)
	}
	if missing.Status != doctor.StatusFailed || !strings.Contains(missing.Error, "\x1b[2J") {
		t.Fatalf("missing: want a failure whose error names the path as written: %+v", missing)
	}
	text := table(t, rep, 200)
	raw(t, "the table", text)
	for _, want := range []string{
		`t\x1b]0;pwned\x07`, `c\x1b[2J\x1b[H`, `l\x1b]8;;https://evil.e`, `ok\rFAILED`, `b\u202eexe.txt`, `c1\u009b2J`,
		`stderr| fatal\x1b]0;pwned\x07 \x1b[2J\rall good \u202eok`, `no-such\x1b[2J\x07-server`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %s:\n%s", want, text)
		}
	}
}

// -watch lines show a server's name and its error with escapes too, and
// bytes that are not UTF-8 (which no JSON config can hold) as \xNN.
func TestWatchLineHostile(t *testing.T) {
	for _, v := range append(slices.Collect(maps.Values(hostile)), "bad\xff") {
		e := event.Event{At: time.Second, Server: v, Kind: event.ServerFailed,
			Attrs: map[string]any{"error": "boom\x1b[2J\r" + v + "\nsecond line", "reason": v}}
		line := doctor.WatchLine(e, 400)
		raw(t, "the watch line", line)
		if !strings.Contains(line, `boom\x1b[2J\r`) {
			t.Errorf("the watch line lacks the escaped error: %q", line)
		}
	}
}
