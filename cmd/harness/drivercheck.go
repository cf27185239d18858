package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/conformance"
	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/fixturelink"
	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/runtime/event"
)

// DefaultCheckTimeout bounds, in real time, each step of driver-check after
// hello; DefaultHelloTimeout bounds the driver's start-up and hello (a
// Node or Python driver may take seconds to load its modules).
const (
	DefaultCheckTimeout = 10 * time.Second
	DefaultHelloTimeout = 30 * time.Second
)

// checkStep is the outcome of one step of driver-check.
type checkStep struct {
	Name string `json:"name"`
	// Status is "ok", "fail" or "skip".
	Status    string `json:"status"`
	Detail    string `json:"detail,omitempty"`
	ElapsedMs int64  `json:"elapsedMs"`
}

// checkReport is what driver-check prints (as JSON with -json).
type checkReport struct {
	Impl           string                 `json:"impl"`
	Protocol       string                 `json:"protocol"`
	Implementation *driver.Implementation `json:"implementation,omitempty"`
	OK             bool                   `json:"ok"`
	Steps          []checkStep            `json:"steps"`
	Problems       []checkProblem         `json:"problems"`
	// Stderr is the tail of the driver's stderr.
	Stderr string `json:"stderr,omitempty"`
}

const driverCheckUsage = `usage: harness driver-check -impl 'CMD' [-json] [-timeout D] [-hello-timeout D]

Runs the handshake and a few basic requests (hello, an unknown method,
start with an inline fixture server, session.open, tools.list, a tool
call, status, shutdown) against a driver (protocol ` + driver.ProtocolVersion + `) and prints
every problem found in its output: lines that are not JSON, missing
fields and schema violations (with JSON pointers), unknown capability
or profile names, a wrong protocol version, undocumented event
attributes, requests left unanswered, processes left running.
Exit status: 0 no problems, 1 problems, 2 bad usage.

`

// runDriverCheck implements `harness driver-check`: a quick protocol check
// of a driver before the full conformance suite. Exit status: 0 no
// problems, 1 problems found, 2 bad usage.
func runDriverCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("driver-check", driverCheckUsage, stdout, stderr)
	impl := fs.String("impl", "", "command line of the driver to check, e.g. 'node my-driver.js' (required)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", DefaultCheckTimeout, "real-time bound of each step after hello (a response, a call result, the exit after shutdown)")
	helloTimeout := fs.Duration("hello-timeout", DefaultHelloTimeout, "real-time bound of the driver's start-up and its answer to hello")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 || *impl == "" || *timeout <= 0 || *helloTimeout <= 0 {
		return fs.badUsage()
	}
	argv, err := conformance.SplitCommand(*impl)
	if err != nil {
		fmt.Fprintf(stderr, "harness driver-check: -impl: %v\n", err)
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "harness driver-check: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "driver-check-")
	if err != nil {
		fmt.Fprintf(stderr, "harness driver-check: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The fixture is this binary under the name mcp-fixture.
	fixture, err := fixturelink.Make(dir, exe)
	if err != nil {
		fmt.Fprintf(stderr, "harness driver-check: %v\n", err)
		return 1
	}
	var progress io.Writer
	if !*asJSON {
		progress = stdout
		printCheckHeader(stdout, *impl)
	}
	rep := checkDriver(context.Background(), argv, *impl, fixture, dir, *helloTimeout, *timeout, progress)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "harness driver-check: %v\n", err)
			return 1
		}
	} else {
		printCheckReport(stdout, rep)
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = w.buf[len(w.buf)-w.max:]
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(string(w.buf))
}

// checker runs the steps of one driver-check.
type checker struct {
	c       *driver.Client
	root    context.Context
	timeout time.Duration // bound of the current step
	// stepTimeout bounds each step after hello.
	stepTimeout time.Duration
	lc          *lineChecker
	seen        int // transcript lines already checked
	rep         *checkReport
	caps        map[driver.Capability]bool
	stopped     string // why the remaining steps cannot run, or ""
	exited      bool   // the driver's output ended
	// progress, when not nil, is shown each step as it ends.
	progress io.Writer
}

