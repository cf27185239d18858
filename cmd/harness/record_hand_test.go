package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/conformance/faults"
	"github.com/mcplife/mcplife/internal/fixturelink"
	"github.com/mcplife/mcplife/internal/mcpproxy"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/scenarios/repro"
)

// recording is a `harness record` running in this process whose stderr is
// read line by line as it comes.
type recording struct {
	t     *testing.T
	code  chan int
	out   bytes.Buffer
	mu    sync.Mutex
	lines []string
	seen  chan string // every stderr line, as written
	read  chan struct{}
}

func startRecording(t *testing.T, args ...string) *recording {
	t.Helper()
	r := &recording{t: t, code: make(chan int, 1), seen: make(chan string, 100), read: make(chan struct{})}
	pr, pw := io.Pipe()
	go func() {
		defer close(r.read)
		defer close(r.seen)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
			select {
			case r.seen <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		code := run(append([]string{"record"}, args...), &r.out, pw)
		pw.Close()
		r.code <- code
	}()
	return r
}

func (r *recording) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// control waits for the line announcing server's proxy control endpoint.
func (r *recording) control(server string) mcpproxy.ControlEndpoint {
	r.t.Helper()
	prefix := "harness record: " + server + ": proxy control "
	for line := range r.seen {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			url, tok, _ := strings.Cut(rest, " token ")
			return mcpproxy.ControlEndpoint{URL: url, Token: tok}
		}
	}
	r.t.Fatalf("record never announced %s's control endpoint:\n%s", server, r.stderr())
	return mcpproxy.ControlEndpoint{}
}

// wait returns record's exit code once it has ended.
func (r *recording) wait() int {
	code := <-r.code
	<-r.read
	return code
}

// postRule sets a rule by hand through a proxy's control endpoint, as a
// user with curl would.
func postRule(t *testing.T, ctl mcpproxy.ControlEndpoint, rule string) {
	t.Helper()
	req, err := ctl.NewRequest(t.Context(), http.MethodPost, "/rules", mcpproxy.RulesRequest{Rules: []string{rule}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /rules %s: %s %s", rule, resp.Status, body)
	}
}

// serveHTTPFixture starts the fixture as a streamable HTTP server and
// returns its URL once it listens.
func serveHTTPFixture(t *testing.T, dir string) string {
	t.Helper()
	portFile := filepath.Join(dir, "port")
	cmd := exec.Command(fixturelink.ForTest(t))
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", "MCP_FIXTURE_TRANSPORT=http", "MCP_FIXTURE_PORT_FILE="+portFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		if b, err := os.ReadFile(portFile); err == nil && strings.HasSuffix(string(b), "\n") {
			return "http://" + strings.TrimSpace(string(b)) + "/mcp"
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatal("the http fixture did not listen")
		}
	}
}

