package doctor_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/internal/proctest"
)

func TestMain(m *testing.M) {
	// Run as mcp-fixture (the link fixtureCommand makes), the test binary
	// is the fixture MCP server.
	if filepath.Base(os.Args[0]) == "mcp-fixture" {
		os.Exit(fixture.Main())
	}
	// goleak plus a check that no server process outlives the tests.
	proctest.Main(m)
}
