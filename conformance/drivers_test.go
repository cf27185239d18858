package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/bench/speed"
	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/docsection"
)

// The drivers of other implementations (conformance/drivers, run by
// .ci/drivers), the matrix rendered from their reports, and the tutorial
// whose code is one of them.

const (
	driversDir = "drivers"
	matrixMD   = "../docs/MATRIX.md"
	driverMD   = "../docs/DRIVER.md"
	// requireNodeEnv makes tests that need Node and the drivers' npm
	// packages fail instead of skipping when those are missing (CI sets it).
	requireNodeEnv = "MCPLIFE_REQUIRE_NODE"
)

// TestMatrix checks that docs/MATRIX.md is rendered from the committed
// verdict reports (conformance/drivers/*/report.json). MCPLIFE_UPDATE_DOCS=1
// rewrites it; so does go run ./cmd/harness matrix.
func TestMatrix(t *testing.T) {
	cols, err := ReadMatrixColumns(driversDir)
	if err != nil {
		t.Fatal(err)
	}
	if cols[0].Name != ReferenceColumn {
		t.Errorf("the first column is %q, want the reference runtime's (%s/%s/report.json)", cols[0].Name, driversDir, ReferenceColumn)
	}
	for _, c := range cols {
		if len(c.Report.Verdicts) != len(Keys()) || len(c.Report.Eras) == 0 {
			t.Errorf("%s/%s/report.json has %d verdicts for %d requirements and eras, eras %v: rerun .ci/drivers -update",
				driversDir, c.Name, len(c.Report.Verdicts), len(Keys()), c.Report.Eras)
		}
		if c.Name == ReferenceColumn && !slices.Equal(c.Report.Eras, Both) {
			t.Errorf("the reference's report speaks %v; it must show both eras", c.Report.Eras)
		}
		for _, v := range c.Report.Verdicts {
			if v.Verdict == Failed || v.Verdict == StaleBaseline {
				t.Errorf("%s/%s/report.json: %s is %s; a committed report holds only passes, expected failures and requirements not claimed", driversDir, c.Name, v.ID, v.Verdict)
			}
		}
	}
	want := RenderMatrix(cols)
	rep, ok, err := ReadMatrixSpeed(driversDir)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		want += RenderMatrixSpeed(rep)
		checkSpeedColumns(t, cols, rep)
	}
	got, err := os.ReadFile(matrixMD)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if string(got) != want {
		if os.Getenv(docsection.UpdateEnv) != "" {
			if err := os.WriteFile(matrixMD, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s is stale: run go run ./cmd/harness matrix (or the tests with %s=1) and review the diff", matrixMD, docsection.UpdateEnv)
	}
}

// TestDriverBaselines checks that every driver's baseline parses, names
// only known requirements and gives each a reason, and that its report
// agrees with it: every expected failure in the report is in the baseline
// and the other way round.
func TestDriverBaselines(t *testing.T) {
	for _, dir := range nodeDrivers(t) {
		base, err := ReadBaseline(filepath.Join(dir, "baseline.txt"))
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if err := base.check(); err != nil {
			t.Errorf("%v", err)
		}
		rep, err := ReadVerdicts(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		// An entry without an era covers every era: it needs an expected
		// failure in at least one.
		xfail := map[string]bool{}
		for _, v := range rep.Verdicts {
			if v.Verdict == ExpectedFailure {
				xfail[Key(v.ID, v.Era)], xfail[v.ID] = true, true
				if reason, _ := base.Reason(v.ID, v.Era); v.Reason != reason {
					t.Errorf("%s: report.json gives %s the reason %q, the baseline %q: rerun .ci/drivers -update", dir, Key(v.ID, v.Era), v.Reason, reason)
				}
			}
		}
		for key := range base.Reasons {
			if !xfail[key] {
				t.Errorf("%s: the baseline lists %s but report.json has no expected failure for it", dir, key)
			}
		}
	}
}

// resolvedURL matches the tarball URL of a lockfile entry.
var resolvedURL = regexp.MustCompile(`"resolved":\s*"([^"]*)"`)

// TestDriverLockfiles checks that every Node driver pins exact versions
// and that its lockfile fetches nothing from outside the npm registry.
func TestDriverLockfiles(t *testing.T) {
	for _, dir := range nodeDrivers(t) {
		var pkg struct {
			Dependencies map[string]string `json:"dependencies"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			err = json.Unmarshal(b, &pkg)
		}
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		for name, v := range pkg.Dependencies {
			if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
				t.Errorf("%s/package.json: %s %q is not an exact version", dir, name, v)
			}
		}
		lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
		if err != nil {
			t.Errorf("%s: %v (run npm install and commit the lockfile)", dir, err)
			continue
		}
		for _, m := range resolvedURL.FindAllSubmatch(lock, -1) {
			if !bytes.HasPrefix(m[1], []byte("https://registry.npmjs.org/")) {
				t.Errorf("%s/package-lock.json resolves a package outside the npm registry: %s", dir, m[1])
			}
		}
	}
}

// TestTutorialMatchesDriver checks that the js code blocks of the tutorial
// in docs/DRIVER.md, concatenated, are conformance/drivers/minimal-node/driver.js.
func TestTutorialMatchesDriver(t *testing.T) {
	const begin = "<!-- BEGIN TUTORIAL: conformance/drivers/minimal-node/driver.js -->"
	doc, err := os.ReadFile(driverMD)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), begin)
	if !ok {
		t.Fatalf("%s has no %q marker", driverMD, begin)
	}
	section, _, ok := strings.Cut(rest, "<!-- END TUTORIAL -->")
	if !ok {
		t.Fatalf("%s: the tutorial has no end marker", driverMD)
	}
	var code strings.Builder
	for _, block := range regexp.MustCompile("(?s)```js\n(.*?)```\n").FindAllStringSubmatch(section, -1) {
		code.WriteString(block[1])
	}
	file, err := os.ReadFile(filepath.Join(driversDir, "minimal-node", "driver.js"))
	if err != nil {
		t.Fatal(err)
	}
	if code.String() != string(file) {
		got, want := strings.Split(code.String(), "\n"), strings.Split(string(file), "\n")
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("the tutorial's code differs from minimal-node/driver.js at line %d:\n doc:  %s\n file: %s", i+1, got[i], want[i])
			}
		}
		t.Fatalf("the tutorial's code has %d lines, minimal-node/driver.js %d", len(got), len(want))
	}
}

// TestDriversHello starts every Node driver and checks its hello: the
// protocol and vocabulary the client accepts, and the implementation and
// version its committed report was measured with (a version bump without a
// new run fails here). It needs node and each driver's node_modules (npm
// ci); without them it skips, unless MCPLIFE_REQUIRE_NODE=1.
func TestDriversHello(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		needNode(t, "node is not on PATH")
	}
	for _, dir := range nodeDrivers(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
				needNode(t, "no "+filepath.Join(dir, "node_modules")+" (run npm ci there, or .ci/drivers)")
			}
			rep, err := ReadVerdicts(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			stderr := &syncBuffer{}
			c, err := driver.StartCommand(ctx, []string{node, filepath.Join(dir, "driver.js")}, nil, stderr)
			if err != nil {
				t.Fatal(err)
			}
			h, err := c.Hello(ctx)
			if err != nil {
				_ = c.Close(ctx)
				t.Fatalf("hello: %v\nstderr: %s", err, stderr.String())
			}
			if !slices.Equal(h.SpokenEras(), rep.Eras) {
				t.Errorf("hello speaks the eras %v, report.json was measured with %v: rerun .ci/drivers -update", h.SpokenEras(), rep.Eras)
			}
			if h.Implementation != rep.Implementation {
				t.Errorf("hello names %s %s, report.json was measured with %s %s: rerun .ci/drivers -update",
					h.Implementation.Name, h.Implementation.Version, rep.Implementation.Name, rep.Implementation.Version)
			}
			if err := c.Close(ctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
	}
}

// TestDriverAISDKHello starts the Vercel AI SDK driver
// (conformance/drivers/ai-sdk) and checks what its hello claims: the
// @ai-sdk/mcp version package.json pins, both eras (createMCPClient probes
// server/discover first and falls back to initialize), the core profile
// on the real clock only, and nothing the library lacks. It needs node and
// the driver's node_modules (npm ci); without them it skips, unless
// MCPLIFE_REQUIRE_NODE=1.
func TestDriverAISDKHello(t *testing.T) {
	dir := filepath.Join(driversDir, "ai-sdk")
	node, err := exec.LookPath("node")
	if err != nil {
		needNode(t, "node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		needNode(t, "no "+filepath.Join(dir, "node_modules")+" (run npm ci there, or .ci/drivers)")
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stderr := &syncBuffer{}
	c, err := driver.StartCommand(ctx, []string{node, filepath.Join(dir, "driver.js")}, nil, stderr)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Hello(ctx)
	if err != nil {
		_ = c.Close(ctx)
		t.Fatalf("hello: %v\nstderr: %s", err, stderr.String())
	}
	want := driver.Implementation{Name: "@ai-sdk/mcp", Version: pkg.Dependencies["@ai-sdk/mcp"]}
	if h.Implementation != want {
		t.Errorf("hello names %s %s, package.json pins %s %s", h.Implementation.Name, h.Implementation.Version, want.Name, want.Version)
	}
	if !slices.Equal(h.SpokenEras(), Both) {
		t.Errorf("hello speaks the eras %v, want both (createMCPClient's protocolVersionDiscovery defaults to true)", h.SpokenEras())
	}
	if !slices.Equal(h.Profiles, []driver.Profile{driver.ProfileCore}) {
		t.Errorf("hello claims the profiles %v, want core alone", h.Profiles)
	}
	if !slices.Equal(h.Capabilities, []driver.Capability{driver.CapStatus, driver.CapJournalPID, driver.CapPendingTimers}) {
		t.Errorf("hello announces the capabilities %v, want status, journal-pid and pending-timers alone (no virtual clock, restarts or list-changed in the library)", h.Capabilities)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestNodePendingTimers runs conformance/drivers/common/timers.js, which
// the Node drivers' timers.pending answers from (capability
// pending-timers), in a Node process with timers of every kind it must
// see: a setTimeout, a setInterval that already fired once, an
// AbortSignal.timeout, an unref'd timer and a refreshed one are listed; a
// cleared timer and a fired setTimeout are not. A timer set through
// node:timers/promises is out of its sight, so one due now is listed
// instead: the harness must never take such a process for idle. The
// keep-alive timer of fetch's connection pool is the platform's and is not
// listed.
func TestNodePendingTimers(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		needNode(t, "node is not on PATH")
	}
	timersJS, err := filepath.Abs(filepath.Join(driversDir, "common", "timers.js"))
	if err != nil {
		t.Fatal(err)
	}
	script := `
import { pendingTimers } from ` + strconv.Quote("file://"+timersJS) + `;
const out = {};
const fired = new Promise((r) => setTimeout(r, 1));
const iv = setInterval(() => {}, 40000);
await fired;
await new Promise((r) => setTimeout(r, 5));
setTimeout(() => {}, 50000);
AbortSignal.timeout(70000);
setTimeout(() => {}, 90000).unref();
const refreshed = setTimeout(() => {}, 60000);
clearTimeout(setTimeout(() => {}, 80000));
refreshed.refresh();
out.seen = pendingTimers();
const { setTimeout: sleep } = await import('node:timers/promises');
const ac = new AbortController();
sleep(100000, null, { signal: ac.signal }).catch(() => {});
out.hidden = pendingTimers();
ac.abort();
clearInterval(iv);
// fetch's connection pool: a server in another process answers with a
// Keep-Alive hint of 20 s, so undici arms a 19 s keep-alive timer for the
// idle socket.
const { spawn } = await import('node:child_process');
const server = spawn(process.execPath, ['-e', "const s = require('node:http').createServer((q, r) => r.end('ok')); s.keepAliveTimeout = 20000; s.listen(0, '127.0.0.1', () => console.log(s.address().port));"], { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise((r) => server.stdout.once('data', (d) => r(String(d).trim())));
await (await fetch('http://127.0.0.1:' + port + '/')).text();
await new Promise((r) => setTimeout(r, 50)); // undici parks the socket
out.pooled = pendingTimers();
server.kill();
process.stdout.write(JSON.stringify(out));
process.exit(0);
`
	f := filepath.Join(t.TempDir(), "timers_test.mjs")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, f).Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct{ Seen, Hidden, Pooled []int64 }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Each listed timer has at most its delay left, and it is listed
	// soonest first: 40 s, 50 s, 60 s, 70 s, 90 s.
	want := []int64{40000, 50000, 60000, 70000, 90000}
	if len(got.Seen) != len(want) {
		t.Fatalf("pendingTimers() = %v, want 5 timers of at most %v ms", got.Seen, want)
	}
	for i, w := range want {
		if got.Seen[i] > w || got.Seen[i] <= w-10000 {
			t.Errorf("pendingTimers()[%d] = %d ms, want at most %d and more than %d (listed %v)", i, got.Seen[i], w, w-10000, got.Seen)
		}
	}
	if len(got.Hidden) == 0 || got.Hidden[0] != 0 {
		t.Errorf("with a node:timers/promises timer pending, pendingTimers() = %v, want one due now (0) first", got.Hidden)
	}
	// The idle socket's keep-alive timer (19 s) is the platform's and is
	// not listed; undici's own tick (at most 500 ms) and the 50 s, 60 s,
	// 70 s and 90 s timers are.
	for _, ms := range got.Pooled {
		if ms > 1000 && ms < 45000 {
			t.Errorf("after a fetch, pendingTimers() = %v: lists %d ms, the connection pool's keep-alive", got.Pooled, ms)
		}
	}
	if n := len(got.Pooled); n < 4 {
		t.Errorf("after a fetch, pendingTimers() = %v, want the test's own 4 timers still listed", got.Pooled)
	}
}

// nodeDrivers returns the Node driver directories (those with a
// package.json).
func nodeDrivers(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(driversDir, "*", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatalf("no %s/*/package.json", driversDir)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

// needNode skips the test for a missing Node prerequisite, or fails it
// when MCPLIFE_REQUIRE_NODE=1.
func needNode(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(requireNodeEnv) == "1" {
		t.Fatalf("%s, and %s=1 requires the Node drivers", why, requireNodeEnv)
	}
	t.Skipf("skipping the Node drivers: %s (set %s=1 to make this a failure)", why, requireNodeEnv)
}

// TestSameVerdicts checks the comparison .ci/drivers relies on: equal
// reports agree, and a changed verdict, reason or version is reported.
func TestSameVerdicts(t *testing.T) {
	base := func() VerdictReport {
		v := VerdictReport{Implementation: driver.Implementation{Name: "x", Version: "1"}, Clock: "real", Eras: Both}
		for _, k := range Keys() {
			id, era := SplitKey(k)
			v.Verdicts = append(v.Verdicts, RequirementVerdict{ID: id, Era: era, Verdict: Passed})
		}
		return v
	}
	if d := SameVerdicts(base(), base()); len(d) != 0 {
		t.Errorf("equal reports differ: %v", d)
	}
	got := base()
	got.Implementation.Version = "2"
	got.Verdicts[0] = RequirementVerdict{ID: got.Verdicts[0].ID, Verdict: ExpectedFailure, Reason: "why"}
	if d := SameVerdicts(base(), got); len(d) != 2 {
		t.Errorf("want 2 differences (version, %s), got %v", got.Verdicts[0].ID, d)
	}
	other := base()
	other.Eras = Legacy
	other.Verdicts[1].Verdict = NotApplicable
	if d := SameVerdicts(base(), other); len(d) != 2 || !strings.Contains(d[0], "eras") || !strings.Contains(d[1], Key(other.Verdicts[1].ID, other.Verdicts[1].Era)) {
		t.Errorf("want 2 differences (eras, %s), got %v", Key(other.Verdicts[1].ID, other.Verdicts[1].Era), d)
	}
	b, err := got.Marshal()
	if err != nil || !bytes.HasSuffix(b, []byte("}\n")) {
		t.Errorf("Marshal: %v, %q", err, b[max(0, len(b)-10):])
	}
}

// checkSpeedColumns checks that the speed report measured every column of
// the matrix, and nothing else, each in at least one run.
func checkSpeedColumns(t *testing.T, cols []MatrixColumn, rep speed.Report) {
	t.Helper()
	var want, got []string
	for _, c := range cols {
		want = append(want, c.Name)
	}
	for _, r := range rep.Results {
		got = append(got, r.Name)
		if r.Runs == 0 {
			t.Errorf("%s/%s: %s completed no run: %v", driversDir, MatrixSpeedFile, r.Name, r.Errors)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Errorf("%s/%s measures %v; the matrix's columns are %v: rerun .ci/speed -update", driversDir, MatrixSpeedFile, got, want)
	}
}

// TestSpeedTable checks that README.md's speed table is rendered from the
// stored speed report (conformance/drivers/speed.json, .ci/speed -update).
// MCPLIFE_UPDATE_DOCS=1 rewrites it.
func TestSpeedTable(t *testing.T) {
	rep, ok, err := ReadMatrixSpeed(driversDir)
	if err != nil {
		t.Fatal(err)
	}
	body := "No speed report is stored yet: run `.ci/speed -update`.\n"
	if ok {
		var b strings.Builder
		speed.WriteMarkdown(&b, rep)
		body = b.String()
	}
	if err := docsection.Check(filepath.Join("..", "README.md"), "speed-table", body); err != nil {
		t.Error(err)
	}
}
