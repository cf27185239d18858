package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/fixturelink"
)

// TestBenchSmoke runs every workload of harness bench at a tiny size, with
// this test binary as the fixture (through an mcp-fixture link), and
// compares the report with itself.
func TestBenchSmoke(t *testing.T) {
	fx := fixturelink.ForTest(t)
	jf := filepath.Join(t.TempDir(), "bench.json")
	code, out, errs := harness(t, "bench", "-fixture", fx, "-runs", "1", "-servers", "5", "-call-servers", "2", "-calls", "20",
		"-storm-servers", "3", "-cache-servers", "3", "-cache-slow", "1", "-slow-init", "300ms", "-json", jf)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"startup", "processes-left", "calls ", "failures", "storm", "peak-concurrent-connects", "cache", "gate-warm"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "startup  run 1/1") {
		t.Errorf("no progress on stderr:\n%s", errs)
	}
	code, out, errs = harness(t, "bench", "-compare", jf, jf)
	if code != 0 || !strings.Contains(out, "+0.0%") {
		t.Fatalf("compare: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if code, _, _ := harness(t, "bench", "-workload", "nope"); code != 2 {
		t.Errorf("unknown workload: exit %d, want 2", code)
	}
}

// TestBenchImplBadUsage: -impl wants NAME=COMMAND, distinct names and a
// known era; each mistake is bad usage (exit 2) with a message naming it.
func TestBenchImplBadUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-impl", "no-command"}, `-impl "no-command": want NAME=COMMAND`},
		{[]string{"-impl", "=cmd"}, `want NAME=COMMAND`},
		{[]string{"-impl", "a=x", "-impl", "a=y"}, `client "a" named twice`},
		{[]string{"-impl", "a=x", "-impl-era", "future"}, `era "future"`},
		{[]string{"-impl", "a=x", "extra"}, "extra"},
	} {
		code, _, errs := harness(t, append([]string{"bench", "-fixture", "/bin/true"}, tt.args...)...)
		if code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("bench %v: exit %d, stderr %q; want 2 and %q", tt.args, code, errs, tt.want)
		}
	}
}
