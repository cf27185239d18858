package fixturebuild

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os/exec"
	"runtime/debug"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
)

// module is the module path the harness and the fixture belong to.
const module = "github.com/mcplife/mcplife"

// Matching builds the fixture program into dir from the module that holds
// the working directory and returns its path when it is, as far as can be
// checked, the fixture this program links: both are builds of this module,
// at the same module version, with the same version of every module both
// depend on, and the fixture prints the same usage (its knobs, their types
// and defaults, its tools) as the fixture package linked here. Otherwise it
// returns an error saying why, and the caller plays the fixture itself (as
// the harness always could): from outside a checkout of the module, from
// another module, or without the go command.
//
// The build is quick once the build cache holds the fixture's packages
// (about 1.5 s on two cores, most of it linking). What it buys: a
// conformance run starts about six fixture processes per requirement, and
// a process of the whole harness program spends most of its short life
// initializing packages the fixture never uses (ginkgo, gomega, the suite)
// and faulting in a program twice the size; a program of the fixture alone
// makes a run about a third faster.
func Matching(ctx context.Context, dir string) (string, error) {
	self, ok := debug.ReadBuildInfo()
	if !ok || self.Main.Path != module {
		return "", errors.New("this program is not a build of " + module)
	}
	bin, err := Build(ctx, dir)
	if err != nil {
		return "", err
	}
	built, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("reading the fixture's build information: %w", err)
	}
	if built.Main.Path != self.Main.Path || built.Main.Version != self.Main.Version {
		return "", fmt.Errorf("the fixture built here is of %s %s, this program of %s %s",
			built.Main.Path, built.Main.Version, self.Main.Path, self.Main.Version)
	}
	if diff := dependencyDiff(built, self); diff != "" {
		return "", fmt.Errorf("the fixture built here differs from this program's: %s", diff)
	}
	out, err := exec.CommandContext(ctx, bin, "-h").Output()
	if err != nil {
		return "", fmt.Errorf("running %s -h: %w", bin, err)
	}
	if string(out) != fixture.Usage() {
		return "", errors.New("the fixture built here has other knobs or tools than the one this program links")
	}
	return bin, nil
}

// dependencyDiff names the first module both builds depend on at different
// versions, or returns "".
func dependencyDiff(a, b *debug.BuildInfo) string {
	versions := map[string]string{}
	for _, d := range b.Deps {
		versions[d.Path] = moduleVersion(d)
	}
	for _, d := range a.Deps {
		if v, ok := versions[d.Path]; ok && v != moduleVersion(d) {
			return fmt.Sprintf("%s %s, not %s", d.Path, moduleVersion(d), v)
		}
	}
	return ""
}

// moduleVersion is a dependency's version as built, after replacements.
func moduleVersion(m *debug.Module) string {
	if m.Replace != nil {
		return m.Replace.Path + " " + m.Replace.Version
	}
	return m.Version
}
