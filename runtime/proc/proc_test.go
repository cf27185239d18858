package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixtureEnv makes the test binary serve MCP over stdio instead of running
// tests.
const fixtureEnv = "PROC_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(fixtureEnv) == "1" {
		os.Exit(runFixtureServer())
	}
	// goleak plus a check that no process outlives the tests.
	proctest.Main(m)
}

// runFixtureServer serves an "echo" tool and a "block" tool that never
// returns; it exits when stdin reaches EOF.
func runFixtureServer() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "proc-fixture", Version: "v0.0.0"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "never returns"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "fixture: blocking")
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Message: "blocking"})
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fixture:", err)
	}
	return 0
}

// testTimeout bounds every real-time wait of a test; nothing should come
// close to it.
const testTimeout = 30 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func sh(script string, args ...string) Spec {
	return Spec{Command: "sh", Args: append([]string{"-c", script, "sh"}, args...)}
}

// start starts spec and makes sure the process is gone and its pipes closed
// when the test ends.
func start(t *testing.T, spec Spec, c clock.Clock) *Process {
	t.Helper()
	p, err := Start(spec, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			p.Stop(cancelled, Grace{}, nil)
		}()
		select {
		case <-stopped:
		case <-time.After(testTimeout):
			t.Errorf("pid %d: Stop did not return", p.PID())
			return
		}
		select {
		case <-p.Done():
		case <-time.After(testTimeout):
			t.Errorf("pid %d not reaped", p.PID())
			return
		}
		tr := p.IOTransport()
		tr.Reader.Close()
		tr.Writer.Close()
	})
	return p
}

func waitDone(t *testing.T, ctx context.Context, p *Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-ctx.Done():
		t.Fatalf("pid %d: Done not closed: %v", p.PID(), context.Cause(ctx))
	}
}

// lines reads r line by line in the background; the channel is closed at EOF.
func lines(r io.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func nextLine(t *testing.T, ctx context.Context, ch <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("stdout ended")
		}
		return l
	case <-ctx.Done():
		t.Fatalf("no line: %v", context.Cause(ctx))
	}
	return ""
}

func readAll(t *testing.T, ctx context.Context, r io.Reader) string {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		ch <- result{b, err}
	}()
	select {
	case res := <-ch:
		if res.err != nil {
			t.Fatalf("read: %v", res.err)
		}
		return string(res.b)
	case <-ctx.Done():
		t.Fatalf("read did not reach EOF: %v", context.Cause(ctx))
	}
	return ""
}

func expectStep(t *testing.T, ctx context.Context, steps <-chan string, want string) {
	t.Helper()
	select {
	case got := <-steps:
		if got != want {
			t.Fatalf("step = %q, want %q", got, want)
		}
	case <-ctx.Done():
		t.Fatalf("no step %q: %v", want, context.Cause(ctx))
	}
}

func expectNoStep(t *testing.T, steps <-chan string) {
	t.Helper()
	select {
	case got := <-steps:
		t.Fatalf("unexpected step %q", got)
	default:
	}
}

func stepRecorder() (StopObserver, <-chan string) {
	ch := make(chan string, 16)
	return func(s string) { ch <- s }, ch
}

func stopAsync(ctx context.Context, p *Process, g Grace, obs StopObserver) <-chan ExitStatus {
	ch := make(chan ExitStatus, 1)
	go func() { ch <- p.Stop(ctx, g, obs) }()
	return ch
}

func result(t *testing.T, ctx context.Context, ch <-chan ExitStatus) ExitStatus {
	t.Helper()
	select {
	case st := <-ch:
		return st
	case <-ctx.Done():
		t.Fatalf("Stop did not return: %v", context.Cause(ctx))
	}
	return ExitStatus{}
}

