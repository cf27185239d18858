package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/conformance/driver/drivertest"
)

// serveCheckStandIn plays a deliberately broken driver for driver-check:
//
//   - check-canned answers hello properly and every other request with {};
//   - check-bad prints a log line on stdout, announces a misspelt
//     capability and a profile without its capabilities, emits a badly
//     numbered event with undocumented attributes, answers the unknown
//     method with a result and never answers start;
//   - check-crash writes to stderr and exits 3 without answering;
//   - check-leaky starts the inline server (told to survive stdin EOF),
//     reports it in process.started, and exits at shutdown without
//     stopping it.
func serveCheckStandIn(role string) int {
	switch role {
	case "check-canned":
		return exitCode(drivertest.ServeCanned(os.Stdin, os.Stdout, driver.HelloResult{
			Protocol:       driver.ProtocolVersion,
			Implementation: driver.Implementation{Name: "canned", Version: "1"},
			Capabilities:   []driver.Capability{driver.CapStatus, driver.CapJournalPID, driver.CapStartupGate},
			Profiles:       []driver.Profile{driver.ProfileCore},
			Eras:           []driver.Era{driver.EraLegacy},
		}))
	case "check-bad":
		return exitCode(drivertest.ServeFunc(os.Stdin, os.Stdout, func(req driver.Request) []string {
			switch req.Method {
			case driver.MethodHello:
				return []string{
					"starting my driver...",
					`{"type":"event","event":{"seq":2,"at_ms":0,"kind":"process.started","attrs":{"pid":"12","cmd":"x"}}}`,
					drivertest.Response(req.ID, `{"protocol":"mcplife-driver/1","implementation":{"name":"bad","version":"0"},"capabilities":["virtual_clock","status"],"profiles":["core"]}`),
				}
			case driver.MethodShutdown:
				return []string{drivertest.Response(req.ID, `{}`)}
			case driver.MethodStart:
				return nil
			}
			return []string{drivertest.Response(req.ID, `{}`)}
		}))
	case "check-crash":
		fmt.Fprintln(os.Stderr, "Error: Cannot find module '@modelcontextprotocol/sdk'")
		return 3
	case "check-leaky":
		return exitCode(serveLeaky())
	}
	return 2
}

func checkJSON(t *testing.T, out string) checkReport {
	t.Helper()
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-json output is not a report: %v\n%s", err, out)
	}
	return rep
}

func hasProblem(rep checkReport, step, pointer, text string) bool {
	for _, p := range rep.Problems {
		if p.Step == step && p.Pointer == pointer && strings.Contains(p.Message, text) {
			return true
		}
	}
	return false
}

func TestDriverCheckReference(t *testing.T) {
	t.Setenv(roleEnv, "cli")
	// A generous bound: it only matters when something is broken, and a
	// race-enabled reference driver on a loaded machine can be slow.
	code, out, errs := harness(t, "driver-check", "-timeout", "60s", "-impl", exe(t)+" driver")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"ok    hello", "ok    tool.call", "ok    status", "ok    shutdown", "driver-check: OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = harness(t, "driver-check", "-json", "-timeout", "60s", "-impl", exe(t)+" driver")
	rep := checkJSON(t, out)
	if code != 0 || !rep.OK || len(rep.Problems) != 0 || len(rep.Steps) != 8 {
		t.Errorf("exit %d, report %+v", code, rep)
	}
}

func TestDriverCheckCanned(t *testing.T) {
	t.Setenv(roleEnv, "check-canned")
	code, out, errs := harness(t, "driver-check", "-json", "-impl", exe(t))
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rep := checkJSON(t, out)
	for _, want := range []struct{ step, pointer, text string }{
		{"unknown method", "", "got a result, want error \"unknown_method\""},
		{"session.open", "/result/report", `missing field "report"`},
		{"tools.list", "/result/tools", `missing field "tools"`},
		{"tools.list", "", `no tool with server "fixture" and tool "echo"`},
	} {
		if !hasProblem(rep, want.step, want.pointer, want.text) {
			t.Errorf("no problem %+v in %+v", want, rep.Problems)
		}
	}
	if rep.OK || rep.Steps[len(rep.Steps)-1].Name != "shutdown" || rep.Steps[len(rep.Steps)-1].Status != "ok" {
		t.Errorf("steps %+v", rep.Steps)
	}
}

