package driver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/runtime/event"
)

// fixtureServer is the inline config of the fixture MCP server
// (fixtures/mcp-fixture) for the examples. Outside a test it would be
// {"command": "mcp-fixture"}; here this test binary plays the fixture
// (TestMain serves it when DRIVER_TEST_FIXTURE=1).
func fixtureServer() json.RawMessage {
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"command": exe, "env": map[string]string{"DRIVER_TEST_FIXTURE": "1"}})
	if err != nil {
		log.Fatal(err)
	}
	return b
}

// A harness drives an implementation through the protocol: here the
// reference driver, run in this process with StartInProcess (StartCommand
// runs any other driver as a process). It says hello, starts a runtime with
// one MCP server, opens a session, lists its tools, calls one, reads the
// call's outcome and its events, and shuts everything down without leaving
// a process behind.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "driver-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	c, err := driver.StartInProcess(ctx, driver.ServeOptions{})
	if err != nil {
		log.Fatal(err)
	}

	hello, err := c.Hello(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("protocol:", hello.Protocol, "profile core:", hello.Claims(driver.ProfileCore), "eras:", hello.SpokenEras())

	// A virtual clock: every timer of the runtime waits for clock.advance,
	// so nothing depends on how fast this machine is.
	err = c.Start(ctx, driver.StartParams{
		Clock:     driver.ClockVirtual,
		Workspace: dir, // no project config there
		Home:      dir, // nor user config
		Inline:    map[string]json.RawMessage{"fixture": fixtureServer()},
		Env:       map[string]string{},
	})
	if err != nil {
		log.Fatal(err)
	}
	report, err := c.OpenSession(ctx, "s1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("ready:", report.Ready)

	tools, err := c.Tools(ctx, "s1")
	if err != nil {
		log.Fatal(err)
	}
	var echo string
	for _, t := range tools {
		if t.Tool == "echo" {
			echo = t.Name
		}
	}
	fmt.Println("echo is exposed as", echo)

	// tool.call answers at once; the outcome arrives as a call_result line.
	err = c.CallTool(ctx, driver.ToolCallParams{Session: "s1", CallID: "c1", Tool: echo, Arguments: json.RawMessage(`{"text":"hello"}`)})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.AwaitCall(ctx, "c1")
	if err != nil {
		log.Fatal(err)
	}
	// The text is what the agent sees: the tool's output inside the
	// untrusted-content boundary of the tool bridge.
	fmt.Println("isError:", res.Result.IsError)
	fmt.Println(res.Result.Text)

	// Every event of the call came before its call_result.
	finished := c.Count(event.Matcher{Kind: event.ToolCallFinished, Session: "s1", Attrs: map[string]string{"outcome": "ok"}})
	fmt.Println("tool.call_finished ok:", finished)

	status, err := c.Status(ctx)
	if err != nil {
		log.Fatal(err)
	}
	pid := status[0].PID // the server's process, as journal-pid promises
	fmt.Println("status:", status[0].Name, status[0].State)

	if err := c.CloseSession(ctx, "s1"); err != nil {
		log.Fatal(err)
	}
	_, err = c.Tools(ctx, "s1")
	fmt.Println("after session.close:", err)

	// Close sends shutdown and waits until the driver has ended; the driver
	// stops every server process before it answers.
	if err := c.Close(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("server process left:", syscall.Kill(pid, 0) == nil)
	// Output:
	// protocol: mcplife-driver/2 profile core: true eras: [legacy modern]
	// ready: [fixture]
	// echo is exposed as mcp_fixture_echo
	// isError: false
	// <mcp_tool_output server="fixture" tool="echo" trust="untrusted">
	// hello
	// </mcp_tool_output>
	// tool.call_finished ok: 1
	// status: fixture connected
	// after session.close: driver: tools.list: unknown_session: no open session "s1"
	// server process left: false
}

// A driver in any language reads request lines on stdin and writes response,
// event, call_result and acquire_result lines on stdout. Serve is the
// reference driver; fed raw lines, it shows what a driver answers: hello with
// its implementation, capabilities and profiles; a method that needs a
// runtime before start with the error code not_started; shutdown with {}.
func ExampleServe() {
	requests := []string{
		`{"id":1,"method":"hello","params":{"protocol":"mcplife-driver/2"}}`,
		`{"id":2,"method":"status"}`,
		`{"id":3,"method":"shutdown"}`,
	}
	in := strings.NewReader(strings.Join(requests, "\n") + "\n")
	var out strings.Builder
	err := driver.Serve(context.Background(), in, &out, driver.ServeOptions{
		Implementation: driver.Implementation{Name: "example", Version: "1.0.0"},
		Capabilities:   []driver.Capability{driver.CapStatus, driver.CapJournalPID},
		Profiles:       []driver.Profile{driver.ProfileCore},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(out.String())

	// Every line, each way, validates against the protocol's JSON Schemas.
	v, err := driver.NewValidator()
	if err != nil {
		log.Fatal(err)
	}
	var lines []driver.TranscriptLine
	for _, l := range requests {
		lines = append(lines, driver.TranscriptLine{Dir: driver.Sent, Line: []byte(l)})
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		lines = append(lines, driver.TranscriptLine{Dir: driver.Received, Line: []byte(l)})
	}
	fmt.Println("schema errors:", len(v.ValidateTranscript(lines)))
	// Output:
	// {"type":"response","id":1,"result":{"protocol":"mcplife-driver/2","implementation":{"name":"example","version":"1.0.0"},"capabilities":["status","journal-pid"],"profiles":["core"],"eras":["legacy","modern"]}}
	// {"type":"response","id":2,"error":{"code":"not_started","message":"start has not succeeded"}}
	// {"type":"response","id":3,"result":{}}
	// schema errors: 0
}

// A driver author checks the lines a driver writes against the schemas: here
// a response whose error code is outside the protocol's vocabulary, which
// ErrorCodes lists with each code's meaning.
func ExampleValidator_Validate() {
	v, err := driver.NewValidator()
	if err != nil {
		log.Fatal(err)
	}
	good := `{"type":"response","id":7,"error":{"code":"unknown_session","message":"no open session \"s9\""}}`
	bad := `{"type":"response","id":7,"error":{"code":"no_such_session","message":"no open session \"s9\""}}`
	fmt.Println("good:", v.Validate(driver.SchemaResponse, []byte(good)) == nil)
	fmt.Println("bad:", v.Validate(driver.SchemaResponse, []byte(bad)) == nil)
	for _, c := range driver.ErrorCodes() {
		if c.Code == driver.CodeUnknownSession {
			fmt.Printf("%s: %s\n", c.Code, c.Meaning)
		}
	}
	// Output:
	// good: true
	// bad: false
	// unknown_session: no open session of that name
}
