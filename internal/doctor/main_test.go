package doctor_test

import (
	"os"
	"testing"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/internal/fixturelink"
	"github.com/mcplife/mcplife/internal/proctest"
)

func TestMain(m *testing.M) {
	// Run as mcp-fixture (the link fixturelink.ForTest makes), the test
	// binary is the fixture MCP server.
	if fixturelink.Invoked(os.Args[0]) {
		os.Exit(fixture.Main())
	}
	// goleak plus a check that no server process outlives the tests.
	proctest.Main(m)
}
