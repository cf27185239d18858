// Package proctest checks that tests leave no processes behind.
//
// Main replaces goleak.VerifyTestMain in a TestMain: it makes the test
// process a child subreaper, so that grandchildren orphaned by a test are
// reparented to it instead of to PID 1, runs the tests, and then fails the
// package if any goroutine leaked or any live process descends from it.
package proctest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/goleak"
)

const prSetChildSubreaper = 36

// M is what Main runs: a *testing.M, or a wrapper of one that does more
// around the tests (such as removing what the package's tests shared).
type M interface {
	Run() int
}

// Main runs the tests of m, then verifies that no goroutine leaked and no
// process is left, and exits.
func Main(m M, opts ...goleak.Option) {
	// Orphans of our children become our children, so they can be seen.
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
		if left := Descendants(os.Getpid()); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "proctest: processes left behind by the tests: %s\n", strings.Join(left, "; "))
			code = 1
		}
	}
	reapZombies()
	os.Exit(code)
}

// ErrNotAProcess is Kill's error for a pid that names no single process.
var ErrNotAProcess = errors.New("not a single process")

// Kill sends sig to the process pid. A pid of 0 or less would signal a
// process group, or every process the user may signal (kill(2)), so Kill
// refuses it: a status, event or journal that reports such a pid (a broken
// implementation, or a mutant of the runtime) must fail a check, not kill
// the test's own process group.
func Kill(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return fmt.Errorf("signal %v to pid %d: %w", sig, pid, ErrNotAProcess)
	}
	return syscall.Kill(pid, sig)
}

// Alive reports whether pid is a running process (not gone, not a zombie).
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return false
	}
	state, _, ok := stat(pid)
	return ok && state != "Z" && state != "X"
}

// Reaped reports whether pid has left the process table: it exited and its
// parent collected its status (a zombie is dead but not reaped).
func Reaped(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// IOCounts returns how many bytes pid has read and written through system
// calls so far (rchar and wchar of /proc/PID/io); ok is false when they
// cannot be read.
func IOCounts(pid int) (read, written int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "rchar":
			read = n
		case "wchar":
			written = n
		}
	}
	return read, written, true
}

// BlockedOnPipeWrite reports whether a thread of pid waits to write into a
// full pipe: whoever reads the other end is not reading.
func BlockedOnPipeWrite(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, t := range tasks {
		w, err := os.ReadFile(filepath.Join(dir, t.Name(), "wchan"))
		if err == nil && strings.Contains(string(w), "pipe_write") {
			return true
		}
	}
	return false
}

// Descendants describes every live process descending from pid, as
// "pid (command)".
func Descendants(pid int) []string {
	var out []string
	for _, p := range descendantPIDs(pid) {
		comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "comm"))
		out = append(out, fmt.Sprintf("%d (%s)", p, strings.TrimSpace(string(comm))))
	}
	return out
}

// stat returns the state and parent pid of pid from /proc/pid/stat.
func stat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, true
}

// reapZombies collects adopted orphans that exited, so none outlive us as
// zombies of a long-lived parent.
func reapZombies() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// WaitGone waits until pid is no longer a live process, polling /proc, and
// returns ctx's error if it is still alive when ctx ends. Signal delivery is
// asynchronous, so a check right after a SIGKILL must wait for it.
func WaitGone(ctx context.Context, pid int) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for Alive(pid) {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("process %d still alive: %w", pid, ctx.Err())
		}
	}
	return nil
}
