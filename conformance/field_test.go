package conformance

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/onsi/ginkgo/v2/types"
)

// fieldReport is a report in which every requirement passed.
func fieldReport() VerdictReport {
	v := VerdictReport{Implementation: driver.Implementation{Name: "x", Version: "1"}, Clock: "real", Eras: Both}
	for _, k := range Keys() {
		id, era := SplitKey(k)
		v.Verdicts = append(v.Verdicts, RequirementVerdict{ID: id, Era: era, Verdict: Passed})
	}
	return v
}

// indexOf finds the verdict of key in v.
func indexOf(t *testing.T, v VerdictReport, key string) int {
	t.Helper()
	for i, rv := range v.Verdicts {
		if Key(rv.ID, rv.Era) == key {
			return i
		}
	}
	t.Fatalf("no verdict %s", key)
	return -1
}

// Measurements vary between runs and are not compared; a verdict's credit
// to the driver is, since it changes what the matrix says of the library.
func TestSameVerdictsIgnoresMeasuredComparesGlue(t *testing.T) {
	key := Key("FIELD-CRASH-003", driver.EraLegacy)
	measured := fieldReport()
	measured.Verdicts[indexOf(t, measured, key)].Measured = "answered again 1.55 s after the kill"
	if d := SameVerdicts(fieldReport(), measured); len(d) != 0 {
		t.Errorf("a measurement made the reports differ: %v", d)
	}
	glued := fieldReport()
	glued.Verdicts[indexOf(t, glued, key)].Glue = "the driver restarts on close"
	if d := SameVerdicts(fieldReport(), glued); len(d) != 1 || !strings.Contains(d[0], key) || !strings.Contains(d[0], "driver") {
		t.Errorf("want the new credit to the driver reported for %s, got %v", key, d)
	}
}

// The matrix shows a field verdict with what it measured, and credits a
// verdict the driver's glue decides to the driver, with the reason.
func TestMatrixShowsMeasuredAndGlue(t *testing.T) {
	key := Key("FIELD-CRASH-003", driver.EraLegacy)
	v := fieldReport()
	i := indexOf(t, v, key)
	v.Verdicts[i].Measured = "answered again 1.55 s after the kill (4 calls, 2 launches)"
	v.Verdicts[i].Glue = "restart on client.onclose (driver.js)"
	md := RenderMatrix([]MatrixColumn{{Name: ReferenceColumn, Report: fieldReport()}, {Name: "some-client", Report: v}})
	row := ""
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| `FIELD-CRASH-003` | legacy |") {
			row = l
		}
	}
	if !strings.Contains(row, "pass (driver)") || !strings.Contains(row, "answered again 1.55 s after the kill") {
		t.Errorf("FIELD-CRASH-003@legacy row = %q; want pass (driver) and the measurement", row)
	}
	if !strings.Contains(md, "`some-client`, `"+key+"`: the driver's own code, not the library: restart on client.onclose (driver.js)") {
		t.Errorf("the matrix does not give the driver's reason for %s", key)
	}
	if !strings.Contains(md, "## Profile `field`") {
		t.Errorf("the matrix has no field profile section")
	}
}

func TestFailedChecks(t *testing.T) {
	msg := "[response] expected: the call ends within 10 s\n  observed: no outcome after 10.0 s\n[process] expected: the child is gone\n  observed: pid 4321\n2 checks failed\n  last 3 events: ..."
	if got, want := FailedChecks(msg), []string{"[response] the call ends within 10 s", "[process] the child is gone"}; !slices.Equal(got, want) {
		t.Errorf("FailedChecks = %q, want %q", got, want)
	}
	if got, want := FailedChecks("awaiting tools.registered: timed out after 60s (pid 123) in /tmp/x-42/journal\nmore"), []string{"outside a check: awaiting tools.registered: timed out after Ns (pid N) in PATH"}; !slices.Equal(got, want) {
		t.Errorf("FailedChecks outside a check = %q, want %q", got, want)
	}
	// A failed wait is fingerprinted by what it awaited, the same whether
	// the implementation went idle or the await bound ran out.
	idle := "await failed after 2.273s of real time: the implementation went idle: nothing in flight for 250ms\n  awaited: journal fx: 1 \"tools-list\" entries\n  seen instead: journal fx: last 4 of 4 entries"
	timedOut := "await timed out after 1m0.002s of real time (-await-timeout 1m0s): driver: context deadline exceeded\n  awaited: journal fx: 1 \"tools-list\" entries"
	want := []string{`outside a check: await: journal fx: N "tools-list" entries`}
	for _, msg := range []string{idle, timedOut} {
		if got := FailedChecks(msg); !slices.Equal(got, want) {
			t.Errorf("FailedChecks(%q) = %q, want %q", msg, got, want)
		}
	}
}

