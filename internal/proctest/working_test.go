package proctest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWorkingSeesASpinningChild checks that a child burning CPU is work
// under way, and that once it sleeps it is not.
func TestWorkingSeesASpinningChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spin := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = spin.Process.Kill(); _ = spin.Wait() }()
	// A spinning shell is in state R at every look (running or waiting
	// for a CPU); await the first look that names it.
	for w := Working(); !strings.Contains(w, "(sh)"); w = Working() {
		if ctx.Err() != nil {
			t.Fatalf("Working never named the spinning child; last: %q", w)
		}
	}
	_ = spin.Process.Kill()
	_ = spin.Wait()

	sleeper := exec.CommandContext(ctx, "sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	// A sleeping child is no work; await the look at which it sleeps
	// (it runs while it starts).
	for w := Working(); strings.Contains(w, "(sleep)"); w = Working() {
		if ctx.Err() != nil {
			t.Fatalf("a sleeping child still counts as work: %q", w)
		}
	}
}

// TestWorkingLeavesOutsideOut checks that a process named as outside, and
// its descendants, are not work under way: a shell whose child spins is
// named without it, and not with it.
func TestWorkingLeavesOutsideOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The outer shell waits for the inner one, which spins.
	outer := exec.Command("sh", "-c", "sh -c 'while :; do :; done'; :")
	outer.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := outer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-outer.Process.Pid, syscall.SIGKILL); _ = outer.Wait() }()
	for w := Working(); !strings.Contains(w, "(sh)"); w = Working() {
		if ctx.Err() != nil {
			t.Fatalf("Working never named the spinning grandchild; last: %q", w)
		}
	}
	// The grandchild spins at every look; the outer shell sleeps in wait.
	if w := Working(outer.Process.Pid); strings.Contains(w, "(sh)") {
		t.Errorf("Working(outer) names the outer shell's spinning child: %q", w)
	}
}

func TestTaskState(t *testing.T) {
	state, comm, ok := taskState([]byte("42 (mcp fixture (x)) D 1 42 42 0 -1"))
	if !ok || state != "D" || comm != "mcp fixture (x)" {
		t.Errorf("taskState = %q %q %v", state, comm, ok)
	}
	if _, _, ok := taskState([]byte("garbage")); ok {
		t.Error("garbage parsed")
	}
}

// TestWorkingSeesAnUnreapedChild: a child process that exited and that its
// live parent (a descendant of ours) has not reaped is work under way; it
// is no longer once that parent is gone.
func TestWorkingSeesAnUnreapedChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// sh starts true in the background, then becomes sleep, which never
	// reaps the exited true.
	parent := exec.CommandContext(ctx, "sh", "-c", "true & exec sleep 30")
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	want := fmt.Sprintf("not yet reaped by its parent %d", parent.Process.Pid)
	for w := Working(); !strings.Contains(w, want); w = Working() {
		if ctx.Err() != nil {
			t.Fatalf("Working never named the unreaped child of %d; last: %q", parent.Process.Pid, w)
		}
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	for w := Working(); strings.Contains(w, "not yet reaped"); w = Working() {
		if ctx.Err() != nil {
			t.Fatalf("an orphan adopted by this process still counts as work: %q", w)
		}
	}
}
