package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/realservers"
)

// The console examples of README.md and docs/TESTING.md (```console
// blocks) are transcripts: "$ command" lines, each followed by what it
// prints, stdout and stderr as a terminal shows them. TestConsoleExamples
// runs every command of every block, in order, in one shell per block, and
// compares what it printed with the transcript, cmd/go style: line by line
// once a few things that change from run to run are normalized (see
// normalizeConsole). The block runs in a fresh directory where fixtures/
// is this checkout's and harness (./harness and on PATH) is this harness;
// that directory stands for /home/me/mcplife in the transcripts.
//
// Commands that set up what the test provides are not run: building or
// installing the harness, and `npm ci` in fixtures/real-servers. A block
// that runs node, npm or npx, or a server under fixtures/real-servers,
// needs Node and the pinned npm packages: without them it is skipped with a
// message under a plain `go test ./...`, and fails under
// MCPLIFE_REQUIRE_NODE=1 (.ci/run, .ci/real-servers-doctor).

// consoleDocs are the documents whose console examples are checked.
var consoleDocs = []string{"../../README.md", "../../docs/TESTING.md"}

// consoleRoot is what the transcripts call the directory they run in.
const consoleRoot = "/home/me/mcplife"

type consoleCmd struct {
	line int
	text string
	want []string
}

type consoleBlock struct {
	file string
	line int
	cmds []consoleCmd
}

func (b consoleBlock) name() string {
	return fmt.Sprintf("%s:%d", filepath.Base(b.file), b.line)
}

// parseConsole returns the console blocks of a Markdown document.
func parseConsole(file string, data []byte) []consoleBlock {
	var out []consoleBlock
	var cur *consoleBlock
	cont := false
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		switch {
		case cur == nil && strings.TrimSpace(line) == "```console":
			cur = &consoleBlock{file: file, line: n}
		case cur == nil:
		case strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cont:
			c := &cur.cmds[len(cur.cmds)-1]
			c.text += "\n" + line // the shell joins the lines
			cont = strings.HasSuffix(line, "\\")
		case strings.HasPrefix(line, "$ "):
			cur.cmds = append(cur.cmds, consoleCmd{line: n, text: strings.TrimPrefix(line, "$ ")})
			cont = strings.HasSuffix(line, "\\")
		case len(cur.cmds) > 0:
			c := &cur.cmds[len(cur.cmds)-1]
			c.want = append(c.want, line)
		}
	}
	return out
}

// provided reports whether cmd sets up what the test provides itself.
func provided(cmd string) bool {
	switch strings.TrimSpace(cmd) {
	case "go build -o harness ./cmd/harness", "go install ./cmd/harness", "(cd fixtures/real-servers && npm ci)":
		return true
	}
	return false
}

var needsNodeRE = regexp.MustCompile(`\b(node|npm|npx)\b|real-servers`)

// normalizeConsole rewrites what changes from run to run, in a transcript
// or an output alike: the run's directory, durations (connect, call and
// wall times), loopback ports and control tokens, counts of recorded
// events, Node's version; runs of spaces become one (durations change
// widths, and columns with them).
func normalizeConsole(s, dir string) string {
	if dir != "" {
		s = strings.ReplaceAll(s, dir, consoleRoot)
	}
	for _, r := range []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`\b\d+(\.\d+)?(ms|s)\b`), "DUR"},
		{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
		{regexp.MustCompile(`token [A-Z0-9]{16,}`), "token TOKEN"},
		{regexp.MustCompile(`\b\d+ events\b`), "N events"},
		{regexp.MustCompile(`Node\.js v[0-9.]+`), "Node.js vX"},
		{regexp.MustCompile(`[ \t]+`), " "},
	} {
		s = r.re.ReplaceAllString(s, r.with)
	}
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func TestConsoleExamples(t *testing.T) {
	t.Parallel()
	var blocks []consoleBlock
	for _, f := range consoleDocs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, parseConsole(f, data)...)
	}
	if len(blocks) == 0 {
		t.Fatal("no console example found")
	}
	var harnessBin string
	// The blocks of one document run in one directory, in order, as a
	// reader following it would: a later block uses what an earlier one
	// wrote (a trace, then its scenario).
	dirs := map[string]string{}
	skipped := map[string]string{} // the block of a document that was skipped, if any
	for _, b := range blocks {
		if dirs[b.file] == "" {
			dirs[b.file] = consoleDir(t)
		}
		work := dirs[b.file]
		t.Run(b.name(), func(st *testing.T) {
			if why := skipped[b.file]; why != "" {
				st.Skipf("%s builds on %s, which was skipped", b.name(), why)
			}
			skipped[b.file] = b.name() // until the block runs
			for _, c := range b.cmds {
				if needsNodeRE.MatchString(c.text) {
					realservers.Modules(st, "../..", b.name())
					break
				}
			}
			skipped[b.file] = ""
			if harnessBin == "" {
				harnessBin = harnessCopy(t) // in the parent's directory: every block uses it
			}
			runConsoleBlock(st, b, harnessBin, work)
		})
	}
}