// waitGone waits until pid has exited and checks that it is gone or a
// zombie (an orphan whose reaper, PID 1 in a container, may never reap it).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	const sysPidfdOpen = 434 // the same on every Linux architecture
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	switch errno {
	case 0:
		defer syscall.Close(int(fd))
		pfd := struct {
			fd              int32
			events, revents int16
		}{fd: int32(fd), events: 0x1 /* POLLIN: the process exited */}
		ts := syscall.NsecToTimespec(int64(testTimeout))
		for {
			n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
			if errno == syscall.EINTR {
				continue
			}
			if errno != 0 {
				t.Fatalf("ppoll: %v", errno)
			}
			if n == 0 {
				t.Fatalf("pid %d still alive after %v", pid, testTimeout)
			}
			break
		}
	case syscall.ESRCH:
	default:
		t.Fatalf("pidfd_open(%d): %v", pid, errno)
	}
	if !gone(pid) {
		t.Fatalf("pid %d is still running", pid)
	}
}

// gone reports whether pid no longer runs: it does not exist or is a zombie.
func gone(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("not a pid: %q", s)
	}
	return n
}

func TestExitCode(t *testing.T) {
	ctx := testCtx(t)
	p := start(t, sh("echo out; echo err >&2; exit 5"), nil)
	waitDone(t, ctx, p)
	st := p.Exit()
	if st.Code != 5 || st.Signal != "" || st.Err != nil || st.String() != "exit status 5" {
		t.Fatalf("Exit = %+v (%s)", st, st)
	}
	if got := p.StderrTail(); got != "err" {
		t.Errorf("StderrTail = %q", got)
	}
	if got := readAll(t, ctx, rawStdout(p)); got != "out\n" {
		t.Errorf("stdout = %q", got)
	}
}

func TestKilledBySignal(t *testing.T) {
	ctx := testCtx(t)
	p := start(t, sh("exec sleep 1000"), nil)
	if st := p.Exit(); !errors.Is(st.Err, ErrRunning) || st.Code != -1 {
		t.Fatalf("Exit before Done = %+v", st)
	}
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDone(t, ctx, p)
	st := p.Exit()
	if st.Code != -1 || st.Signal != "SIGKILL" || st.Err != nil || st.String() != "killed by SIGKILL" {
		t.Fatalf("Exit = %+v (%s)", st, st)
	}
}

func TestCommandNotFound(t *testing.T) {
	_, err := Start(Spec{Command: "proc-test-no-such-command"}, nil)
	if err == nil || !strings.Contains(err.Error(), `"proc-test-no-such-command"`) || !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	_, err = Start(Spec{Command: "/nonexistent/proc-test-cmd"}, nil)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/proc-test-cmd") || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
	if _, err := Start(Spec{}, nil); err == nil {
		t.Fatal("empty command started")
	}
}

func TestTransportCloseClosesStdin(t *testing.T) {
	ctx := testCtx(t)
	p := start(t, sh("cat; exit 4"), nil)
	tr := p.IOTransport()
	// The transport's reader passes JSON and drops other lines (package wire).
	if _, err := tr.Writer.Write([]byte("dropped\n{\"through\":1}\n")); err != nil {
		t.Fatal(err)
	}
	if err := tr.Writer.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, ctx, tr.Reader); got != "{\"through\":1}\n" {
		t.Fatalf("stdout = %q", got)
	}
	waitDone(t, ctx, p)
	if st := p.Exit(); st.Code != 4 {
		t.Fatalf("Exit = %s", st)
	}
}

func TestLookPathUsesSpecEnv(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "proc-test-hello"), []byte("#!/bin/sh\necho \"hello $GREETING\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := start(t, Spec{
		Command: "proc-test-hello",
		Env:     []string{"PATH=" + dir + ":/usr/bin:/bin", "GREETING=env"},
	}, nil)
	if got := readAll(t, ctx, rawStdout(p)); got != "hello env\n" {
		t.Fatalf("stdout = %q", got)
	}
	waitDone(t, ctx, p)
	if st := p.Exit(); st.Code != 0 || st.Err != nil {
		t.Fatalf("Exit = %s", st)
	}
}

