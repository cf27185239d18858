package proc

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

// TestWaitNoReapLeavesZombie: waitNoReap returns once the child has exited
// (a child that waits on its stdin exits only when the test closes it) and
// leaves it unreaped: its pid stays a zombie until Wait collects it, with
// its real exit status.
func TestWaitNoReapLeavesZombie(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait func(pid int) error
	}{{"pidfd", waitNoReap}, {"blocking", waitNoReapBlocking}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", "read line; exit 3")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- tc.wait(cmd.Process.Pid) }()
			if gone(cmd.Process.Pid) {
				t.Fatalf("the child is gone before its stdin closed")
			}
			stdin.Close()
			if err := <-waited; err != nil {
				t.Fatalf("%s wait: %v", tc.name, err)
			}
			if err := syscall.Kill(cmd.Process.Pid, 0); err != nil || !gone(cmd.Process.Pid) {
				t.Errorf("after the wait the child is not a zombie (kill 0: %v): it must be exited and not reaped", err)
			}
			var ee *exec.ExitError
			if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Errorf("Wait after the wait: %v, want exit status 3", err)
			}
		})
	}
}
