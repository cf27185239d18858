package fixturebuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

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

func TestCommitOfReadsTheGitStamp(t *testing.T) {
	stamp := func(path string, kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: path}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want Commit
		ok   bool
	}{
		{"clean", stamp(module, "vcs", "git", "vcs.revision", "abc", "vcs.modified", "false"), Commit{"abc", false}, true},
		{"modified", stamp(module, "vcs", "git", "vcs.revision", "abc", "vcs.modified", "true"), Commit{"abc", true}, true},
		{"no stamp", stamp(module), Commit{}, false},
		{"another module", stamp("example.com/other", "vcs", "git", "vcs.revision", "abc"), Commit{}, false},
		{"another vcs", stamp(module, "vcs", "hg", "vcs.revision", "abc"), Commit{"abc", false}, false},
		{"no build info", nil, Commit{}, false},
	} {
		got, ok := commitOf(tc.bi)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: commitOf = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// A test binary carries no git stamp (go test does not stamp one), so
// Matching cannot prove a fixture built here is its own source and says so
// without building anything.
func TestMatchingRefusesAnUnstampedProgram(t *testing.T) {
	cache := t.TempDir()
	bin, err := Matching(context.Background(), cache)
	if err == nil || !strings.Contains(err.Error(), "no git stamp") {
		t.Fatalf("Matching = %q, %v; want the missing stamp named", bin, err)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("Matching wrote %d entries into the cache without a stamp", len(entries))
	}
}