func TestStderrTail(t *testing.T) {
	t.Run("bounded", func(t *testing.T) {
		ctx := testCtx(t)
		spec := sh(`printf 'first line\n' >&2; printf '0123456789abcdefXYZ\n' >&2`)
		spec.StderrLimit = 16
		p := start(t, spec, nil)
		waitDone(t, ctx, p)
		if got := p.StderrTail(); got != "456789abcdefXYZ" {
			t.Fatalf("StderrTail = %q", got)
		}
	})
	t.Run("default limit, read concurrently", func(t *testing.T) {
		ctx := testCtx(t)
		p := start(t, sh(`i=0; while [ $i -lt 3000 ]; do echo "line $i" >&2; i=$((i+1)); done`), nil)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for {
					if len(p.StderrTail()) > DefaultStderrLimit {
						t.Error("tail over the limit")
					}
					select {
					case <-p.Done():
						return
					default:
					}
				}
			})
		}
		waitDone(t, ctx, p)
		wg.Wait()
		got := p.StderrTail()
		if len(got) > DefaultStderrLimit || len(got) < DefaultStderrLimit-20 {
			t.Errorf("len(tail) = %d", len(got))
		}
		if !strings.HasSuffix(got, "line 2998\nline 2999") || strings.Contains(got, "line 1\n") {
			t.Errorf("tail = ...%q", got[max(0, len(got)-40):])
		}
	})
}

func TestTailBuffer(t *testing.T) {
	b := newTailBuffer(5)
	b.Write([]byte("ab"))
	if got := b.String(); got != "ab" {
		t.Fatalf("got %q", got)
	}
	b.Write([]byte("cdef"))
	if got := b.String(); got != "bcdef" {
		t.Fatalf("got %q", got)
	}
	b.Write([]byte("0123456789"))
	if got := b.String(); got != "56789" {
		t.Fatalf("got %q", got)
	}
	b.Write([]byte("x\u00e9")) // 'é' is 2 bytes
	if got := b.String(); got != "89x\u00e9" {
		t.Fatalf("got %q", got)
	}
	b.Write([]byte("\u00e9\u00e9\u00e9")) // 6 bytes: the kept 5 start inside the first 'é'
	if got := b.String(); got != "\u00e9\u00e9" {
		t.Fatalf("got %q", got)
	}
}

func TestOrphansKilledAfterNaturalExit(t *testing.T) {
	ctx := testCtx(t)
	p := start(t, sh("sleep 1000 & echo $!"), nil)
	waitDone(t, ctx, p)
	if st := p.Exit(); st.Code != 0 || st.Err != nil {
		t.Fatalf("Exit = %s", st)
	}
	// What the child wrote before it exited is still readable.
	pid := atoi(t, readAll(t, ctx, rawStdout(p)))
	waitGone(t, pid)
}

func TestStopKillsProcessGroup(t *testing.T) {
	ctx := testCtx(t)
	fc := clocktest.New()
	p := start(t, sh("sleep 1000 & echo $!; wait"), fc)
	out := lines(rawStdout(p))
	pid := atoi(t, nextLine(t, ctx, out))

	obs, steps := stepRecorder()
	res := stopAsync(ctx, p, Grace{Stdin: time.Second}, obs)
	expectStep(t, ctx, steps, StepStdinClosed)
	if err := fc.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fc.Advance(time.Second)
	expectStep(t, ctx, steps, StepTerm)
	st := result(t, ctx, res)
	if st.Signal != "SIGTERM" {
		t.Fatalf("Exit = %s", st)
	}
	waitGone(t, pid)
	expectNoStep(t, steps)
}

// ignoreTermScript reports SIGTERM on stdout instead of dying and ignores
// stdin.
const ignoreTermScript = `trap 'echo term' TERM; echo ready; while :; do sleep 1; done`

