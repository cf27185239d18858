package realservers

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestCommand: the command line runs node on the package's entry point,
// which exists, with the arguments after it (skipped without Node.js and
// the packages, a failure under MCPLIFE_REQUIRE_NODE=1).
func TestCommand(t *testing.T) {
	cmd := Command(t, "../..", "server-everything", "stdio")
	if len(cmd) != 3 || filepath.Base(cmd[0]) != "node" || cmd[2] != "stdio" {
		t.Fatalf("command = %q", cmd)
	}
	if filepath.Base(filepath.Dir(filepath.Dir(cmd[1]))) != "server-everything" {
		t.Errorf("entry point %s is not server-everything's", cmd[1])
	}
	if _, err := os.Stat(cmd[1]); err != nil {
		t.Errorf("entry point: %v", err)
	}
}