// checkDriver starts the driver argv and runs every step.
func checkDriver(ctx context.Context, argv []string, impl, fixture, dir string, helloTimeout, timeout time.Duration, progress io.Writer) *checkReport {
	rep := &checkReport{Impl: impl, Protocol: driver.ProtocolVersion, Steps: []checkStep{}, Problems: []checkProblem{}}
	v, err := driver.NewValidator()
	if err != nil {
		rep.Problems = append(rep.Problems, checkProblem{Step: "setup", Message: err.Error()})
		return rep
	}
	errTail := &tailWriter{max: 4 << 10}
	c, err := driver.StartCommand(ctx, argv, nil, errTail)
	if err != nil {
		rep.Problems = append(rep.Problems, checkProblem{Step: "setup", Message: fmt.Sprintf("cannot start the driver: %v", err)})
		return rep
	}
	k := &checker{c: c, root: ctx, timeout: helloTimeout, stepTimeout: timeout, rep: rep, progress: progress, caps: map[driver.Capability]bool{},
		lc: &lineChecker{v: v, methods: map[int64]string{}}}
	k.run(fixture, dir)
	rep.Stderr = errTail.String()
	rep.OK = len(rep.Problems) == 0
	return rep
}

// record adds a step's outcome to the report and shows it on the progress
// writer, if any.
func (k *checker) record(st checkStep) {
	k.rep.Steps = append(k.rep.Steps, st)
	if k.progress != nil {
		printStep(k.progress, st)
	}
}

func (k *checker) problem(step, format string, args ...any) {
	k.rep.Problems = append(k.rep.Problems, checkProblem{Step: step, Message: fmt.Sprintf(format, args...)})
}

// collect checks the transcript lines that arrived since the last call and
// reports whether they were all fine.
func (k *checker) collect(step string) bool {
	t := k.c.Transcript()
	ps := k.lc.check(step, t[k.seen:])
	k.seen = len(t)
	k.rep.Problems = append(k.rep.Problems, ps...)
	return len(ps) == 0
}

// explain turns a failed request into an actionable message.
func (k *checker) explain(what string, err error) string {
	var re *driver.RemoteError
	var ec *errCheck
	switch {
	case errors.As(err, &ec):
		return ec.msg
	case errors.As(err, &re):
		return fmt.Sprintf("%s answered error %q: %s", what, re.Code, re.Message)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer to %s within %v: does the driver read stdin line by line, answer every request with a response line carrying its id, and flush stdout after each line?", what, k.timeout)
	case errors.Is(err, driver.ErrDriverExited):
		k.exited = true
		k.stopped = "the driver exited"
		return fmt.Sprintf("the driver's stdout ended before it answered %s: it exited or closed stdout (see its stderr)", what)
	}
	return fmt.Sprintf("%s: %v", what, err)
}

// step runs f bounded by the step timeout and records its outcome. A step
// with fatal set stops the remaining steps when it fails.
func (k *checker) step(name string, fatal bool, f func(ctx context.Context) (string, error)) bool {
	if k.stopped != "" {
		k.record(checkStep{Name: name, Status: "skip", Detail: "not run: " + k.stopped})
		return false
	}
	ctx, cancel := context.WithTimeout(k.root, k.timeout)
	start := time.Now()
	detail, err := f(ctx)
	cancel()
	st := checkStep{Name: name, Status: "ok", Detail: detail, ElapsedMs: time.Since(start).Milliseconds()}
	if err != nil {
		st.Status = "fail"
		msg := k.explain(name, err)
		st.Detail = msg
		k.problem(name, "%s", msg)
		if fatal && k.stopped == "" {
			k.stopped = name + " failed"
		}
	}
	if !k.collect(name) {
		st.Status = "fail"
	}
	k.record(st)
	return err == nil
}

