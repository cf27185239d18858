package proc

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
)

// TestWatchOneGoroutine: a running process costs the package one goroutine,
// its watch, which neither reads stderr in a blocked Read nor waits in
// waitid; it is gone once Done is closed.
func TestWatchOneGoroutine(t *testing.T) {
	ctx := testCtx(t)
	p := start(t, sh(`echo ready >&2; read line`), nil)
	// The watch copied stderr: it runs.
	for p.StderrTail() != "ready" {
		select {
		case <-ctx.Done():
			t.Fatalf("stderr never copied: %v", context.Cause(ctx))
		default:
			runtime.Gosched()
		}
	}
	if n, other := packageGoroutines(t); n != 1 || other != "" {
		t.Fatalf("%d watch goroutines and %q, want one watch and nothing else", n, other)
	}
	p.stdin.Close()
	waitDone(t, ctx, p)
}

// packageGoroutines counts the goroutines running watchExit and names the
// first goroutine found in copyStderr or waitExit.
func packageGoroutines(t *testing.T) (watches int, other string) {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	for stack := range strings.SplitSeq(b.String(), "\n\n") {
		switch {
		case strings.Contains(stack, "proc.(*Process).watchExit"):
			watches += strings.Count(stack, "proc.(*Process).watchExit") * stackCount(stack)
		case strings.Contains(stack, "proc.(*Process).copyStderr"), strings.Contains(stack, "proc.(*Process).waitExit"):
			other = stack
		}
	}
	return watches, other
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
