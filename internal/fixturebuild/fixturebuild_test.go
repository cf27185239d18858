package fixturebuild

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/internal/proctest"
)

// TestMain checks for leaked goroutines (goleak, through proctest.Main)
// and for processes left behind.
func TestMain(m *testing.M) { proctest.Main(m) }

func TestBuildRunsTheFixture(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	bin, err := Build(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(bin) != "mcp-fixture" {
		t.Errorf("Build returned %s, want a program named mcp-fixture", bin)
	}
	// The fixture names itself in what it refuses: proof it is the fixture.
	cmd := exec.Command(bin)
	cmd.Env = []string{"MCP_FIXTURE_TRANSPORT=carrier-pigeon"}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `MCP_FIXTURE_TRANSPORT="carrier-pigeon"`) {
		t.Errorf("the built program does not refuse a bad transport as the fixture does: %v\n%s", err, out)
	}
}

func TestWithoutRace(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "",
		"-race":                    "",
		"-buildvcs=false -race -v": "-buildvcs=false -v",
		"-race=true -trimpath":     "-trimpath",
		"-mod=mod":                 "-mod=mod",
	} {
		if got := withoutRace(in); got != want {
			t.Errorf("withoutRace(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDependencyDiffNamesTheFirstDifference(t *testing.T) {
	build := func(deps ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{}
		for i := 0; i+1 < len(deps); i += 2 {
			bi.Deps = append(bi.Deps, &debug.Module{Path: deps[i], Version: deps[i+1]})
		}
		return bi
	}
	replaced := build("example.com/a", "v1.0.0")
	replaced.Deps[0].Replace = &debug.Module{Path: "../a", Version: ""}
	for _, tc := range []struct {
		name string
		a, b *debug.BuildInfo
		want string
	}{
		{"same", build("example.com/a", "v1.0.0"), build("example.com/a", "v1.0.0", "example.com/b", "v2.0.0"), ""},
		{"only one has it", build("example.com/c", "v1.0.0"), build("example.com/a", "v1.0.0"), ""},
		{"other version", build("example.com/a", "v1.1.0"), build("example.com/a", "v1.0.0"), "example.com/a v1.1.0, not v1.0.0"},
		{"replaced", replaced, build("example.com/a", "v1.0.0"), "example.com/a ../a , not v1.0.0"},
	} {
		if got := dependencyDiff(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: dependencyDiff = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Matching builds the fixture from the module here and accepts it when it
// is the one this program links. A test binary's build information names
// the module only when the go command records it; either way Matching
// must not hand back a program it has not checked.
func TestMatchingChecksWhatItBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	self, _ := debug.ReadBuildInfo()
	bin, err := Matching(context.Background(), t.TempDir())
	if self == nil || self.Main.Path != module {
		if err == nil || !strings.Contains(err.Error(), "not a build of") {
			t.Fatalf("Matching = %q, %v from a program of %v; want it refused", bin, err, self)
		}
		return
	}
	if err != nil {
		t.Fatalf("Matching: %v", err)
	}
	out, err := exec.Command(bin, "-h").Output()
	if err != nil || string(out) != fixture.Usage() {
		t.Errorf("the program Matching returned prints another usage (err %v)", err)
	}
}