func (k *checker) skip(name, why string) {
	k.record(checkStep{Name: name, Status: "skip", Detail: why})
}

// errCheck is a step failure that is a finding, not a transport error.
type errCheck struct{ msg string }

func (e *errCheck) Error() string { return e.msg }

func (k *checker) run(fixture, dir string) {
	k.step(driver.MethodHello, true, func(ctx context.Context) (string, error) {
		var raw json.RawMessage
		if err := k.c.Request(ctx, driver.MethodHello, driver.HelloParams{Protocol: driver.ProtocolVersion}, &raw); err != nil {
			return "", err
		}
		var h driver.HelloResult
		if err := json.Unmarshal(raw, &h); err != nil {
			k.stopped = "hello's result is unusable"
			return "", nil // the line check reports why
		}
		k.rep.Implementation = &h.Implementation
		for _, c := range h.Capabilities {
			k.caps[c] = true
		}
		if !slices.Contains(driver.AcceptedProtocolVersions(), h.Protocol) {
			k.stopped = fmt.Sprintf("the driver speaks %q", h.Protocol)
		}
		profiles := make([]string, len(h.Profiles))
		for i, p := range h.Profiles {
			profiles[i] = string(p)
		}
		return fmt.Sprintf("%s %s, %d capabilities, profiles: %s", h.Implementation.Name, h.Implementation.Version, len(h.Capabilities), strings.Join(profiles, ", ")), nil
	})
	k.timeout = k.stepTimeout
	k.step("unknown method", false, func(ctx context.Context) (string, error) {
		err := k.c.Request(ctx, "driver-check.no-such-method", nil, nil)
		var re *driver.RemoteError
		switch {
		case errors.As(err, &re) && re.Code == string(driver.CodeUnknownMethod):
			return "answered unknown_method", nil
		case errors.As(err, &re):
			k.problem("unknown method", "an unknown method answered %q, want %q (before start and whatever the params; see \"Which error wins\" in docs/DRIVER.md)", re.Code, driver.CodeUnknownMethod)
			return "answered " + re.Code, nil
		case err == nil:
			k.problem("unknown method", "an unknown method got a result, want error %q", driver.CodeUnknownMethod)
			return "answered a result", nil
		}
		return "", err
	})
	inline, _ := json.Marshal(map[string]any{"command": fixture})
	k.step(driver.MethodStart, true, func(ctx context.Context) (string, error) {
		ws, home := filepath.Join(dir, "workspace"), filepath.Join(dir, "home")
		for _, d := range []string{ws, home} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return "", err
			}
		}
		err := k.c.Start(ctx, driver.StartParams{
			Clock:     driver.ClockReal,
			Workspace: ws,
			Home:      home,
			Inline:    map[string]json.RawMessage{"fixture": inline},
			Env:       map[string]string{"PATH": os.Getenv("PATH")},
			Options:   &driver.StartOptions{StartupGateMs: ptrTo(k.timeout.Milliseconds() / 2)},
		})
		return `clock "real", one inline server "fixture" (` + fixture + `)`, err
	})
	pending := !k.caps[driver.CapStartupGate] // tools may register after session.open
	k.step(driver.MethodSessionOpen, true, func(ctx context.Context) (string, error) {
		rep, err := k.c.OpenSession(ctx, "check")
		if err != nil {
			return "", err
		}
		if slices.Contains(rep.Late, "fixture") || slices.Contains(rep.Deferred, "fixture") {
			pending = true
		}
		if len(rep.Failed) > 0 {
			k.problem(driver.MethodSessionOpen, "server \"fixture\" failed at session.open: %s", rep.Errors["fixture"])
		}
		return fmt.Sprintf("ready %v, failed %v, deferred %v, late %v", rep.Ready, rep.Failed, rep.Deferred, rep.Late), nil
	})
	var echo string
	k.step(driver.MethodToolsList, true, func(ctx context.Context) (string, error) {
		after := k.c.Last()
		tools, err := k.c.Tools(ctx, "check")
		if err != nil {
			return "", err
		}
		echo = echoTool(tools)
		if echo == "" && pending {
			// The server was still connecting at session.open (or the
			// driver has no startup gate): its tools register later.
			if _, err := k.c.Await(ctx, after, event.Matcher{Kind: event.ToolsRegistered, Server: "fixture"}); err == nil {
				if tools, err = k.c.Tools(ctx, "check"); err != nil {
					return "", err
				}
				echo = echoTool(tools)
			}
		}
		if echo == "" {
			k.stopped = "no tool to call"
			return "", &errCheck{fmt.Sprintf("tools.list of session \"check\" has no tool with server \"fixture\" and tool \"echo\" (%d tools listed; the exposed name should be %q)", len(tools), "mcp_fixture_echo")}
		}
		return fmt.Sprintf("%d tools, echo exposed as %q", len(tools), echo), nil
	})
	k.step(driver.MethodToolCall, false, func(ctx context.Context) (string, error) {
		const id = "driver-check-1"
		if err := k.c.CallTool(ctx, driver.ToolCallParams{Session: "check", CallID: id, Tool: echo, Arguments: json.RawMessage(`{"text":"driver-check"}`)}); err != nil {
			return "", err
		}
		res, err := k.c.AwaitCall(ctx, id)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return "", &errCheck{fmt.Sprintf("tool.call was accepted but no call_result line with callId %q arrived within %v", id, k.timeout)}
			}
			return "", err
		}
		switch {
		case res.Error != nil:
			return "", &errCheck{fmt.Sprintf("the echo call failed with %q: %s", res.Error.Code, res.Error.Message)}
		case res.Result.IsError || !strings.Contains(res.Result.Text, "driver-check"):
			return "", &errCheck{fmt.Sprintf("the echo call should succeed with a text containing \"driver-check\", got isError=%t text %q", res.Result.IsError, shorten([]byte(res.Result.Text)))}
		}
		return fmt.Sprintf("call_result %q", shorten([]byte(res.Result.Text))), nil
	})
	var pids []int
	if !k.caps[driver.CapStatus] {
		k.skip(driver.MethodStatus, "the driver does not announce capability status")
	} else {
		k.step(driver.MethodStatus, false, func(ctx context.Context) (string, error) {
			list, err := k.c.Status(ctx)
			if err != nil {
				return "", err
			}
			for _, s := range list {
				if s.Name == "fixture" {
					if s.PID > 0 {
						pids = append(pids, s.PID)
					}
					if s.State != "connected" {
						return "", &errCheck{fmt.Sprintf("status shows server \"fixture\" in state %q after a successful call, want \"connected\"", s.State)}
					}
					return fmt.Sprintf("%d servers; fixture connected (pid %d)", len(list), s.PID), nil
				}
			}
			return "", &errCheck{"status lists no server named \"fixture\""}
		})
	}
	k.shutdown(pids)
}