// A baseline entry pins its failing checks with indented fails: lines; a
// run that fails the requirement on other checks is a changed failure and
// fails the run, while the same checks stay an expected failure.
func TestBaselinePinsTheFailure(t *testing.T) {
	b, err := ParseBaseline("b.txt", strings.NewReader("CORE-NAMING-001  known\n  fails: [response] the name is mcp_fx_echo\nCORE-NAMING-002 any failure\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.pinned("CORE-NAMING-001", driver.EraLegacy); !slices.Equal(got, []string{"[response] the name is mcp_fx_echo"}) {
		t.Errorf("pinned = %q", got)
	}
	if _, err := ParseBaseline("b.txt", strings.NewReader("  fails: [response] x\n")); err == nil || !strings.Contains(err.Error(), "must follow its entry") {
		t.Errorf("a fails: line without an entry: %v", err)
	}
	rep := types.Report{SpecReports: types.SpecReports{
		specReport("CORE-NAMING-001@legacy", types.SpecStateFailed, "[response] expected: the name is mcp_fx_echo\n  observed: mcp__fx__echo"),
		specReport("CORE-NAMING-001@modern", types.SpecStateFailed, "[journal] expected: something else\n  observed: x"),
		specReport("CORE-NAMING-002@legacy", types.SpecStateFailed, "[journal] expected: anything\n  observed: x"),
	}}
	s := &state{cfg: Config{Target: Target{Name: "t"}, Baseline: b}, mode: ClockVirtual,
		hello: &driver.HelloResult{Protocol: driver.ProtocolVersion, Implementation: driver.Implementation{Name: "x"}, Eras: Both}}
	res := summarize(s, rep)
	for key, want := range map[string]Verdict{"CORE-NAMING-001@legacy": ExpectedFailure, "CORE-NAMING-001@modern": ChangedFailure, "CORE-NAMING-002@legacy": ExpectedFailure} {
		id, era := SplitKey(key)
		if o, _ := res.Outcome(id, era); o.Verdict != want {
			t.Errorf("%s: %s, want %s (%s)", key, o.Verdict, want, o.Message)
		}
	}
	if res.OK || res.Failed != 1 {
		t.Errorf("a changed failure must fail the run: %+v", res)
	}
	v := res.Verdicts()
	if got := v.Verdicts[indexOf(t, v, "CORE-NAMING-001@legacy")].Failed; !slices.Equal(got, []string{"[response] the name is mcp_fx_echo"}) {
		t.Errorf("the verdict report's failed checks = %q", got)
	}
	stored := v
	stored.Verdicts = slices.Clone(v.Verdicts)
	i := indexOf(t, stored, "CORE-NAMING-002@legacy")
	stored.Verdicts[i].Failed = []string{"[journal] another check"}
	if d := SameVerdicts(stored, v); len(d) != 1 || !strings.Contains(d[0], "failing checks") {
		t.Errorf("a stored report pinning other failing checks: %v", d)
	}
}

// A measurement may quote a client's error message: it becomes one safe,
// bounded line.
func TestMeasuredTextIsOneSafeLine(t *testing.T) {
	got := measuredText("error: Service Unavailable\n)\t\x1b[31mred\x1b[0m " + strings.Repeat("x", 400))
	if strings.ContainsAny(got, "\n\t\x1b") || !strings.HasPrefix(got, "error: Service Unavailable ) \\x1b[31mred") {
		t.Errorf("measuredText = %q", got[:60])
	}
	if n := len([]rune(got)); n != maxMeasured+1 {
		t.Errorf("measuredText is %d runes, want %d and an ellipsis", n, maxMeasured+1)
	}
}

// staleSessions stops a retry loop once the server has answered 404 for
// the same session on steadyCalls+1 calls in a row with no initialize in
// between; a call that re-initializes starts the count again, and a 404 of
// a GET stream or another session does not count.
func TestStaleSessionsDecidesFromReuse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fx.journal")
	w, err := journal.NewWriter(path, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Begin(1, nil)
	h := &H{journals: map[string]string{"fx": path}, followers: map[string]*journal.Follower{"fx": journal.NewFollower(path)}}
	var s staleSessions
	call := func(entries ...[2]string) string {
		t.Helper()
		marks := h.journalMarks()
		for _, e := range entries {
			fields := map[string]any{}
			if e[1] != "" {
				fields = map[string]any{"session": e[1], "method": "tools/call"}
			}
			if e[0] == "session-unknown GET" {
				fields["method"] = "GET"
				e[0] = "session-unknown"
			}
			w.Write(e[0], fields)
		}
		return s.add(h, marks)
	}
	gone := func(session string) [2]string { return [2]string{"session-unknown", session} }
	steps := []struct {
		entries [][2]string
		want    string
	}{
		{[][2]string{gone("a")}, ""},
		{[][2]string{{"session-unknown GET", "a"}, gone("a")}, ""},
		// The client re-initialized during the call: the count starts again.
		{[][2]string{gone("a"), {"initialize", ""}}, ""},
		{[][2]string{gone("a")}, ""},
		{[][2]string{gone("a")}, ""},
		// A call with no 404 breaks the run.
		{[][2]string{{"received", ""}}, ""},
		{[][2]string{gone("b")}, ""},
		{[][2]string{{"session-expired", "b"}}, ""},
		{[][2]string{gone("b")}, "fx"},
	}
	for i, st := range steps {
		if got := call(st.entries...); got != st.want {
			t.Fatalf("call %d: add = %q, want %q", i+1, got, st.want)
		}
	}
}
