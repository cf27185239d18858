package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
)

// TestNothingAppliedFails runs the suite in a child process (ginkgo allows
// one run per process) against a driver that claims only core, selecting
// only the security profile. Nothing applies, so the run fails, and its
// output says so once, without a "SUCCESS!" from ginkgo after the FAIL.
func TestNothingAppliedFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in a child process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// The child is the harness; its driver, started through env, is the
	// reference driver claiming only core.
	impl := "env " + roleEnv + "=driver " + exe
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestConformance$", "-test.count=1", "-ginkgo.no-color", "-profile=security", "-impl="+impl)
	cmd.Env = append(os.Environ(), claimsEnv+"=core")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the run did not fail: %v\n%s", err, tail(out.String(), 40))
	}
	got := out.String()
	// outcomes: one per requirement and era; -profile security also
	// selects the requirements that moved from security to conventions.
	security := 0
	for _, r := range Requirements() {
		if r.In(driver.ProfileSecurity) {
			security += len(r.Eras)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("conformance FAIL: no requirement ran (%d not applicable, %d not selected): %s", security, len(Keys())-security, nothingRanWhy),
		"FAIL! -- 0 Passed | 0 Failed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, tail(got, 40))
		}
	}
	for _, bad := range []string{"SUCCESS!", "suite failure:"} {
		if strings.Contains(got, bad) {
			t.Errorf("the output contradicts itself with %q:\n%s", bad, tail(got, 40))
		}
	}
}

// TestSelectsSome: a label filter that matches no requirement is refused
// before ginkgo runs (it would run no suite node and report success).
func TestSelectsSome(t *testing.T) {
	for filter, ok := range map[string]bool{
		"":                     true,
		"core":                 true,
		"CORE-HOSTILE-001":     true,
		"(core) && (security)": false,
		"no-such-label":        false,
	} {
		if err := selectsSome(filter); (err == nil) != ok {
			t.Errorf("selectsSome(%q) = %v, want ok %v", filter, err, ok)
		}
	}
	if err := selectsSome("core &&"); err == nil || !strings.Contains(err.Error(), "label filter") {
		t.Errorf("a malformed filter: %v", err)
	}
}
