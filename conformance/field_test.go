package conformance

import (
	"strings"
	"testing"

	"github.com/mcplife/mcplife/conformance/driver"
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
