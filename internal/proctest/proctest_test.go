package proctest

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestMain runs the package's own Main: goleak plus the process check.
func TestMain(m *testing.M) { Main(m) }

// TestOrphanIsSeen starts a shell that leaves a background sleep behind and
// exits; the sleep must show up as a descendant (we are its subreaper) until
// it is killed.
func TestOrphanIsSeen(t *testing.T) {
	out, err := exec.Command("sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if !Alive(pid) {
		t.Fatalf("orphan %d not alive", pid)
	}
	if d := Descendants(os.Getpid()); len(d) != 1 || !strings.HasPrefix(d[0], strconv.Itoa(pid)) {
		t.Fatalf("descendants = %v, want the orphan %d", d, pid)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	if Alive(pid) {
		t.Fatalf("orphan %d still alive after kill", pid)
	}
}

// TestKillRefusesGroups: Kill never signals a process group or every
// process (pid 0 or less); for them it returns ErrNotAProcess, having sent
// nothing (the test process, in the group pid 0 names, lives on).
func TestKillRefusesGroups(t *testing.T) {
	for _, pid := range []int{0, -1, -os.Getpid()} {
		err := Kill(pid, syscall.SIGKILL)
		if !errors.Is(err, ErrNotAProcess) {
			t.Errorf("Kill(%d) = %v, want ErrNotAProcess", pid, err)
		}
	}
	out, err := exec.Command("sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if err := Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("Kill(%d) of a single process: %v", pid, err)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	if Alive(pid) {
		t.Fatalf("process %d still alive after Kill", pid)
	}
}
