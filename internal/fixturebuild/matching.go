package fixturebuild

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
)

// module is the module path the harness and the fixture belong to.
const module = "github.com/mcplife/mcplife"

// Commit is the source a program was built from, as the go command stamps
// it (`go version -m`): a git revision, and whether the checkout had
// uncommitted changes.
type Commit struct {
	Revision string
	Modified bool
}

// commitOf reads the commit of a build; ok is false when the build is not
// of this module or carries no git stamp (built with -buildvcs=false, or
// outside a checkout).
func commitOf(bi *debug.BuildInfo) (Commit, bool) {
	if bi == nil || bi.Main.Path != module {
		return Commit{}, false
	}
	var c Commit
	vcs := ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs":
			vcs = s.Value
		case "vcs.revision":
			c.Revision = s.Value
		case "vcs.modified":
			c.Modified = s.Value == "true"
		}
	}
	return c, vcs == "git" && c.Revision != ""
}

// Matching returns a fixture program built from exactly the source of the
// running program, building it into cacheDir the first time; the program
// is then kept under the commit's revision, so later runs of the same
// commit start at once.
//
// The fixture and the harness must agree on every knob and on the journal
// format, so the fixture is used only when that is proven: the running
// program and the fixture are both stamped with the same git revision and
// neither was built from a checkout with uncommitted changes. Otherwise
// Matching returns an error saying why, and the caller plays the fixture
// itself (as the harness always could). The build runs the go command in
// the working directory, which must lie in a checkout of the module.
//
// Why bother: a conformance run starts about six fixture processes per
// requirement, and a process of the whole harness program spends most of
// its short life initializing packages the fixture never uses; a program
// of the fixture alone makes a run about a third faster.
func Matching(ctx context.Context, cacheDir string) (string, error) {
	bi, _ := debug.ReadBuildInfo()
	self, ok := commitOf(bi)
	switch {
	case !ok:
		return "", errors.New("this program carries no git stamp of " + module)
	case self.Modified:
		return "", errors.New("this program was built from a checkout with uncommitted changes")
	}
	dir := filepath.Join(cacheDir, "mcplife", "fixture", self.Revision)
	bin := filepath.Join(dir, "mcp-fixture")
	if built, err := buildinfo.ReadFile(bin); err == nil {
		if c, ok := commitOf(built); ok && c == self {
			return bin, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("fixture cache: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("fixture cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	fresh, err := Build(ctx, tmp)
	if err != nil {
		return "", err
	}
	built, err := buildinfo.ReadFile(fresh)
	if err != nil {
		return "", fmt.Errorf("reading the fixture's build stamp: %w", err)
	}
	if c, ok := commitOf(built); !ok || c != self {
		return "", fmt.Errorf("the checkout here is not the commit this program was built from (%s, uncommitted changes %v; this program: %s)",
			c.Revision, c.Modified, self.Revision)
	}
	// Rename is atomic: a harness running beside this one sees either no
	// program or a whole one.
	if err := os.Rename(fresh, bin); err != nil {
		return "", fmt.Errorf("fixture cache: %w", err)
	}
	return bin, nil
}
