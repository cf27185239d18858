package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/scenarios"
)

// terminalActive are characters that act on a terminal instead of being
// shown: ESC, BEL, CR, a C1 CSI, a bidi override.
var terminalActive = []string{"\x1b", "\x07", "\r", "\u009b", "\u202e"}

func noRaw(t *testing.T, what, text string) {
	t.Helper()
	for _, c := range terminalActive {
		if strings.Contains(text, c) {
			t.Errorf("%s holds a raw %q:\n%s", what, c, text)
		}
	}
}

// harness run's progress lines quote a scenario's name, its failure reason
// (which may quote a server or a driver) and its log: escapes are shown,
// never sent to the terminal.
func TestRunOutputEscaped(t *testing.T) {
	var b bytes.Buffer
	r := scenarios.Result{Status: "fail", Reason: "server said \x1b]0;pwned\x07\x1b[2J\rall good",
		Log: "> call echo\n\tgot \x1b[31mred\u202e\n"}
	r.Name = "900-\x1b[2Jname"
	printResult(&b, r, false)
	out := b.String()
	noRaw(t, "printResult", out)
	for _, want := range []string{`900-\x1b[2Jname`, `server said \x1b]0;pwned\x07\x1b[2J\rall good`, "\tgot \\x1b[31mred\\u202e"} {
		if !strings.Contains(out, want) {
			t.Errorf("printResult lacks %q:\n%s", want, out)
		}
	}
	if got := oneLine(errors.New("driver: \x1b[2Jbad\r\nsecond\x07")); got != `driver: \x1b[2Jbad\r; second\x07` {
		t.Errorf("oneLine = %q", got)
	}
}

// driver-check's report quotes what the driver under test wrote.
func TestDriverCheckReportEscaped(t *testing.T) {
	var b bytes.Buffer
	printStep(&b, checkStep{Name: "hello", Status: "fail", Detail: "impl \x1b]0;x\x07"})
	printCheckReport(&b, &checkReport{Impl: "./drv\x1b[2J", Stderr: "panic: \x1b[2J\r\nline 2\u009b",
		Problems: []checkProblem{{Step: "start", Message: "bad \u202eresult", Line: "{\"x\":\"\x1b[H\"}\r"}}})
	out := b.String()
	noRaw(t, "driver-check report", out)
	for _, want := range []string{`impl \x1b]0;x\x07`, `bad \u202eresult`, `panic: \x1b[2J\r`, `line 2\u009b`, `-impl './drv\x1b[2J'`} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// harness doctor on a config whose server names hold terminal escapes
// prints them as escapes.
func TestDoctorCLIEscapesNames(t *testing.T) {
	cfg := doctorConfig(t, map[string]string{
		`t\u001b]0;pwned\u0007`:                 `{"command": "x"}`,
		`c\u001b[2J`:                            `{"command": "x"}`,
		`l\u001b]8;;https://e.example\u001b\\d`: `{"command": "x"}`,
		`ok\rFAILED`:                            `{"command": "x"}`,
	})
	code, out, errs := harness(t, "doctor", "-width", "160", "-config", cfg)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (invalid names)\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	noRaw(t, "doctor's stdout", out)
	noRaw(t, "doctor's stderr", errs)
	for _, want := range []string{`t\x1b]0;pwned\x07`, `c\x1b[2J`, `l\x1b]8;;https://e.exam`, `ok\rFAILED`, "4 servers: 4 invalid"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}
