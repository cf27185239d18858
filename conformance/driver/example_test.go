package driver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
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
	// protocol: mcplife-driver/4 profile core: true eras: [legacy modern]
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
		`{"id":1,"method":"hello","params":{"protocol":"mcplife-driver/4"}}`,
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
	// {"type":"response","id":1,"result":{"protocol":"mcplife-driver/4","implementation":{"name":"example","version":"1.0.0"},"capabilities":["status","journal-pid"],"profiles":["core"],"eras":["legacy","modern"]}}
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

// echoDriver is a whole Go driver, for a toy implementation: one server,
// "demo", whose tool "echo" answers with its text. A real driver calls its
// MCP client where this one answers by itself, and emits the events of
// what the client did. Everything else — reading and parsing requests,
// refusing bad params, error precedence, unsupported capabilities, the
// bookkeeping of calls, tool.cancel, the order of lines, shutdown — is
// driver.Conn's.
type echoDriver struct {
	conn     *driver.Conn
	mu       sync.Mutex
	sessions map[string]bool
}

func (d *echoDriver) handlers() driver.Handlers {
	return driver.Handlers{
		Implementation: driver.Implementation{Name: "echo-client", Version: "0.1.0"},
		Eras:           []driver.Era{driver.EraLegacy},
		Start:          func(context.Context, *driver.StartParams) error { return nil },
		SessionOpen:    d.open,
		SessionClose:   d.close,
		ToolsList:      d.tools,
		ToolCall:       d.call,
	}
}

func (d *echoDriver) open(_ context.Context, p *driver.SessionParams) (driver.StartReport, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sessions[p.Session] {
		return driver.StartReport{}, driver.Errorf(driver.CodeSessionExists, "session %q is open", p.Session)
	}
	d.sessions[p.Session] = true
	d.conn.Emit(event.SessionOpened, "", p.Session, nil)
	return driver.StartReport{Ready: []string{"demo"}}, nil
}

func (d *echoDriver) session(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.sessions[name] {
		return driver.Errorf(driver.CodeUnknownSession, "no open session %q", name)
	}
	return nil
}

func (d *echoDriver) close(_ context.Context, p *driver.SessionParams) error {
	if err := d.session(p.Session); err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.sessions, p.Session)
	d.mu.Unlock()
	d.conn.Emit(event.SessionClosed, "", p.Session, nil)
	return nil
}

func (d *echoDriver) tools(_ context.Context, p *driver.SessionParams) ([]driver.Tool, error) {
	if err := d.session(p.Session); err != nil {
		return nil, err
	}
	return []driver.Tool{{Name: "mcp_demo_echo", Server: "demo", Tool: "echo", RequiresApproval: true}}, nil
}

// call accepts a call; Conn answers {"accepted": true}, then runs the
// returned function and writes its call_result after its events.
func (d *echoDriver) call(_ context.Context, p *driver.ToolCallParams) (driver.CallFunc, error) {
	if err := d.session(p.Session); err != nil {
		return nil, err
	}
	return func(ctx context.Context) (driver.CallOutcome, error) {
		if p.Tool != "mcp_demo_echo" {
			return driver.CallOutcome{}, driver.Errorf(driver.OutcomeUnknownTool, "no tool %q", p.Tool)
		}
		d.conn.Emit(event.ToolCallStarted, "demo", p.Session, map[string]any{"call": p.CallID, "tool": p.Tool})
		var args struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(p.Arguments, &args)
		text := "echo: " + args.Text
		d.conn.Emit(event.ToolCallFinished, "demo", p.Session, map[string]any{"call": p.CallID, "tool": p.Tool, "outcome": "ok", "code": ""})
		return driver.CallOutcome{Text: text, OriginalChars: len(text), Server: "demo"}, nil
	}, nil
}

// A driver written in Go is its Handlers served by a Conn; its main is
//
//	conn := driver.NewConn(os.Stdout, nil)
//	err := conn.Serve(ctx, os.Stdin, (&echoDriver{conn: conn, sessions: map[string]bool{}}).handlers())
//
// Here a harness talks to it over pipes, one request at a time, and prints
// what the driver writes (events as their seq and kind: at_ms is real time).
func ExampleConn() {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := driver.NewConn(outW, nil)
	d := &echoDriver{conn: conn, sessions: map[string]bool{}}
	served := make(chan error, 1)
	go func() {
		served <- conn.Serve(context.Background(), inR, d.handlers())
		outW.Close()
	}()

	lines := bufio.NewScanner(outR)
	// ask writes a request and prints the driver's lines up to the one of
	// type last (the response, or the call_result of a call).
	ask := func(request, last string) {
		fmt.Fprintln(inW, request)
		for lines.Scan() {
			var l struct {
				Type  string       `json:"type"`
				Event *event.Event `json:"event"`
			}
			if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
				log.Fatal(err)
			}
			if l.Event != nil {
				fmt.Println("event", l.Event.Seq, l.Event.Kind)
			} else {
				fmt.Println(lines.Text())
			}
			if l.Type == last {
				return
			}
		}
	}
	ask(`{"id":1,"method":"hello","params":{"protocol":"mcplife-driver/4"}}`, "response")
	ask(`{"id":2,"method":"tools.list","params":{"session":"s1"}}`, "response")
	ask(`{"id":3,"method":"start","params":{"clock":"real"}}`, "response")
	ask(`{"id":4,"method":"session.open","params":{"session":"s1"}}`, "response")
	ask(`{"id":5,"method":"tool.call","params":{"session":"s1","callId":"c1","tool":"mcp_demo_echo","arguments":{"text":"hi"}}}`, "call_result")
	ask(`{"id":6,"method":"tool.call","params":{"session":"s1","callId":"c1","tool":"mcp_demo_echo"}}`, "response")
	ask(`{"id":7,"method":"tool.cancel","params":{"callId":"c1","force":true}}`, "response")
	ask(`{"id":8,"method":"status"}`, "response")
	ask(`{"id":9,"method":"shutdown"}`, "response")
	inW.Close()
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"type":"response","id":1,"result":{"protocol":"mcplife-driver/4","implementation":{"name":"echo-client","version":"0.1.0"},"capabilities":[],"profiles":[],"eras":["legacy"]}}
	// {"type":"response","id":2,"error":{"code":"not_started","message":"start has not succeeded"}}
	// {"type":"response","id":3,"result":{}}
	// event 1 session.opened
	// {"type":"response","id":4,"result":{"report":{"ready":["demo"],"failed":[],"deferred":[],"late":[],"errors":{},"elapsedMs":0}}}
	// {"type":"response","id":5,"result":{"accepted":true}}
	// event 2 tool.call_started
	// event 3 tool.call_finished
	// {"type":"call_result","callId":"c1","result":{"text":"echo: hi","isError":false,"aborted":false,"code":"","truncated":false,"originalChars":8,"signals":[],"server":"demo","tool":"mcp_demo_echo"}}
	// {"type":"response","id":6,"error":{"code":"duplicate_id","message":"callId \"c1\" was used before"}}
	// {"type":"response","id":7,"error":{"code":"bad_request","message":"params: unexpected additional properties [\"force\"]"}}
	// {"type":"response","id":8,"error":{"code":"unsupported","message":"status needs capability \"status\", which this driver does not announce"}}
	// {"type":"response","id":9,"result":{}}
}
