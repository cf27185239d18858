package doctor_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcplife/mcplife/internal/doctor"
	"github.com/mcplife/mcplife/internal/fixturelink"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
)

// writeConfig writes {"mcpServers": servers} to dir/name. Stdio servers
// get GORACE=atexit_sleep_ms=0, so that a race-enabled fixture exits at
// once.
func writeConfig(t *testing.T, dir, name string, servers map[string]any) string {
	t.Helper()
	for _, v := range servers {
		if m, ok := v.(map[string]any); ok && m["command"] != nil {
			envs, _ := m["env"].(map[string]string)
			if envs == nil {
				envs = map[string]string{}
			}
			envs["GORACE"] = "atexit_sleep_ms=0"
			m["env"] = envs
		}
	}
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// env returns an environment lookup with overrides.
func env(over map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if v, ok := over[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
}

// check starts a doctor, takes its report and closes it.
func check(t *testing.T, opts doctor.Options) *doctor.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := doctor.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep := d.Report()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return rep
}

func server(t *testing.T, rep *doctor.Report, name string) doctor.Server {
	t.Helper()
	for _, s := range rep.Servers {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("server %q is not in the report: %+v", name, rep.Servers)
	return doctor.Server{}
}

func table(t *testing.T, rep *doctor.Report, width int) string {
	t.Helper()
	var b bytes.Buffer
	if err := doctor.WriteTable(&b, rep, doctor.TableOptions{Width: width}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var wantRE = regexp.MustCompile(`// want: (\S+)`)

// TestValidationProblems checks every problem the config package reports
// (testdata/problems.jsonc marks each line with "want: FIELD", and three
// more files break at file level): each is in the report with its file,
// line and field, in the table as file:line:col: field, and one broken
// entry never hides the others.
func TestValidationProblems(t *testing.T) {
	files := []string{"problems.jsonc", "malformed.json", "toplevel.json", "section.json"}
	var paths []string
	for _, f := range files {
		p, err := filepath.Abs(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	e := env(map[string]string{"BANG": "!rm -rf /", config.TimeoutEnvVar: "soon"})
	rep := check(t, doctor.Options{Files: paths, Env: e})

	// Every diagnostic of the config package is reported, once.
	res, err := config.Discover(config.Options{OnlyFiles: true, Env: e, Files: []config.File{
		{Path: paths[0], Level: config.LevelUser}, {Path: paths[1], Level: config.LevelUser},
		{Path: paths[2], Level: config.LevelUser}, {Path: paths[3], Level: config.LevelUser}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []doctor.Problem
	got = append(got, rep.Problems...)
	for _, s := range rep.Servers {
		got = append(got, s.Problems...)
	}
	key := func(file string, line, col int, field, msg string) string {
		return fmt.Sprintf("%s:%d:%d %s: %s", file, line, col, field, msg)
	}
	have := map[string]bool{}
	for _, p := range got {
		have[key(p.File, p.Line, p.Column, p.Field, p.Message)] = true
	}
	for _, d := range res.Diagnostics {
		if !have[key(d.File, d.Line, d.Column, d.Field, d.Message)] {
			t.Errorf("diagnostic not in the report: %v", d.Error())
		}
	}
	if len(got) != len(res.Diagnostics) {
		t.Errorf("report has %d problems, config.Discover %d", len(got), len(res.Diagnostics))
	}

	// Each marked line of problems.jsonc has its problem, by line and field.
	text := table(t, rep, 200)
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for i, line := range strings.Split(string(data), "\n") {
		m := wantRE.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		marked++
		field := m[1]
		if field == "-" {
			field = ""
		}
		found := false
		for _, p := range got {
			if p.File == paths[0] && p.Line == i+1 && p.Field == field {
				found = true
				if !strings.Contains(text, fmt.Sprintf("%s:%d:%d: ", paths[0], p.Line, p.Column)) {
					t.Errorf("table lacks %s:%d:%d:\n%s", paths[0], p.Line, p.Column, text)
				}
			}
		}
		if !found {
			t.Errorf("problems.jsonc:%d: no problem with field %q reported; got %v", i+1, field, got)
		}
	}
	if marked < 35 {
		t.Errorf("only %d marked lines found in problems.jsonc", marked)
	}
	// The file-level problems and the environment override.
	for _, want := range []string{
		paths[1] + ":1:40: malformed JSON",
		paths[2] + ":1:1: top-level value must be an object",
		paths[3] + ":2:17: mcpServers: must be an object",
		config.TimeoutEnvVar + ": must be a whole number",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	// Invalid entries are listed as servers, never started; valid ones with
	// warnings keep going.
	if s := server(t, rep, "type-unknown"); s.Status != doctor.StatusInvalid || s.Transport != "" {
		t.Errorf("type-unknown: %+v", s)
	}
	if s := server(t, rep, "w-timeout"); s.Status != doctor.StatusDisabled {
		t.Errorf("w-timeout: %+v", s)
	}
	if s := server(t, rep, "w-enabled"); s.Status != doctor.StatusFailed || !strings.Contains(s.Error, "/nonexistent/mcplife-doctor-test") {
		t.Errorf("w-enabled: %+v", s)
	}
	if rep.Failed == 0 {
		t.Error("report.Failed = 0 for broken configs")
	}
}

// TestGoodAndBroken checks that good servers are reported with their tools
// next to a failing one (with its stderr tail), a missing command and an
// invalid entry.
func TestGoodAndBroken(t *testing.T) {
	fx := fixturelink.ForTest(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "mcp.json", map[string]any{
		"good":    map[string]any{"command": fx},
		"more":    map[string]any{"command": fx, "env": map[string]string{"MCP_FIXTURE_EXTRA_TOOLS": "3"}},
		"crashes": map[string]any{"command": fx, "restart": "never", "env": map[string]string{"MCP_FIXTURE_FAIL_ON_START": "1", "MCP_FIXTURE_STDERR": "fatal: cannot open the database"}},
		"missing": map[string]any{"command": filepath.Join(dir, "no-such-server")},
		"broken":  map[string]any{"type": "stdio", "url": "http://127.0.0.1:1/mcp"},
		"off":     map[string]any{"command": fx, "enabled": false},
	})
	rep := check(t, doctor.Options{Files: []string{cfg}})
	if s := server(t, rep, "good"); s.Status != doctor.StatusOK || s.Tools != 9 || s.ConnectMillis < 0 || s.Transport != "stdio" || s.Trust != "user config" || s.File != cfg || s.Level != "user" {
		t.Errorf("good: %+v", s)
	}
	if s := server(t, rep, "more"); s.Status != doctor.StatusOK || s.Tools != 12 {
		t.Errorf("more: %+v", s)
	}
	s := server(t, rep, "crashes")
	if s.Status != doctor.StatusFailed || s.Error == "" || len(s.Stderr) == 0 || s.Stderr[0] != "fatal: cannot open the database" {
		t.Errorf("crashes: %+v", s)
	}
	if s := server(t, rep, "missing"); s.Status != doctor.StatusFailed || !strings.Contains(s.Error, "no-such-server") {
		t.Errorf("missing: %+v", s)
	}
	if s := server(t, rep, "broken"); s.Status != doctor.StatusInvalid || len(s.Problems) == 0 || s.Problems[0].Line != 0 && s.Problems[0].File != cfg {
		t.Errorf("broken: %+v", s)
	}
	if s := server(t, rep, "off"); s.Status != doctor.StatusDisabled {
		t.Errorf("off: %+v", s)
	}
	if rep.Failed != 3 {
		t.Errorf("Failed = %d, want 3 (crashes, missing, broken)", rep.Failed)
	}
	text := table(t, rep, 100)
	for _, want := range []string{"stderr| fatal: cannot open the database", "6 servers: 2 ok, 2 failed, 1 invalid, 1 disabled", "command: required for stdio servers"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	for _, line := range []string{"good ", "more ", "crashes ", "missing ", "broken ", "off "} {
		if !strings.Contains(text, "\n"+line) {
			t.Errorf("table lacks the row of %s:\n%s", line, text)
		}
	}
}

// TestProtocolPerServer checks that the report names the protocol each
// server speaks: a handshake-era (legacy) fixture 2025-11-25, a stateless
// one and a dual-era one 2026-07-28 (stdio servers are asked it first), in
// the JSON form and in the table's PROTOCOL column; a server that never
// connected has none.
func TestProtocolPerServer(t *testing.T) {
	fx := fixturelink.ForTest(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "mcp.json", map[string]any{
		"legacy":  map[string]any{"command": fx, "env": map[string]string{"MCP_FIXTURE_ERA": "legacy"}},
		"modern":  map[string]any{"command": fx, "env": map[string]string{"MCP_FIXTURE_ERA": "modern"}},
		"both":    map[string]any{"command": fx, "env": map[string]string{"MCP_FIXTURE_ERA": "both"}},
		"crashes": map[string]any{"command": fx, "restart": "never", "env": map[string]string{"MCP_FIXTURE_FAIL_ON_START": "1"}},
	})
	rep := check(t, doctor.Options{Files: []string{cfg}})
	for name, want := range map[string]string{"legacy": "2025-11-25", "modern": "2026-07-28", "both": "2026-07-28", "crashes": ""} {
		if s := server(t, rep, name); s.Protocol != want {
			t.Errorf("%s: protocol %q, want %q (%+v)", name, s.Protocol, want, s)
		}
	}
	text := table(t, rep, 100)
	for _, re := range []string{`(?m)^SERVER +STATUS +TYPE +PROTOCOL +TOOLS `, `(?m)^legacy +ok +stdio +2025-11-25 +9 `, `(?m)^modern +ok +stdio +2026-07-28 +9 `, `(?m)^crashes +failed +stdio +- +- `} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("table does not match %s:\n%s", re, text)
		}
	}
}

// TestDiscoveryShadowingTrust checks discovery from a project and a home
// directory: the project's definition of a name shadows the user's, a
// project stdio server is blocked until the workspace is trusted, and a
// project remote server is allowed.
func TestDiscoveryShadowingTrust(t *testing.T) {
	fx := fixturelink.ForTest(t)
	project, home := t.TempDir(), t.TempDir()
	proj := writeConfig(t, project, ".mcp.json", map[string]any{
		"fx":     map[string]any{"command": fx},
		"remote": map[string]any{"type": "http", "url": "http://127.0.0.1:1/mcp", "timeout": 5000},
	})
	user := writeConfig(t, home, ".mcplife/mcp.json", map[string]any{
		"fx":   map[string]any{"command": fx, "env": map[string]string{"MCP_FIXTURE_EXTRA_TOOLS": "1"}},
		"mine": map[string]any{"command": fx},
	})
	rep := check(t, doctor.Options{ProjectDir: project, HomeDir: home})
	s := server(t, rep, "fx")
	// .mcplife/mcp.json (user) ranks above .mcp.json (project).
	if s.File != user || s.Level != "user" || len(s.Shadowed) != 1 || s.Shadowed[0].File != proj || s.Shadowed[0].Level != "project" || s.Status != doctor.StatusOK || s.Tools != 10 {
		t.Errorf("fx: %+v", s)
	}
	if s := server(t, rep, "remote"); s.Trust != "project, remote" || s.Status != doctor.StatusFailed || s.Transport != "http" {
		t.Errorf("remote: %+v", s)
	}

	// A project stdio server: blocked, then trusted.
	writeConfig(t, project, ".mcp.json", map[string]any{"proj": map[string]any{"command": fx}})
	rep = check(t, doctor.Options{ProjectDir: project, HomeDir: home})
	if s := server(t, rep, "proj"); s.Status != doctor.StatusBlocked || s.Trust != "blocked: untrusted" || !strings.Contains(s.Error, "not trusted") {
		t.Errorf("untrusted proj: %+v", s)
	}
	if rep.Failed != 0 {
		t.Errorf("a blocked server counts as failed: %+v", rep)
	}
	if text := table(t, rep, 100); !strings.Contains(text, "-trust connects blocked project servers") {
		t.Errorf("table does not explain -trust:\n%s", text)
	}
	rep = check(t, doctor.Options{ProjectDir: project, HomeDir: home, Trusted: true})
	if s := server(t, rep, "proj"); s.Status != doctor.StatusOK || s.Trust != "project, trusted" {
		t.Errorf("trusted proj: %+v", s)
	}
}

// TestCollisions checks that two servers whose tools map to one exposed
// name are both told.
func TestCollisions(t *testing.T) {
	fx := fixturelink.ForTest(t)
	cfg := writeConfig(t, t.TempDir(), "mcp.json", map[string]any{
		"fx-a": map[string]any{"command": fx},
		"fx_a": map[string]any{"command": fx},
	})
	rep := check(t, doctor.Options{Files: []string{cfg}})
	for _, name := range []string{"fx-a", "fx_a"} {
		s := server(t, rep, name)
		if len(s.Collisions) != 9 || !strings.HasPrefix(s.Collisions[0], "mcp_fx_a_") {
			t.Errorf("%s: collisions %q", name, s.Collisions)
		}
	}
	if text := table(t, rep, 120); !strings.Contains(text, "collision: mcp_fx_a_") {
		t.Errorf("table:\n%s", text)
	}
}

// TestJSONSchema keeps the -json form stable: the key paths of a report
// match testdata/schema.txt (go test -update rewrites it after a
// deliberate change, which must also bump doctor.Schema).
func TestJSONSchema(t *testing.T) {
	rep := &doctor.Report{Schema: doctor.Schema, Sources: []string{"/a"}, Problems: []doctor.Problem{{}},
		Servers: []doctor.Server{{Shadowed: []doctor.Location{{}}, Problems: []doctor.Problem{{Server: "x"}}, Collisions: []string{"c"}, Stderr: []string{"s"}, Error: "e"}}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				walk(prefix+"."+k, c)
			}
		case []any:
			if len(x) > 0 {
				walk(prefix+"[]", x[0])
			} else {
				paths = append(paths, prefix+"[]")
			}
		default:
			paths = append(paths, fmt.Sprintf("%s %T", prefix, x))
		}
	}
	walk("", v)
	sort.Strings(paths)
	got := strings.Join(paths, "\n") + "\n"
	golden := filepath.Join("testdata", "schema.txt")
	if os.Getenv("MCPLIFE_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the JSON schema changed (a renamed or removed field bumps doctor.Schema; then MCPLIFE_UPDATE_GOLDEN=1 go test ./internal/doctor):\ngot:\n%swant:\n%s", got, want)
	}
	if doctor.Schema != "mcplife-doctor/1" {
		t.Errorf("Schema = %q", doctor.Schema)
	}
}

// TestTableWidth checks that every line fits 80 and 120 columns.
func TestTableWidth(t *testing.T) {
	long := strings.Repeat("x", 300)
	rep := &doctor.Report{Schema: doctor.Schema, Servers: []doctor.Server{{
		Name: "a-server-with-a-very-long-name-indeed-" + long, Status: doctor.StatusFailed, File: "/very/long/path/" + long + "/mcp.json",
		Level: "user", Transport: "stdio", Trust: "blocked: untrusted workspace", Error: long, Stderr: []string{long},
		Problems:   []doctor.Problem{{Severity: "error", File: "/f/" + long, Line: 3, Column: 4, Field: "args[1]", Message: long}},
		Shadowed:   []doctor.Location{{File: long, Level: "project"}},
		Collisions: []string{long}, ConnectMillis: 123456,
	}}, Problems: []doctor.Problem{{Severity: "error", File: long, Message: long}}}
	for _, w := range []int{80, 120} {
		text := table(t, rep, w)
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			if n := utf8.RuneCountInString(line); n > w {
				t.Errorf("width %d: line of %d characters: %s", w, n, line)
			}
		}
	}
}

// TestWatchStreamsRestarts checks -watch's event stream with a server that
// exits after every handshake: the exits and restarts are streamed as they
// happen. The test waits for events, never for time to pass.
func TestWatchStreamsRestarts(t *testing.T) {
	fx := fixturelink.ForTest(t)
	cfg := writeConfig(t, t.TempDir(), "mcp.json", map[string]any{
		"crashy": map[string]any{"command": fx, "restartDelays": []int{0}, "env": map[string]string{"MCP_FIXTURE_EXIT_AFTER": "tools-list"}},
		"steady": map[string]any{"command": fx},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := doctor.Start(ctx, doctor.Options{Files: []string{cfg}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	if rep := d.Report(); server(t, rep, "crashy").Status != doctor.StatusOK {
		t.Fatalf("crashy: %+v", server(t, rep, "crashy"))
	}
	wctx, stop := context.WithCancel(ctx)
	seen := make(chan event.Event, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Watch(wctx, func(e event.Event) { seen <- e })
	}()
	succeeded := 0
	var kinds []string
	for succeeded < 2 {
		select {
		case e := <-seen:
			if !doctor.Watched(e.Kind) {
				t.Errorf("streamed an unwatched event: %v", e)
			}
			if e.Server != "crashy" {
				t.Errorf("event of a server that did nothing: %v", e)
			}
			kinds = append(kinds, string(e.Kind))
			if e.Kind == event.RestartSucceeded {
				succeeded++
			}
		case <-ctx.Done():
			t.Fatalf("no second restart.succeeded; streamed: %v", kinds)
		}
	}
	stop()
	<-done
	joined := strings.Join(kinds, " ")
	for _, want := range []string{"process.exited", "transport.closed", "restart.scheduled", "restart.attempt", "server.connected"} {
		if !strings.Contains(joined, want) {
			t.Errorf("stream lacks %s: %s", want, joined)
		}
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWatchLine checks the -watch line format.
func TestWatchLine(t *testing.T) {
	e := event.Event{At: 1500 * time.Millisecond, Server: "fx", Kind: event.RestartScheduled,
		Attrs: map[string]any{"attempt": int64(2), "delay_ms": int64(1000), "reason": "transport-exit", "policy": "relentless"}}
	got := doctor.WatchLine(e, 120)
	want := "   1.500s  restart.scheduled      fx attempt=2 reason=transport-exit delay_ms=1000 policy=relentless"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if n := utf8.RuneCountInString(doctor.WatchLine(e, 40)); n != 40 {
		t.Errorf("cut to 40: %d characters", n)
	}
	_ = bufio.ScanLines
	_ = strconv.Itoa
}
