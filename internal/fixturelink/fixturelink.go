// Package fixturelink runs a binary that embeds the fixture MCP server
// (fixtures/mcp-fixture/fixture) as that server, by name: the harness, and
// test binaries whose TestMain serves the fixture, turn into the fixture
// when they are started as mcp-fixture, through a symbolic link.
//
// Make makes such a link, ForTest makes one to the running test binary,
// and Invoked tells, from os.Args[0], whether this process was started
// through one.
package fixturelink

import (
	"os"
	"path/filepath"
	"strings"
)

// Name is the name under which a binary runs as the fixture server.
const Name = "mcp-fixture"

// Make makes dir/mcp-fixture a symbolic link to the executable exe and
// returns the link's path.
func Make(dir, exe string) (string, error) {
	link := filepath.Join(dir, Name)
	if err := os.Symlink(exe, link); err != nil {
		return "", err
	}
	return link, nil
}

// Invoked reports whether arg0, a process's os.Args[0], names the fixture:
// its base name is mcp-fixture (or mcp-fixture.exe).
func Invoked(arg0 string) bool {
	return strings.TrimSuffix(filepath.Base(arg0), ".exe") == Name
}

// TB is the part of testing.TB that ForTest uses.
type TB interface {
	Helper()
	TempDir() string
	Fatal(args ...any)
}

// ForTest links the running test binary as mcp-fixture in a temporary
// directory of t and returns the link's path; t fails if it cannot. The
// test binary's TestMain serves the fixture when Invoked(os.Args[0]).
func ForTest(t TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link, err := Make(t.TempDir(), exe)
	if err != nil {
		t.Fatal(err)
	}
	return link
}