// shutdown sends shutdown (if the driver is still usable), waits for the
// exit and checks that no server process is left.
func (k *checker) shutdown(pids []int) {
	for _, e := range k.c.Events() {
		if e.Kind == event.ProcessStarted {
			switch v := e.Attrs["pid"].(type) {
			case int64:
				if v > 0 {
					pids = append(pids, int(v))
				}
			case float64:
				if v > 0 {
					pids = append(pids, int(v))
				}
			}
		}
	}
	name := driver.MethodShutdown
	start := time.Now()
	ctx, cancel := context.WithTimeout(k.root, k.timeout)
	defer cancel()
	st := checkStep{Name: name, Status: "ok", Detail: "answered and exited with status 0"}
	var err error
	if !k.exited {
		err = k.c.Shutdown(ctx)
		if err != nil {
			st.Status = "fail"
			st.Detail = k.explain(name, err)
			k.problem(name, "%s", st.Detail)
		}
	}
	if cerr := k.c.Close(ctx); cerr != nil && err == nil {
		st.Status = "fail"
		st.Detail = fmt.Sprintf("after shutdown: %v (a driver exits with status 0 once it has answered shutdown)", cerr)
		k.problem(name, "%s", st.Detail)
	}
	for _, pid := range pids {
		if !processGoneWithin(ctx, pid) {
			_ = proctest.Kill(pid, syscall.SIGKILL)
			st.Status = "fail"
			k.problem(name, "server process %d was still running after the driver exited (killed it): stop every stdio server, and its process group, at shutdown", pid)
		}
	}
	if !k.collect(name) {
		st.Status = "fail"
	}
	st.ElapsedMs = time.Since(start).Milliseconds()
	k.record(st)
}

