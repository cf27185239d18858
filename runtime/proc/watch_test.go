package proc

import (
	"bytes"
	"context"
	"io"
	"maps"
	"math"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestWatchOneGoroutine: a running process costs the package one goroutine,
// its Watcher's, which neither reads stderr in a blocked Read nor waits in
// waitid; it is gone once Done is closed.
func TestWatchOneGoroutine(t *testing.T) {
	ctx := testCtx(t)
	p := start(t, sh(`echo ready >&2; read line`), nil)
	awaitTail(t, ctx, p, "ready")
	if n, other := packageGoroutines(t); n != 1 || other != "" {
		t.Fatalf("%d watcher goroutines and %q, want one watcher and nothing else", n, other)
	}
	p.stdin.Close()
	waitDone(t, ctx, p)
	awaitWatchers(t, ctx, 0)
}

// TestWatcherSharedByProcesses: the processes of one Watcher share its
// goroutine; each one's stderr reaches its own tail, each exit is told
// apart, a process started after the goroutine ended gets a new one, and
// the goroutine ends with the last process.
func TestWatcherSharedByProcesses(t *testing.T) {
	ctx := testCtx(t)
	var wt Watcher
	spec := func(name string) Spec {
		s := sh(`echo "$1 up" >&2; read line; echo "$1 $line" >&2; exit 3`, name)
		s.Watcher = &wt
		return s
	}
	ps := []*Process{start(t, spec("a"), nil), start(t, spec("b"), nil), start(t, spec("c"), nil)}
	for i, p := range ps {
		awaitTail(t, ctx, p, string(rune('a'+i))+" up")
	}
	if n, other := packageGoroutines(t); n != 1 || other != "" {
		t.Fatalf("%d watcher goroutines and %q for 3 processes, want one and nothing else", n, other)
	}
	// b exits first: a and c are still watched.
	if _, err := ps[1].stdin.Write([]byte("bye\n")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, ctx, ps[1])
	if got := ps[1].StderrTail(); got != "b up\nb bye" {
		t.Errorf("b's tail = %q", got)
	}
	if st := ps[1].Exit(); st.Code != 3 {
		t.Errorf("b's exit = %s, want exit status 3", st)
	}
	for _, p := range []*Process{ps[0], ps[2]} {
		select {
		case <-p.Done():
			t.Fatalf("pid %d done with b", p.PID())
		default:
		}
	}
	for _, p := range []*Process{ps[0], ps[2]} {
		if _, err := p.stdin.Write([]byte("bye\n")); err != nil {
			t.Fatal(err)
		}
		waitDone(t, ctx, p)
	}
	if a, c := ps[0].StderrTail(), ps[2].StderrTail(); a != "a up\na bye" || c != "c up\nc bye" {
		t.Errorf("tails = %q, %q", a, c)
	}
	awaitWatchers(t, ctx, 0)
	// A new process brings the goroutine back, and takes it along.
	d := start(t, spec("d"), nil)
	awaitTail(t, ctx, d, "d up")
	if n, _ := packageGoroutines(t); n != 1 {
		t.Fatalf("%d watcher goroutines for a process started after the last ended, want 1", n)
	}
	d.stdin.Close()
	waitDone(t, ctx, d)
	awaitWatchers(t, ctx, 0)
}

// awaitTail waits until p's stderr tail is want.
func awaitTail(t *testing.T, ctx context.Context, p *Process, want string) {
	t.Helper()
	for p.StderrTail() != want {
		select {
		case <-ctx.Done():
			t.Fatalf("pid %d: stderr tail %q, want %q: %v", p.PID(), p.StderrTail(), want, context.Cause(ctx))
		default:
			runtime.Gosched()
		}
	}
}

// awaitWatchers waits until n Watcher goroutines run. The goroutine ends
// once it has handed the last exit over, on its own schedule.
func awaitWatchers(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	for {
		got, other := packageGoroutines(t)
		if got == n && other == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d watcher goroutines and %q, want %d: %v", got, other, n, context.Cause(ctx))
		default:
			runtime.Gosched()
		}
	}
}

// packageGoroutines counts the goroutines running a Watcher and names the
// first goroutine found in copyStderr or waitExit.
func packageGoroutines(t *testing.T) (watchers int, other string) {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	for stack := range strings.SplitSeq(b.String(), "\n\n") {
		switch {
		case strings.Contains(stack, "proc.(*Watcher).run"):
			watchers += stackCount(stack)
		case strings.Contains(stack, "proc.(*Process).copyStderr"), strings.Contains(stack, "proc.(*Process).waitExit"):
			other = stack
		}
	}
	return watchers, other
}

// stackCount returns the number of goroutines of one stack of a goroutine
// profile of debug level 1 ("N @ 0x...").
func stackCount(stack string) int {
	n, _, _ := strings.Cut(strings.TrimSpace(stack), " ")
	c, err := strconv.Atoi(n)
	if err != nil {
		return 1
	}
	return c
}