func TestStopEscalation(t *testing.T) {
	ctx := testCtx(t)
	fc := clocktest.New()
	p := start(t, sh(ignoreTermScript), fc)
	out := lines(rawStdout(p))
	if l := nextLine(t, ctx, out); l != "ready" {
		t.Fatalf("line = %q", l)
	}

	obs, steps := stepRecorder()
	res := stopAsync(ctx, p, Grace{Stdin: time.Second, Term: 2 * time.Second, Kill: 3 * time.Second}, obs)
	expectStep(t, ctx, steps, StepStdinClosed)
	if err := fc.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := fc.Pending(); !slices.Equal(got, []time.Duration{time.Second}) {
		t.Fatalf("pending timers = %v", got)
	}
	fc.Advance(time.Second - time.Millisecond)
	expectNoStep(t, steps)
	fc.Advance(time.Millisecond)

	expectStep(t, ctx, steps, StepTerm)
	if l := nextLine(t, ctx, out); l != "term" {
		t.Fatalf("line = %q", l)
	}
	if err := fc.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := fc.Pending(); !slices.Equal(got, []time.Duration{2 * time.Second}) {
		t.Fatalf("pending timers = %v", got)
	}
	fc.Advance(2 * time.Second)

	expectStep(t, ctx, steps, StepKill)
	st := result(t, ctx, res)
	if st.Signal != "SIGKILL" || st.Code != -1 {
		t.Fatalf("Exit = %s", st)
	}
	if st != p.Exit() {
		t.Fatalf("Stop = %+v, Exit = %+v", st, p.Exit())
	}
	expectNoStep(t, steps)
	if fc.Elapsed() != 3*time.Second {
		t.Fatalf("elapsed = %v", fc.Elapsed())
	}
}

func TestStopContextDone(t *testing.T) {
	const script = `trap '' TERM; echo ready; while :; do sleep 1; done`
	hour := Grace{Stdin: time.Hour, Term: time.Hour, Kill: time.Hour}

	t.Run("while waiting", func(t *testing.T) {
		ctx := testCtx(t)
		fc := clocktest.New()
		p := start(t, sh(script), fc)
		out := lines(rawStdout(p))
		nextLine(t, ctx, out)

		stopCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		obs, steps := stepRecorder()
		res := stopAsync(stopCtx, p, hour, obs)
		expectStep(t, ctx, steps, StepStdinClosed)
		if err := fc.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		cancel()
		expectStep(t, ctx, steps, StepKill)
		if st := result(t, ctx, res); st.Signal != "SIGKILL" {
			t.Fatalf("Exit = %s", st)
		}
		if fc.Elapsed() != 0 {
			t.Fatalf("fake time moved: %v", fc.Elapsed())
		}
	})

	t.Run("already done", func(t *testing.T) {
		ctx := testCtx(t)
		fc := clocktest.New()
		p := start(t, sh(script), fc)
		out := lines(rawStdout(p))
		nextLine(t, ctx, out)

		stopCtx, cancel := context.WithCancel(ctx)
		cancel()
		obs, steps := stepRecorder()
		if st := result(t, ctx, stopAsync(stopCtx, p, hour, obs)); st.Signal != "SIGKILL" {
			t.Fatalf("Exit = %s", st)
		}
		expectStep(t, ctx, steps, StepStdinClosed)
		expectStep(t, ctx, steps, StepKill)
		expectNoStep(t, steps)
	})
}

func TestStopAfterNaturalExit(t *testing.T) {
	ctx := testCtx(t)
	fc := clocktest.New()
	p := start(t, sh("exit 3"), fc)
	waitDone(t, ctx, p)
	obs, steps := stepRecorder()
	for range 2 {
		if st := p.Stop(ctx, Grace{}, obs); st.Code != 3 || st.Err != nil {
			t.Fatalf("Stop = %s", st)
		}
	}
	expectNoStep(t, steps)
	if got := fc.Pending(); len(got) != 0 {
		t.Fatalf("pending timers = %v", got)
	}
}

