package fixturebuild

import (
	"context"
	"os/exec"
	"path/filepath"
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