// TestWatchStderrFloodDoesNotHideExit: an escaped grandchild that writes
// to stderr without end neither hides the child's exit nor holds Done: the
// watch looks at the exit between chunks of stderr, and drains no more
// than the pipe held at exit plus the slack. (The writer dies of SIGPIPE
// once the watch closes the pipe.)
func TestWatchStderrFloodDoesNotHideExit(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	ctx := testCtx(t)
	dir := escapedDir(t)
	const script = `D=$1
mkfifo "$D/fifo"
setsid sh -c 'echo $$ > "$1/pid"; yes spam | head -c 200000 >&2; echo $$ > "$1/fifo"; exec yes spam >&2' sh "$D" >/dev/null &
read pid < "$D/fifo"
echo escaped`
	p := start(t, sh(script, dir), nil)
	waitDone(t, ctx, p)
	if st := p.Exit(); st.Code != 0 || st.Err != nil {
		t.Fatalf("Exit = %s", st)
	}
	// 200,000 bytes went through a pipe of 64 KiB before the child
	// exited, and the writer went on: the tail is full of its lines.
	if got := p.StderrTail(); len(got) < DefaultStderrLimit-8 || !onlySpam(got) {
		t.Errorf("StderrTail (%d bytes) = %q...%q", len(got), got[:min(len(got), 20)], got[max(0, len(got)-20):])
	}
}

// onlySpam reports whether s is lines of "spam", the first and the last
// possibly cut.
func onlySpam(s string) bool {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		switch {
		case i == 0 && strings.HasSuffix("spam", l), i == len(lines)-1 && strings.HasPrefix("spam", l), l == "spam":
		default:
			return false
		}
	}
	return true
}

// TestAfterDone: a function given to AfterDone before the end is called
// once Done is closed, and one given after it at once; each once.
func TestAfterDone(t *testing.T) {
	ctx := testCtx(t)
	p := start(t, sh(`read line`), nil)
	before := make(chan struct{})
	p.AfterDone(func() {
		select {
		case <-p.Done():
		default:
			t.Error("AfterDone's function ran before Done was closed")
		}
		close(before)
	})
	p.stdin.Close()
	select {
	case <-before:
	case <-ctx.Done():
		t.Fatal("AfterDone's function was not called at Done")
	}
	calls := 0
	p.AfterDone(func() { calls++ })
	if calls != 1 {
		t.Fatalf("AfterDone after Done called its function %d times, want 1 at once", calls)
	}
}

// TestReadParked: a parked read of stdout gives up its buffer (idle) while
// the pipe is empty, takes a new one once data is there, reads what the
// child wrote, and ends with io.EOF after the exit.
func TestReadParked(t *testing.T) {
	ctx := testCtx(t)
	p := start(t, sh(`read line; echo hi`), nil)
	bufs, idles := 0, make(chan struct{}, 1)
	buf := func() []byte { bufs++; return make([]byte, 64) }
	idle := func() {
		select {
		case idles <- struct{}{}:
		default:
		}
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		var got []byte
		var p2 []byte
		n, err := p.stdout.ReadParked(func() []byte { p2 = buf(); return p2 }, idle)
		got = append(got, p2[:n]...)
		done <- result{got, err}
	}()
	select {
	case <-idles: // the pipe is empty until the child reads its stdin
	case <-ctx.Done():
		t.Fatal("the read never gave up its buffer")
	}
	if _, err := p.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if string(r.b) != "hi\n" || r.err != nil || bufs < 2 {
		t.Fatalf("ReadParked = %q, %v after %d buffers; want \"hi\\n\", nil after at least 2", r.b, r.err, bufs)
	}
	waitDone(t, ctx, p)
	if n, err := p.stdout.ReadParked(buf, idle); n != 0 || err != io.EOF {
		t.Fatalf("ReadParked after the exit = %d, %v; want 0, io.EOF", n, err)
	}
}

// TestWatcherIDsWrap: the ids of a Watcher's processes wrap around after
// the largest, skipping one still in use.
func TestWatcherIDsWrap(t *testing.T) {
	ctx := testCtx(t)
	wt := Watcher{next: math.MaxUint32 - 1}
	spec := sh(`echo up >&2; read line`)
	spec.Watcher = &wt
	first := start(t, spec, nil)
	awaitTail(t, ctx, first, "up")
	wt.mu.Lock()
	ids := slices.Collect(maps.Keys(wt.watches))
	wt.watches[0] = wt.watches[ids[0]] // 0 is taken: the next id is 1
	wt.mu.Unlock()
	if len(ids) != 1 || ids[0] != math.MaxUint32 {
		t.Fatalf("ids %v, want [%d]", ids, uint32(math.MaxUint32))
	}
	second := start(t, spec, nil)
	awaitTail(t, ctx, second, "up")
	wt.mu.Lock()
	delete(wt.watches, 0)
	_, ok := wt.watches[1]
	wt.mu.Unlock()
	if !ok {
		t.Fatalf("the id after %d with 0 taken is not 1", uint32(math.MaxUint32))
	}
	for _, p := range []*Process{first, second} {
		p.stdin.Close()
		waitDone(t, ctx, p)
	}
	awaitWatchers(t, ctx, 0)
}
