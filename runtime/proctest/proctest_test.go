package proctest

import (
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