// leftoverGrace is how long a server process may take to disappear after
// its driver exited: the driver answers shutdown only once its servers are
// stopped, so this covers only a kill still being delivered.
const leftoverGrace = time.Second

// processGoneWithin reports whether pid is gone (or a zombie), polling
// for at most leftoverGrace and until ctx ends.
func processGoneWithin(ctx context.Context, pid int) bool {
	ctx, cancel := context.WithTimeout(ctx, leftoverGrace)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if processGone(pid) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// processGone reports whether pid no longer runs: it does not exist, or it
// is a zombie waiting to be reaped.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z'
	}
	return false
}

func echoTool(tools []driver.Tool) string {
	for _, t := range tools {
		if t.Server == "fixture" && t.Tool == "echo" {
			return t.Name
		}
	}
	return ""
}

func ptrTo[T any](v T) *T { return &v }

func printCheckHeader(w io.Writer, impl string) {
	fmt.Fprintf(w, "driver-check: %s (protocol %s)\n", textsafe.Line(impl), driver.ProtocolVersion)
}

func printStep(w io.Writer, s checkStep) {
	status := map[string]string{"ok": "ok  ", "fail": "FAIL", "skip": "skip"}[s.Status]
	fmt.Fprintf(w, "  %s  %-15s %s\n", status, s.Name, textsafe.Line(s.Detail))
}

// printCheckReport prints the problems of rep and the verdict for a
// terminal; the header and the steps were shown as the check ran. What the
// driver wrote (messages, lines, stderr) is shown through textsafe.
func printCheckReport(w io.Writer, rep *checkReport) {
	if len(rep.Problems) > 0 {
		fmt.Fprintf(w, "\n%d problem(s):\n", len(rep.Problems))
		for i, p := range rep.Problems {
			where := p.Step
			if p.Pointer != "" {
				where += " " + p.Pointer
			}
			fmt.Fprintf(w, "%3d. [%s] %s\n", i+1, textsafe.Line(where), textsafe.Line(p.Message))
			if p.Line != "" {
				fmt.Fprintf(w, "     line: %s\n", textsafe.Line(p.Line))
			}
		}
		if rep.Stderr != "" {
			lines := strings.Split(rep.Stderr, "\n")
			if len(lines) > 10 {
				lines = lines[len(lines)-10:]
			}
			for i, l := range lines {
				lines[i] = textsafe.Block(l)
			}
			fmt.Fprintf(w, "\ndriver stderr (last %d lines):\n  %s\n", len(lines), strings.Join(lines, "\n  "))
		}
		fmt.Fprintf(w, "\ndriver-check: FAIL, %d problem(s); fix them before running harness conformance -impl '%s'\n", len(rep.Problems), textsafe.Line(rep.Impl))
		return
	}
	fmt.Fprintf(w, "\ndriver-check: OK; next: harness conformance -impl '%s'\n", textsafe.Line(rep.Impl))
}