func TestDriverCheckBrokenOutput(t *testing.T) {
	t.Setenv(roleEnv, "check-bad")
	code, out, errs := harness(t, "driver-check", "-json", "-timeout", "300ms", "-impl", exe(t))
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rep := checkJSON(t, out)
	for _, want := range []struct{ step, pointer, text string }{
		{"hello", "", "not a JSON object"},
		{"hello", "/result/capabilities/0", `unknown capability "virtual_clock" (did you mean "virtual-clock"?)`},
		{"hello", "/result/profiles/0", `profile "core" requires capability "journal-pid"`},
		{"hello", "/event/seq", "seq 2, want 1"},
		{"hello", "/event/attrs", "undocumented"},
		{"start", "", "no answer to start within 300ms"},
	} {
		if want.text == "undocumented" {
			want.text = "which the vocabulary does not document"
		}
		if !hasProblem(rep, want.step, want.pointer, want.text) {
			t.Errorf("no problem %+v in\n%+v", want, rep.Problems)
		}
	}
	for _, s := range rep.Steps {
		if (s.Name == "session.open" || s.Name == "tool.call") && s.Status != "skip" {
			t.Errorf("step %+v should be skipped after start failed", s)
		}
	}
	// The human form names the pointer and quotes the line.
	_, text, _ := harness(t, "driver-check", "-timeout", "300ms", "-impl", exe(t))
	for _, want := range []string{"FAIL  hello", "[hello /result/capabilities/0]", "line: starting my driver...", "driver-check: FAIL"} {
		if !strings.Contains(text, want) {
			t.Errorf("stdout lacks %q:\n%s", want, text)
		}
	}
}

func TestDriverCheckWrongVersion(t *testing.T) {
	t.Setenv(roleEnv, "fake-v0")
	code, out, _ := harness(t, "driver-check", "-json", "-impl", exe(t))
	rep := checkJSON(t, out)
	if code != 1 || !hasProblem(rep, "hello", "/result/protocol", `wrong protocol version "mcplife-driver/0"`) {
		t.Fatalf("exit %d, problems %+v", code, rep.Problems)
	}
	for _, s := range rep.Steps {
		if s.Name == "start" && s.Status != "skip" {
			t.Errorf("start should be skipped: %+v", s)
		}
	}
}

func TestDriverCheckCrash(t *testing.T) {
	t.Setenv(roleEnv, "check-crash")
	code, out, _ := harness(t, "driver-check", "-impl", exe(t))
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"stdout ended before it answered hello", "Cannot find module", "exit status 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestDriverCheckUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"-impl", ""}, {"-impl", "x", "extra"}, {"-impl", "'unterminated"}, {"-timeout", "0", "-impl", "x"}, {"-hello-timeout", "-1s", "-impl", "x"}} {
		if code, _, _ := harness(t, append([]string{"driver-check"}, args...)...); code != 2 {
			t.Errorf("driver-check %q: exit %d, want 2", args, code)
		}
	}
}

func TestSchemaPointer(t *testing.T) {
	for _, tc := range []struct{ in, ptr, msg string }{
		{`hello.result: validating https://x/hello.result.json: validating /properties/implementation: required: missing properties: ["version"]`, "/implementation/version", `missing field "version"`},
		{`call_result: validating https://x/call_result.json: validating /properties/result: required: missing properties: ["isError" "aborted"]`, "/result", `missing fields "isError", "aborted"`},
		{`event: validating https://x/event.json: validating /properties/event: validating /properties/event/properties/kind: enum: nope does not equal any of: [a b]`, "/event/kind", "enum: nope does not equal any of: [a b]"},
	} {
		ptr, msg := schemaPointer(tc.in)
		if ptr != tc.ptr || msg != tc.msg {
			t.Errorf("schemaPointer(%q) = %q, %q; want %q, %q", tc.in, ptr, msg, tc.ptr, tc.msg)
		}
	}
}

