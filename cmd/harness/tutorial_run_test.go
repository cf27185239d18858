package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 28: `harness run -impl` against the tutorial driver
// (conformance/drivers/minimal-node) judges every scenario whose
// capabilities the driver announces: a scenario is skipped only for a
// capability the driver does not announce, at least 25 are judged in the
// legacy era, and the counts its README gives are this run's.
func TestRunTutorialDriverJudgesWhatItAnnounces(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.Abs("../../conformance/drivers/minimal-node")
	if _, err := exec.LookPath("node"); err != nil {
		needNode(t, "node is not on PATH")
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		needNode(t, "conformance/drivers/minimal-node has no node_modules (npm ci)")
		return
	}
	report := filepath.Join(t.TempDir(), "run.json")
	code, out, errs := harness(t, "run", "-era", "legacy", "-json", report, "-impl", "node "+filepath.Join(dir, "driver.js"))
	if code != 0 && code != 1 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		Capabilities  []string `json:"capabilities"`
		Passed        int      `json:"passed"`
		Failed        int      `json:"failed"`
		Skipped       int      `json:"skipped"`
		NotApplicable int      `json:"notApplicable"`
		Scenarios     []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatalf("%s: %v", report, err)
	}
	for _, sc := range run.Scenarios {
		if sc.Status != "skip" {
			continue
		}
		missing, ok := strings.CutPrefix(sc.Reason, "needs ")
		missing, _, _ = strings.Cut(missing, " ")
		if !ok || missing == "" || slices.Contains(run.Capabilities, missing) {
			t.Errorf("%s skipped (%q), but the driver announces %v: a skip must name a capability it lacks", sc.Name, sc.Reason, run.Capabilities)
		}
	}
	if judged := run.Passed + run.Failed; judged < 25 {
		t.Errorf("%d scenarios judged (%d passed, %d failed), want at least 25\n%s", judged, run.Passed, run.Failed, out)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("legacy era: %d pass, %d fail, %d skipped, %d not applicable", run.Passed, run.Failed, run.Skipped, run.NotApplicable)
	if !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), want) {
		t.Errorf("conformance/drivers/minimal-node/README.md should say %q (this run's counts)\n%s", want, out)
	}
}