// harnessCopy copies this test binary to a file named harness, which
// TestMain runs as the harness CLI (and which, as os.Executable of its
// own children, runs its proxies and fixtures the same way).
func harnessCopy(t *testing.T) string {
	t.Helper()
	src, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "harness")
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// consoleDir makes the directory a document's blocks run in: fixtures/ is
// this checkout's.
func consoleDir(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "fixtures"), filepath.Join(work, "fixtures")); err != nil {
		t.Fatal(err)
	}
	return work
}

// runConsoleBlock runs the commands of b in one shell, in work, and
// compares each command's output with the transcript.
func runConsoleBlock(t *testing.T, b consoleBlock, harnessBin, work string) {
	if _, err := os.Lstat(filepath.Join(work, "harness")); err != nil {
		if err := os.Symlink(harnessBin, filepath.Join(work, "harness")); err != nil {
			t.Fatal(err)
		}
	}
	const marker = "@@console-command@@"
	var script strings.Builder
	var run []consoleCmd
	for _, c := range b.cmds {
		if provided(c.text) {
			continue
		}
		run = append(run, c)
		// $? after the marker is still the previous command's status.
		fmt.Fprintf(&script, "__status=$?; echo %s; (exit $__status)\n%s\n", marker, c.text)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script.String())
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+work+string(os.PathListSeparator)+os.Getenv("PATH"), "GORACE=atexit_sleep_ms=0", "COLUMNS=")
	// A command that does not end takes its whole process group with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s: the commands did not end: %v\n%s", b.name(), err, out)
	}
	parts := strings.Split(string(out), marker+"\n")
	if len(parts) != len(run)+1 {
		t.Fatalf("%s: %d command outputs for %d commands:\n%s", b.name(), len(parts)-1, len(run), out)
	}
	for i, c := range run {
		got := normalizeConsole(parts[i+1], work)
		want := normalizeConsole(strings.Join(c.want, "\n"), "")
		if !sameConsole(got, want) {
			t.Errorf("%s:%d: $ %s\nprinted:\n%s\nthe transcript says:\n%s\n(normalized:\n%s\nvs\n%s)", filepath.Base(b.file), c.line, c.text, parts[i+1], strings.Join(c.want, "\n"), got, want)
		}
	}
}

// sameConsole compares normalized outputs line by line. A line the
// program cut to the terminal's width ("…") matches a transcript line that
// starts with what is left of it: the run's directory is not as long as
// the transcript's.
func sameConsole(got, want string) bool {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		if g[i] == w[i] {
			continue
		}
		head, _, cut := strings.Cut(g[i], "…")
		if !cut || !strings.HasPrefix(strings.ReplaceAll(w[i], "…", ""), head) {
			return false
		}
	}
	return true
}

// TestParseConsole checks the transcript reader on continuation lines and
// outputs.
func TestParseConsole(t *testing.T) {
	doc := "text\n```console\n$ a \\\n  b\nout 1\n\n$ c\n```\n```sh\n$ not\n```\n"
	bs := parseConsole("x.md", []byte(doc))
	if len(bs) != 1 || len(bs[0].cmds) != 2 {
		t.Fatalf("%+v", bs)
	}
	if c := bs[0].cmds[0]; c.text != "a \\\n  b" || strings.Join(c.want, "|") != "out 1|" || c.line != 3 {
		t.Errorf("%+v", c)
	}
	if got := normalizeConsole("x  3779ms  11.6s http://127.0.0.1:4242 token ABCDEFGHIJKLMNOPQRSTUV 39 events", ""); got != "x DUR DUR http://127.0.0.1:PORT token TOKEN N events" {
		t.Errorf("normalized: %q", got)
	}
	_ = bufio.ScanLines
}
