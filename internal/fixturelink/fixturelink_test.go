package fixturelink

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain answers as the fixture would, by name, so that ForTest's link
// can be run.
func TestMain(m *testing.M) {
	if Invoked(os.Args[0]) {
		os.Stdout.WriteString("started as " + filepath.Base(os.Args[0]) + "\n")
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestForTestRunsThisBinaryAsTheFixture(t *testing.T) {
	link := ForTest(t)
	if filepath.Base(link) != Name {
		t.Fatalf("link %s, want one named %s", link, Name)
	}
	out, err := exec.Command(link).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "started as mcp-fixture" {
		t.Fatalf("the link printed %q", got)
	}
}

func TestMakeFailsOnAnExistingLink(t *testing.T) {
	dir := t.TempDir()
	if _, err := Make(dir, "/bin/true"); err != nil {
		t.Fatal(err)
	}
	if _, err := Make(dir, "/bin/true"); err == nil {
		t.Fatal("a second Make in the same directory succeeded")
	}
}

func TestInvoked(t *testing.T) {
	for arg0, want := range map[string]bool{
		"mcp-fixture":                 true,
		"/tmp/x/mcp-fixture":          true,
		`mcp-fixture.exe`:             true,
		"harness":                     false,
		"/tmp/mcp-fixture/harness":    false,
		"mcp-fixture-2":               false,
		"/usr/local/bin/mcp-fixtures": false,
	} {
		if got := Invoked(arg0); got != want {
			t.Errorf("Invoked(%q) = %v, want %v", arg0, got, want)
		}
	}
}
