package mcpproxy

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// upstream is the real server's process. It runs in its own process group
// and its leader gets SIGKILL if the proxy dies (PR_SET_PDEATHSIG), so a
// proxy killed without warning does not leave the server behind. As the
// runtime does for its own children (runtime/proc), once the leader has
// exited the rest of its group is killed before the leader is reaped, so
// grandchildren holding stdout cannot keep the stream open.
type upstream struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File
	done   chan struct{} // closed once the process has been reaped
	state  *os.ProcessState
}

// startUpstream starts argv with env (nil: this process's) in dir.
func startUpstream(argv, env []string, dir string, stderr io.Writer) (*upstream, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	u := &upstream{cmd: cmd, stdin: stdin, stdout: r, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that started the
		// process exits, so this goroutine keeps its thread until the
		// process is reaped.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		w.Close()
		started <- err
		if err != nil {
			r.Close()
			close(u.done)
			return
		}
		waitNoReap(cmd.Process.Pid)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		u.state = cmd.ProcessState
		close(u.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	return u, nil
}

// pid returns the process id.
func (u *upstream) pid() int { return u.cmd.Process.Pid }

// exitCode renders the exit status as a shell would: the code, or 128 plus
// the signal number. Valid once done is closed.
func (u *upstream) exitCode() (code int, signal string) {
	if u.state == nil {
		return 1, ""
	}
	if ws, ok := u.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal().String()
	}
	return u.state.ExitCode(), ""
}

// stop ends the process the way the runtime ends a stdio server: it closes
// stdin, then sends SIGTERM and SIGKILL to the group, each after grace. A
// signal arriving on sigs meanwhile is passed on to the group at once, so
// that a client escalating on the proxy escalates on the server too.
func (u *upstream) stop(grace time.Duration, sigs <-chan os.Signal) {
	_ = u.stdin.Close()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t := time.NewTimer(grace)
		select {
		case <-u.done:
			t.Stop()
			return
		case s := <-sigs:
			t.Stop()
			if ss, ok := s.(syscall.Signal); ok {
				u.signal(ss)
			}
			continue
		case <-t.C:
		}
		u.signal(sig)
	}
	<-u.done
}

// signal sends sig to the process group while the leader is not reaped
// (so the group id cannot have been reused).
func (u *upstream) signal(sig syscall.Signal) {
	select {
	case <-u.done:
	default:
		_ = syscall.Kill(-u.cmd.Process.Pid, sig)
	}
}

// waitNoReap blocks until pid has exited, leaving it a zombie
// (waitid with WNOWAIT).
func waitNoReap(pid int) {
	const pPID, wNOWAIT = 1, 0x01000000
	var info [128]byte
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|wNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}