func serveLeaky() error {
	return drivertest.ServeFunc(os.Stdin, os.Stdout, func(req driver.Request) []string {
		switch req.Method {
		case driver.MethodHello:
			return []string{drivertest.Response(req.ID, `{"protocol":"mcplife-driver/1","implementation":{"name":"leaky","version":"0"},"capabilities":["startup-gate"],"profiles":[]}`)}
		case driver.MethodStart:
			var p driver.StartParams
			var srv struct {
				Command string `json:"command"`
			}
			if json.Unmarshal(req.Params, &p) != nil || json.Unmarshal(p.Inline["fixture"], &srv) != nil {
				return []string{`{"type":"response","id":` + fmt.Sprint(req.ID) + `,"error":{"code":"bad_request","message":"no fixture"}}`}
			}
			cmd := exec.Command(srv.Command)
			cmd.Env = []string{"MCP_FIXTURE_IGNORE_STDIN_EOF=1"}
			if err := cmd.Start(); err != nil {
				return []string{`{"type":"response","id":` + fmt.Sprint(req.ID) + `,"error":{"code":"failed","message":"cannot start"}}`}
			}
			ev := fmt.Sprintf(`{"type":"event","event":{"seq":1,"at_ms":0,"server":"fixture","kind":"process.started","attrs":{"pid":%d,"command":%q}}}`, cmd.Process.Pid, srv.Command)
			return []string{ev, drivertest.Response(req.ID, `{}`)}
		case driver.MethodSessionOpen:
			return []string{drivertest.Response(req.ID, `{"report":{"ready":["fixture"],"failed":[],"deferred":[],"late":[],"errors":{},"elapsedMs":0}}`)}
		case driver.MethodToolsList:
			return []string{drivertest.Response(req.ID, `{"tools":[]}`)}
		case "driver-check.no-such-method":
			return []string{`{"type":"response","id":` + fmt.Sprint(req.ID) + `,"error":{"code":"unknown_method","message":"no"}}`}
		}
		return []string{drivertest.Response(req.ID, `{}`)}
	})
}

func TestDriverCheckLeftoverProcess(t *testing.T) {
	t.Setenv(roleEnv, "check-leaky")
	code, out, errs := harness(t, "driver-check", "-json", "-timeout", "60s", "-impl", exe(t))
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rep := checkJSON(t, out)
	if !hasProblem(rep, "shutdown", "", "was still running after the driver exited (killed it)") {
		t.Errorf("no leftover-process problem in %+v", rep.Problems)
	}
}

// TestDriverCheckProfileSince checks that driver-check names a profile a
// later protocol version added: conventions claimed by a version-3 hello.
func TestDriverCheckProfileSince(t *testing.T) {
	hello := `{"protocol":"mcplife-driver/3","implementation":{"name":"x","version":"0"},"capabilities":[],"profiles":["conventions"],"eras":["legacy"]}`
	got := helloProblems([]byte(hello))
	if len(got) != 1 || got[0].Pointer != "/result/profiles/0" || !strings.Contains(got[0].Message, `profile "conventions" is of mcplife-driver/4, not of mcplife-driver/3`) {
		t.Errorf("problems %+v, want the conventions profile named as of mcplife-driver/4", got)
	}
	hello = strings.Replace(hello, "mcplife-driver/3", "mcplife-driver/4", 1)
	if got := helloProblems([]byte(hello)); len(got) != 0 {
		t.Errorf("a version-4 hello claiming conventions: problems %+v, want none", got)
	}
}
