package doctor_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcplife/mcplife/internal/doctor"
	"github.com/mcplife/mcplife/runtime/event"
)

// Issue 31: a -watch line too long for the terminal keeps the cause at the
// end of the error ("connection refused") instead of cutting it off after
// the start of a URL; short attributes and exit statuses show as they are,
// sanitized.
func TestWatchLineKeepsTheCause(t *testing.T) {
	refused := `calling "initialize": sending "initialize": rejected by transport: Post "http://127.0.0.1:3001/mcp": dial tcp 127.0.0.1:3001: connect: connection refused`
	e := event.Event{At: 28 * time.Second, Server: "web", Kind: event.RestartFailed,
		Attrs: map[string]any{"attempt": int64(6), "reason": "transport-exit", "next_delay_ms": int64(30000), "error": refused}}
	for _, width := range []int{140, 100, 80, 60} {
		got := doctor.WatchLine(e, width)
		if n := utf8.RuneCountInString(got); n > width {
			t.Errorf("width %d: %d characters: %q", width, n, got)
		}
		if cause := map[bool]string{true: "connection refused", false: "refused"}[width >= 80]; !strings.HasSuffix(got, cause) {
			t.Errorf("width %d: the cause is cut off: %q", width, got)
		}
		if !strings.HasPrefix(got, "  28.000s  restart.failed         web") {
			t.Errorf("width %d: the start is lost: %q", width, got)
		}
	}
	if got := doctor.WatchLine(e, 300); !strings.HasSuffix(got, " error="+refused) {
		t.Errorf("a line that fits is cut: %q", got)
	}

	exited := event.Event{At: time.Second, Server: "everything", Kind: event.ProcessExited,
		Attrs: map[string]any{"pid": int64(42), "status": "exit status 3", "planned": false}}
	if got, want := doctor.WatchLine(exited, 140), "   1.000s  process.exited         everything pid=42 status=exit status 3 planned=false"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}

	hostile := event.Event{Server: "evil\x1b[31m", Kind: event.ServerFailed, Attrs: map[string]any{"error": "boom\x1b]0;pwned\x07 \u202eoops"}}
	got := doctor.WatchLine(hostile, 140)
	for _, bad := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(got, bad) {
			t.Errorf("a control character reaches the terminal: %q", got)
		}
	}
}

// The table's error lines keep the cause too.
func TestTableErrorKeepsTheCause(t *testing.T) {
	rep := &doctor.Report{Servers: []doctor.Server{{Name: "web", Status: doctor.StatusFailed, Transport: "http", ConnectMillis: 3,
		Error: `calling "initialize": sending "initialize": rejected by transport: Post "http://127.0.0.1:3001/mcp": dial tcp 127.0.0.1:3001: connect: connection refused`}}}
	var b strings.Builder
	if err := doctor.WriteTable(&b, rep, doctor.TableOptions{Width: 80}); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "  error: ") {
			line = l
		}
	}
	if utf8.RuneCountInString(line) > 80 || !strings.HasSuffix(line, "connect: connection refused") || !strings.HasPrefix(line, `  error: calling "initialize"`) {
		t.Errorf("error line %q", line)
	}
}
