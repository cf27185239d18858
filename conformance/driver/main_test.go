package driver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment variables that make the test binary play another role.
const (
	// envServer=1: serve the test MCP server on stdio.
	envServer = "DRIVER_TEST_SERVER"
	// envServerHang=1 (with envServer): never answer; exit on stdin EOF.
	envServerHang = "DRIVER_TEST_SERVER_HANG"
	// envDriver=1: serve the reference driver on stdio.
	envDriver = "DRIVER_TEST_DRIVER"
	// envFake=<mode>: serve a fake driver whose hello is broken (see
	// fakeHellos).
	envFake = "DRIVER_TEST_FAKE"
	// envFixture=1: serve the fixture MCP server (fixtures/mcp-fixture) on
	// stdio, steered by its MCP_FIXTURE_* knobs (example_test.go).
	envFixture = "DRIVER_TEST_FIXTURE"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envServer) == "1":
		os.Exit(serveTestServer())
	case os.Getenv(envDriver) == "1":
		if err := Serve(context.Background(), os.Stdin, os.Stdout, ServeOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, "driver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case os.Getenv(envFake) != "":
		os.Exit(serveFakeDriver(os.Getenv(envFake)))
	case os.Getenv(envFixture) == "1":
		os.Exit(fixture.Main())
	}
	// goleak (goroutines, such as those of Conn and Serve) plus a check
	// that no process outlives the tests.
	proctest.Main(m)
}

type echoArgs struct {
	Text string `json:"text"`
}

// serveTestServer is a small MCP server: echo answers at once, slow blocks
// until the call is cancelled.
func serveTestServer() int {
	if os.Getenv(envServerHang) == "1" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "driver-test", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "blocks until cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "test server:", err)
	}
	return 0
}

// fakeHellos are the hello results of the fake drivers, by mode.
var fakeHellos = map[string]HelloResult{
	"wrong-version": {Protocol: "mcplife-driver/0", Implementation: Implementation{Name: "fake", Version: "0"},
		Capabilities: []Capability{}, Profiles: []Profile{}},
	"unknown-capability": {Protocol: ProtocolVersion, Implementation: Implementation{Name: "fake", Version: "0"},
		Capabilities: []Capability{"time-travel"}, Profiles: []Profile{}, Eras: []Era{EraLegacy}},
	"profile-without-capability": {Protocol: ProtocolVersion, Implementation: Implementation{Name: "fake", Version: "0"},
		Capabilities: []Capability{CapStatus}, Profiles: []Profile{ProfileStartupGate}, Eras: []Era{EraLegacy}},
	"no-eras": {Protocol: ProtocolVersion, Implementation: Implementation{Name: "fake", Version: "0"},
		Capabilities: []Capability{}, Profiles: []Profile{}},
	"unknown-era": {Protocol: ProtocolVersion, Implementation: Implementation{Name: "fake", Version: "0"},
		Capabilities: []Capability{}, Profiles: []Profile{}, Eras: []Era{"stateless"}},
	"v1-with-eras": {Protocol: ProtocolVersion1, Implementation: Implementation{Name: "fake", Version: "0"},
		Capabilities: []Capability{}, Profiles: []Profile{}, Eras: []Era{EraLegacy}},
	"v2-with-pending-timers": {Protocol: ProtocolVersion2, Implementation: Implementation{Name: "fake", Version: "0"},
		Capabilities: []Capability{CapPendingTimers}, Profiles: []Profile{}, Eras: []Era{EraLegacy}},
	"v3-with-conventions": {Protocol: ProtocolVersion3, Implementation: Implementation{Name: "fake", Version: "0"},
		Capabilities: []Capability{}, Profiles: []Profile{ProfileConventions}, Eras: []Era{EraLegacy}},
	"v2": {Protocol: ProtocolVersion2, Implementation: Implementation{Name: "fake", Version: "0"},
		Capabilities: []Capability{CapStatus, CapJournalPID}, Profiles: []Profile{ProfileCore}, Eras: []Era{EraLegacy}},
	"v1": {Protocol: ProtocolVersion1, Implementation: Implementation{Name: "fake", Version: "0"},
		Capabilities: []Capability{CapStatus, CapJournalPID}, Profiles: []Profile{ProfileCore}},
}

// serveFakeDriver, in mode "hang", never answers; otherwise it answers hello with fakeHellos[mode] and everything else
// with {} until shutdown or EOF.
func serveFakeDriver(mode string) int {
	if mode == "hang" {
		// Never answer, ignore stdin EOF: only a kill ends it.
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGUSR1)
		<-ch
		return 0
	}
	hello, ok := fakeHellos[mode]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown fake mode", mode)
		return 2
	}
	in := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req Request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			continue
		}
		var result any = Empty{}
		if req.Method == MethodHello {
			result = hello
		}
		b, _ := json.Marshal(result)
		_ = enc.Encode(Response{Type: TypeResponse, ID: &req.ID, Result: b})
		if req.Method == MethodShutdown {
			return 0
		}
	}
	return 0
}