func TestConcurrentStop(t *testing.T) {
	const n = 8
	run := func(t *testing.T, p *Process, ctx, stopCtx context.Context) ([]ExitStatus, []string) {
		var mu sync.Mutex
		var steps []string
		obs := func(s string) {
			mu.Lock()
			steps = append(steps, s)
			mu.Unlock()
		}
		chans := make([]<-chan ExitStatus, n)
		for i := range chans {
			chans[i] = stopAsync(stopCtx, p, Grace{}, obs)
		}
		var sts []ExitStatus
		for _, ch := range chans {
			sts = append(sts, result(t, ctx, ch))
		}
		mu.Lock()
		defer mu.Unlock()
		return sts, steps
	}

	t.Run("exits on stdin EOF", func(t *testing.T) {
		ctx := testCtx(t)
		p := start(t, sh("cat >/dev/null; exit 7"), clocktest.New())
		sts, steps := run(t, p, ctx, ctx)
		for _, st := range sts {
			if st.Code != 7 || st.Err != nil {
				t.Fatalf("Stop = %s", st)
			}
		}
		if !slices.Equal(steps, []string{StepStdinClosed}) {
			t.Fatalf("steps = %q", steps)
		}
	})

	t.Run("forced", func(t *testing.T) {
		ctx := testCtx(t)
		p := start(t, sh(`trap '' TERM; while :; do sleep 1; done`), clocktest.New())
		stopCtx, cancel := context.WithCancel(ctx)
		cancel()
		sts, steps := run(t, p, ctx, stopCtx)
		for _, st := range sts {
			if st.Signal != "SIGKILL" {
				t.Fatalf("Stop = %s", st)
			}
		}
		if !slices.Equal(steps, []string{StepStdinClosed, StepKill}) {
			t.Fatalf("steps = %q", steps)
		}
	})
}

// An escaped grandchild (setsid) keeps the write ends of stdout and stderr
// open; Done must still close and stdout must still end, after everything
// the child wrote.
func TestEscapedGrandchildDoesNotHoldPipes(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	ctx := testCtx(t)
	dir := escapedDir(t)
	const script = `D=$1
mkfifo "$D/fifo"
setsid sh -c 'echo $$ > "$1/pid"; echo $$ > "$1/fifo"; exec sleep 1000' sh "$D" &
read pid < "$D/fifo"
echo "escaped $pid"
echo bye >&2`
	p := start(t, sh(script, dir), nil)
	waitDone(t, ctx, p)
	if st := p.Exit(); st.Code != 0 || st.Err != nil {
		t.Fatalf("Exit = %s", st)
	}
	if got := p.StderrTail(); got != "bye" {
		t.Errorf("StderrTail = %q", got)
	}
	out := readAll(t, ctx, rawStdout(p))
	pidStr, ok := strings.CutPrefix(out, "escaped ")
	if !ok {
		t.Fatalf("stdout = %q", out)
	}
	pid := atoi(t, pidStr)
	if gone(pid) {
		t.Fatalf("escaped pid %d is gone: the test proves nothing", pid)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid == p.PID() {
		t.Fatalf("escaped pid %d: pgid %d, %v", pid, pgid, err)
	}
}

// escapedDir returns a directory where a test's escaped process writes
// its pid (DIR/pid), and kills that process when the test ends: it left
// the group, so no Stop reaches it.
func escapedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			return
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			return
		}
		// The escaped shell leads a session and a group of its own; a
		// pipeline it ran may still have a member in it. Kill them all
		// and wait, so the package's check of processes left behind
		// does not race with the deliveries.
		members := groupMembers(pid)
		syscall.Kill(-pid, syscall.SIGKILL)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		for _, m := range members {
			if err := proctest.WaitGone(ctx, m); err != nil {
				t.Error(err)
			}
		}
	})
	return dir
}

// groupMembers returns the pids of the processes of process group pgid.
func groupMembers(pgid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		_, rest, ok := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if ok && len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func fixtureSpec(t *testing.T) Spec {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A race-enabled binary sleeps 1 s at exit unless told otherwise.
	return Spec{Command: exe, Env: append(os.Environ(), fixtureEnv+"=1", "GORACE=atexit_sleep_ms=0")}
}

func connect(t *testing.T, ctx context.Context, p *Process, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "proc-test", Version: "v0.0.0"}, opts)
	cs, err := client.Connect(ctx, p.Transport(), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v (stderr: %s)", err, p.StderrTail())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func echo(t *testing.T, ctx context.Context, cs *mcp.ClientSession, text string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text {
		t.Fatalf("echo result: %+v", res.Content)
	}
}

