package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// This example embeds the runtime in an agent host: it discovers the
// user's config, opens a session for an agent, lists and calls a tool of an
// MCP server, watches the lifecycle events, and closes everything, so that
// no server process is left running.
func Example() {
	ctx := context.Background()

	// The user's config, where discovery looks for it:
	// $HOME/.mcplife/mcp.json, with one stdio server named "notes".
	home, err := os.MkdirTemp("", "home")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(home)
	if err := writeConfig(filepath.Join(home, ".mcplife", "mcp.json"), "notes"); err != nil {
		fmt.Println(err)
		return
	}

	// The host's own event recorder, subscribed to before anything runs,
	// so no event is missed. Here a goroutine keeps a few kinds of event to
	// print at the end; a host would log them or drive a status view.
	events := event.NewRecorder(event.RecorderOptions{})
	stream, stopWatching := events.Subscribe(0)
	watched := make(chan []string)
	go func() {
		var seen []string
		for e := range stream {
			switch e.Kind {
			case event.ServerConnecting, event.ServerConnected, event.ToolCallStarted,
				event.ToolCallFinished, event.ProcessExited, event.RuntimeClosed:
				line := string(e.Kind)
				if e.Server != "" {
					line += " " + e.Server
				}
				seen = append(seen, line)
			}
		}
		watched <- seen
	}()

	rt, err := host.New(host.Options{
		Discovery: config.Options{HomeDir: home},
		Events:    events,
		// Session start waits up to this long for the servers to connect
		// (default 250 ms; a server still connecting then is deferred).
		StartupGate: 30 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	sess, err := rt.OpenSession(ctx, host.SessionOptions{Name: "agent-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ready:", sess.StartReport().Ready)

	// The agent sees every tool of every server under an exposed name,
	// mcp_<server>_<tool>.
	for _, tool := range sess.Tools() {
		if tool.MCPName == "echo" {
			fmt.Printf("tool %s: %s\n", tool.Name, tool.Description)
		}
	}
	res, err := sess.CallTool(ctx, "mcp_notes_echo", map[string]any{"text": "hello"})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The result text is marked as untrusted output of that server.
	fmt.Println(res.Text)

	sess.Close(ctx)
	if err := rt.Close(ctx); err != nil {
		fmt.Println(err)
	}
	stopWatching()
	for _, e := range <-watched {
		fmt.Println(e)
	}
	// Output:
	// ready: [notes]
	// tool mcp_notes_echo: Returns text.
	// <mcp_tool_output server="notes" tool="echo" trust="untrusted">
	// hello
	// </mcp_tool_output>
	// server.connecting notes
	// server.connected notes
	// tool.call_started notes
	// tool.call_finished notes
	// process.exited notes
	// runtime.closed
}

// This example shows the three ways a tool call can end badly: the server's
// tool reports an error (a result with IsError), the call names no tool, or
// the server dies during the call. The second and third return an error
// that wraps one of the package's sentinels and, for a server, carries a
// stable code.
func ExampleSession_CallTool() {
	ctx := context.Background()

	// A config file the host names itself, instead of discovery.
	dir, err := os.MkdirTemp("", "config")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "mcp.json")
	if err := writeConfig(file, "notes"); err != nil {
		fmt.Println(err)
		return
	}
	rt, err := host.New(host.Options{
		Discovery: config.Options{
			Files:     []config.File{{Path: file, Level: config.LevelUser}},
			OnlyFiles: true,
		},
		StartupGate: 30 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close(ctx)
	sess, err := rt.OpenSession(ctx, host.SessionOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close(ctx)

	// The tool answered with isError: the agent gets the text.
	res, err := sess.CallTool(ctx, "mcp_notes_fail", map[string]any{"message": "disk full"})
	fmt.Println(res.IsError, err)
	fmt.Println(res.Text)

	// No such tool in this session.
	_, err = sess.CallTool(ctx, "mcp_notes_nope", nil)
	fmt.Println(errors.Is(err, host.ErrUnknownTool), err)

	// The server exits mid-call; the runtime restarts it in the background.
	res, err = sess.CallTool(ctx, "mcp_notes_crash", nil)
	var se *host.ServerError
	if errors.As(err, &se) {
		fmt.Println(errors.Is(err, host.ErrConnectionLost), se.Code, se.Server, res.Code)
	}
	// Output:
	// true <nil>
	// <mcp_tool_output server="notes" tool="fail" trust="untrusted">
	// Error: disk full
	// </mcp_tool_output>
	// true unknown tool: "mcp_notes_nope"
	// true mcp_connection_lost notes mcp_connection_lost
}

// writeConfig writes a config file at path with one stdio server, name.
// In a real host the file is the user's and the server any MCP server
// ({"command": "npx", "args": ["-y", "some-mcp-server"]}); here the server
// is this test binary, which the package's TestMain turns into the fixture
// MCP server of fixtures/mcp-fixture when HOST_TEST_AS_FIXTURE is set.
func writeConfig(path, name string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	server := map[string]any{
		"command": exe,
		"env":     map[string]string{"HOST_TEST_AS_FIXTURE": "1", "GORACE": "atexit_sleep_ms=0"},
	}
	b, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{name: server}}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
