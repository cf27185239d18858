package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/fixturelink"
)

// watchRun is a harness doctor -watch in this process whose output is
// read line by line; react is called with every line and may stop it.
type watchRun struct {
	mu    sync.Mutex
	lines []string
	code  int
	errb  strings.Builder
}

func (w *watchRun) out() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// runWatch runs doctor with args and in until react stops it (or 60 s of
// real time pass: a failure, reported by the caller).
func runWatch(t *testing.T, args []string, in doctorInput, react func(line string, stop func())) (*watchRun, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	pr, pw := io.Pipe()
	w := &watchRun{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
			react(sc.Text(), stop)
		}
	}()
	w.code = runDoctorContext(wctx, args, in, pw, &w.errb)
	pw.Close()
	<-read
	return w, ctx.Err() == nil
}

// Issue 31: doctor -watch health-probes idle servers, so a server wedged
// through its proxy while nobody calls it shows up (the probe fails and
// the server is restarted); probes that find a server healthy stay off the
// screen.
func TestDoctorWatchIdleProbe(t *testing.T) {
	fx := fixturelink.ForTest(t)
	exe := exe(t)
	// The proxy lets the handshake's tools/list through and holds ping and
	// every later tools/list: the server is wedged as soon as it is idle.
	// hang=ping is a handshake-era fault: the upstream speaks that era.
	wedged := fmt.Sprintf(`{"command": %q, "args": ["proxy", "-fault", "hang=ping", "-fault", "hang=tools/list,after=2", "--", %q], "env": {"GORACE": "atexit_sleep_ms=0", "MCP_FIXTURE_ERA": "legacy", %q: "cli"}}`, exe, fx, roleEnv)
	// Both speak the handshake era, whose idle probe starts with ping; with
	// a 200 ms probe timeout a dual-era server slow to answer
	// server/discover on a loaded machine would get initialize after its
	// discover, which go-sdk refuses (duplicate initialize).
	healthy := fmt.Sprintf(`{"command": %q, "env": {"GORACE": "atexit_sleep_ms=0", "MCP_FIXTURE_ERA": "legacy"}}`, fx)
	cfg := doctorConfig(t, map[string]string{"wedged": wedged, "healthy": healthy})
	w, ok := runWatch(t, []string{"-watch", "-width", "160", "-config", cfg, "-probe-interval", "200ms", "-probe-timeout", "200ms"}, doctorInput{},
		func(line string, stop func()) {
			if strings.Contains(line, "restart.succeeded") && strings.Contains(line, "wedged") {
				stop()
			}
		})
	out := w.out()
	if !ok {
		t.Fatalf("the wedged idle server was never restarted:\n%s\n%s", out, w.errb.String())
	}
	if w.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", w.code, out, w.errb.String())
	}
	for _, want := range []string{
		"probe.finished         wedged method=ping healthy=false error=ping timed out after 200ms",
		"probe.finished         wedged method=tools/list healthy=false",
		"restart.scheduled      wedged attempt=1 reason=idle-probe-failure delay_ms=0",
		"restart.succeeded      wedged attempt=1 reason=idle-probe-failure",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, noise := range []string{"probe.idle", "healthy=true", "probe.started"} {
		if strings.Contains(out, noise) {
			t.Errorf("output shows idle probe noise %q:\n%s", noise, out)
		}
	}
}

// Issue 31: a failed server is retried now, not at its next backoff slot,
// when the user presses Enter or sends SIGUSR1. Its restart delays are a
// minute: only the retry can make the attempts run within the test.
func TestDoctorWatchRetryNow(t *testing.T) {
	fx := fixturelink.ForTest(t)
	failing := fmt.Sprintf(`{"command": %q, "restartDelays": [60000], "env": {"GORACE": "atexit_sleep_ms=0", "MCP_FIXTURE_FAIL_ON_START": "1"}}`, fx)
	cfg := doctorConfig(t, map[string]string{"down": failing})
	keys, press := io.Pipe()
	defer press.Close()
	sig := make(chan os.Signal, 1)
	step := 0
	w, ok := runWatch(t, []string{"-watch", "-width", "160", "-config", cfg, "-probe-interval", "0"}, doctorInput{keys: keys, retry: sig},
		func(line string, stop func()) {
			// The first connect failed before the table; its restart (a
			// minute away) is usually scheduled before the watch begins,
			// but on a loaded machine it can come after: Enter then finds
			// no server waiting, and is pressed again once the watch shows
			// the restart scheduled.
			switch {
			case step == 0 && (strings.HasPrefix(line, "watching lifecycle events") ||
				strings.Contains(line, "restart.scheduled") && strings.Contains(line, "attempt=1")):
				step++
				go press.Write([]byte("\n")) // Enter
			case step == 1 && strings.Contains(line, "no server is waiting to retry"):
				step = 0
			case step == 1 && strings.Contains(line, "restart.scheduled") && strings.Contains(line, "attempt=2"):
				step++
				sig <- syscall.SIGUSR1
			case step == 2 && strings.Contains(line, "restart.scheduled") && strings.Contains(line, "attempt=3"):
				step++
				stop()
			}
		})
	out := w.out()
	if !ok {
		t.Fatalf("the retries did not come:\n%s\n%s", out, w.errb.String())
	}
	if w.code != 1 {
		t.Errorf("exit %d with a failed server, want 1", w.code)
	}
	for _, want := range []string{
		"watching lifecycle events; Enter or SIGUSR1 retries failed servers now; Ctrl-C stops every server and exits",
		"restart.scheduled      down attempt=2 reason=init-failure delay_ms=60000",
		"retry: retrying now: down",
		"restart.retry_now      down attempt=1",
		"restart.attempt        down attempt=1 reason=init-failure",
		"restart.retry_now      down attempt=2",
		"restart.attempt        down attempt=2 reason=init-failure",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