func TestMCPCallFailsWhenServerKilled(t *testing.T) {
	ctx := testCtx(t)
	p := start(t, fixtureSpec(t), nil)
	progress := make(chan struct{}, 1)
	cs := connect(t, ctx, p, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- struct{}{}:
			default:
			}
		},
	})
	echo(t, ctx, cs, "hello")

	callErr := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "block"}
		params.SetProgressToken("block-1")
		// No deadline: only the loss of the connection can end this call.
		_, err := cs.CallTool(context.Background(), params)
		callErr <- err
	}()
	select {
	case <-progress: // the call is in flight on the server
	case <-ctx.Done():
		t.Fatal("block tool did not start")
	}

	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case err := <-callErr:
		if err == nil {
			t.Fatal("call in flight succeeded")
		}
		if d := time.Since(killed); d > 5*time.Second {
			t.Fatalf("call failed only after %v", d)
		}
		t.Logf("call failed after %v: %v", time.Since(killed), err)
	case <-ctx.Done():
		t.Fatal("call in flight hangs after the server was killed")
	}
	waitDone(t, ctx, p)
	if st := p.Exit(); st.Signal != "SIGKILL" {
		t.Fatalf("Exit = %s", st)
	}
	if !strings.Contains(p.StderrTail(), "fixture: blocking") {
		t.Errorf("StderrTail = %q", p.StderrTail())
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Fatal("call after the server died succeeded")
	}
	if st := p.Stop(ctx, Grace{}, func(s string) { t.Errorf("step %q after exit", s) }); st.Signal != "SIGKILL" {
		t.Fatalf("Stop = %s", st)
	}
}

func TestMCPCleanStop(t *testing.T) {
	ctx := testCtx(t)
	fc := clocktest.New()
	p := start(t, fixtureSpec(t), fc)
	cs := connect(t, ctx, p, nil)
	echo(t, ctx, cs, "hello")

	obs, steps := stepRecorder()
	st := result(t, ctx, stopAsync(ctx, p, Grace{}, obs))
	if st.Code != 0 || st.Signal != "" || st.Err != nil {
		t.Fatalf("Stop = %s (stderr: %s)", st, p.StderrTail())
	}
	expectStep(t, ctx, steps, StepStdinClosed)
	expectNoStep(t, steps)
	if fc.Elapsed() != 0 {
		t.Fatalf("fake time moved: %v", fc.Elapsed())
	}

	waited := make(chan error, 1)
	go func() { waited <- cs.Wait() }()
	select {
	case <-waited: // the session saw the connection end
	case <-ctx.Done():
		t.Fatal("session still open after the server exited")
	}
}

// rawStdout claims the transport, as the host does, and returns the child's
// stdout before the wire filter, which would drop the shell's plain lines.
func rawStdout(p *Process) io.Reader {
	p.Transport()
	return p.stdout
}

func TestStdinUnread(t *testing.T) {
	// The child reads one line, says so, and then reads nothing more until
	// stdin closes.
	p := start(t, sh(`read -r line; echo "{\"read\":\"$line\"}"; sleep 30 & wait`), nil)
	tr := p.IOTransport()
	if n, ok := p.StdinUnread(); !ok || n != 0 {
		t.Fatalf("before any write: StdinUnread = %d, %v; want 0, true", n, ok)
	}
	if _, err := tr.Writer.Write([]byte("first\nsecond-line\n")); err != nil {
		t.Fatal(err)
	}
	// Once the child said it read its line, the rest is still in the pipe
	// (sh's read takes a byte at a time from a pipe).
	r := bufio.NewReader(tr.Reader)
	line, err := r.ReadString('\n')
	if err != nil || line != "{\"read\":\"first\"}\n" {
		t.Fatalf("stdout = %q, %v", line, err)
	}
	if n, ok := p.StdinUnread(); !ok || n != len("second-line\n") {
		t.Fatalf("after the child read one line: StdinUnread = %d, %v; want %d, true", n, ok, len("second-line\n"))
	}
	tr.Writer.Close()
	if _, ok := p.StdinUnread(); ok {
		t.Fatal("after stdin closed: StdinUnread ok = true, want false")
	}
}