// Issue 31, "Done when": a fault injected by hand through the proxy's
// control endpoint, into a stdio server and into an http server, is kept
// in the trace with its time; harness repro turns each trace into a
// scenario that reproduces every failure, passes against the reference
// runtime and fails a runtime that does not notice a server's exit
// (the no-idle-watch defect of conformance/faults). Output directories
// that do not exist are created.
func TestRecordHandFaultRepro(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the harness with the deliberate defects (conformance/faults); skipped with -short")
	}
	dir := t.TempDir()
	fx := fixturelink.ForTest(t)
	web := serveHTTPFixture(t, dir)
	scen := filepath.Join(dir, "new", "repro")

	type tc struct {
		name, server, rule, config string
		extra                      []string
		failed                     int // restart attempts that must fail (http: nothing listening until the proxy is served again)
	}
	for _, c := range []tc{
		{name: "950-hand-exit-stdio", server: "fx", rule: "exit-delay=200,code=9",
			// record runs its proxy as os.Executable(): this test binary,
			// which plays the harness CLI with roleEnv.
			config: fmt.Sprintf(`{"mcpServers": {"fx": {"command": %q, "env": {"GORACE": "atexit_sleep_ms=0", %q: "cli"}}}}`, fx, roleEnv)},
		{name: "951-hand-exit-http", server: "web", rule: "exit-delay=100", extra: []string{"-relaunch", "1500ms"}, failed: 1,
			config: fmt.Sprintf(`{"mcpServers": {"web": {"type": "http", "url": %q}}}`, web)},
	} {
		cfg := filepath.Join(dir, c.name+".json")
		if err := os.WriteFile(cfg, []byte(c.config), 0o644); err != nil {
			t.Fatal(err)
		}
		trace := filepath.Join(dir, "new", "traces", c.name+".trace.json")
		r := startRecording(t, append([]string{"-config", cfg, "-o", trace, "-until", "restart.succeeded server=" + c.server}, c.extra...)...)
		postRule(t, r.control(c.server), c.rule)
		if code := r.wait(); code != 0 {
			t.Fatalf("%s: record exit %d\nstdout:\n%s\nstderr:\n%s", c.name, code, r.out.String(), r.stderr())
		}
		if !strings.Contains(r.out.String(), "0 calls, 1 rule changes; next: harness repro "+trace) {
			t.Errorf("%s: record's summary: %s", c.name, r.out.String())
		}
		tr, err := repro.Read(trace)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Faults) != 1 || tr.Faults[0].Rule != c.rule || tr.Faults[0].Source != "control" || tr.Faults[0].Op != "add" || tr.Faults[0].AtMS <= 0 || tr.Faults[0].Server != c.server {
			t.Errorf("%s: the trace's faults: %+v", c.name, tr.Faults)
		}
		failed := 0
		for _, e := range tr.Events {
			if e.Kind == event.RestartFailed {
				failed++
			}
			// Exit statuses as they were: the proxy exited with code 9.
			if e.Kind == event.ProcessExited && c.server == "fx" && e.Attrs["planned"] == false {
				if st, _ := e.Get("status"); st != "exit status 9" {
					t.Errorf("%s: process.exited status=%q, want the proxy's exit status 9", c.name, st)
				}
			}
		}
		if failed < c.failed {
			t.Errorf("%s: %d failed restart attempts recorded, want at least %d", c.name, failed, c.failed)
		}

		code, out, errs := harness(t, "repro", "-o", filepath.Join(scen, c.name+".txtar"), trace)
		if code != 0 || !strings.Contains(errs, "reproduced by e1: server "+c.server+": restart for transport-exit") ||
			!strings.Contains(errs, "0 calls replayed, 1 of 1 failures reproduced") || strings.Contains(errs, "not reproduced") {
			t.Fatalf("%s: repro exit %d\nstdout:\n%s\nstderr:\n%s", c.name, code, out, errs)
		}
	}
	// The fixture speaks both eras, so the runtime recorded both servers
	// in the stateless one (it asks 2026-07-28 first): the scenarios
	// replay in that era only.
	code, out, errs := harness(t, "run", "-era", "both", "-dir", scen)
	if code != 0 || !strings.Contains(out, "2 passed, 0 failed, 0 skipped, 2 not applicable") {
		b, _ := json.Marshal(out)
		t.Fatalf("run against the reference: exit %d\n%s\n%s", code, b, errs)
	}

	// A runtime that does not notice a server's exit fails both.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "harness-faults")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := faults.Build(ctx, root, bin, "./cmd/harness"); err != nil {
		t.Fatalf("building the harness with the deliberate defects: %v", err)
	}
	cmd := exec.CommandContext(ctx, bin, "run", "-fixture", testFixture(t), "-era", "modern", "-dir", scen)
	cmd.Env = append(os.Environ(), faults.Env+"=no-idle-watch", "GORACE=atexit_sleep_ms=0")
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(b), "0 passed, 2 failed") ||
		!strings.Contains(string(b), "FAIL  modern 950-hand-exit-stdio") || !strings.Contains(string(b), "FAIL  modern 951-hand-exit-http") ||
		strings.Count(string(b), "await: waited for transport.closed") < 2 {
		t.Fatalf("run against a runtime with no-idle-watch: %v\n%s", err, b)
	}
}
