package proc

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// A process has one goroutine of its own, its watch: it copies stderr into
// the tail and waits for the child's exit, parked in Go's network poller on
// an epoll instance of its own that holds the stderr pipe and a pidfd of
// the child. A quiet server therefore costs one parked goroutine and no
// read buffer, instead of a stderr reader holding its buffer in a blocked
// Read and an exit waiter. Where the watch cannot be set up (pidfds came
// with Linux 5.3), the two goroutines run instead (copyStderr, waitExit).

// stderrChunk bounds one read of stderr: the watch looks at the pidfd
// again after each chunk, so a flood of stderr cannot hide the exit.
const stderrChunk = 64 << 10

// watch is the epoll instance of a process's watch.
type watch struct {
	ep    *os.File // the epoll instance, in Go's network poller
	epfd  int      // its descriptor (ep.Fd would make it blocking)
	pidfd int
	errFd int  // the stderr pipe (p.stderr owns and closes it)
	open  bool // stderr has not ended: errFd is in the epoll set
}

// newWatch sets up the watch of the child pid whose stderr pipe is stderr.
func newWatch(pid int, stderr *os.File) (*watch, error) {
	rc, err := stderr.SyscallConn()
	if err != nil {
		return nil, err
	}
	errFd := -1
	if err := rc.Control(func(fd uintptr) { errFd = int(fd) }); err != nil {
		return nil, err
	}
	pidfd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		unix.Close(pidfd)
		return nil, err
	}
	fail := func(err error) (*watch, error) {
		unix.Close(epfd)
		unix.Close(pidfd)
		return nil, err
	}
	// Nonblocking, so that os.NewFile puts it in the network poller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		return fail(err)
	}
	for _, fd := range []int{pidfd, errFd} {
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return fail(err)
		}
	}
	return &watch{ep: os.NewFile(uintptr(epfd), "epoll"), epfd: epfd, pidfd: pidfd, errFd: errFd, open: true}, nil
}

// run copies stderr into tail until the child has exited, which leaves
// it an unreaped zombie. It returns an error when it could not tell: the
// epoll instance is not in the network poller (errNotPollable), or a wait
// failed.
func (w *watch) run(tail *tailBuffer) error {
	rc, err := w.ep.SyscallConn()
	if err != nil {
		return errNotPollable
	}
	exited := false
	var events [2]unix.EpollEvent
	var waitErr error
	polled := rc.Read(func(epfd uintptr) bool {
		for {
			n, err := unix.EpollWait(int(epfd), events[:], 0)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				waitErr = err
				return true
			case n == 0:
				// Nothing ready: park until the epoll instance is.
				return false
			}
			for _, ev := range events[:n] {
				switch int(ev.Fd) {
				case w.errFd:
					if _, open := w.copyStderr(tail, stderrChunk); !open {
						w.endStderr()
					}
				case w.pidfd:
					exited, waitErr = pidfdExited(w.pidfd)
					if exited || waitErr != nil {
						return true
					}
				}
			}
		}
	})
	switch {
	case polled != nil:
		return errNotPollable
	case waitErr != nil:
		return waitErr
	case !exited:
		return errors.New("proc: the watch ended before the exit")
	}
	return nil
}

// errNotPollable: the watch's epoll instance is not in the network poller.
var errNotPollable = errors.New("proc: the watch cannot be polled")

// copyStderr copies what stderr holds into tail, up to limit bytes. It
// returns how many it copied and whether stderr is still open: false once
// every writer has gone (EOF) or a read failed.
func (w *watch) copyStderr(tail *tailBuffer, limit int) (copied int, open bool) {
	var probe [1]byte
	for copied < limit {
		// Read exactly what the pipe holds: no buffer outlives the read.
		// Readable with nothing held is the end of the stream, which a
		// read into probe confirms.
		buf := probe[:]
		if held := fdBuffered(w.errFd); held > 0 {
			buf = make([]byte, min(held, limit-copied))
		}
		n, err := unix.Read(w.errFd, buf)
		switch {
		case n > 0:
			tail.Write(buf[:n])
			copied += n
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			return copied, true
		default:
			return copied, false
		}
	}
	return copied, true
}

// endStderr takes the ended stderr out of the epoll set.
func (w *watch) endStderr() {
	if w.open {
		w.open = false
		_ = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, w.errFd, nil)
	}
}

// drainStderr copies into tail what stderr holds once the child has exited
// and its group was killed, and no more than that plus drainSlack (an
// escaped writer may keep the pipe busy); see the package documentation.
func (w *watch) drainStderr(tail *tailBuffer) {
	if !w.open {
		return
	}
	left := fdBuffered(w.errFd) + drainSlack
	for left > 0 && fdBuffered(w.errFd) > 0 {
		n, open := w.copyStderr(tail, min(left, stderrChunk))
		left -= n
		if !open || n == 0 {
			return
		}
	}
}

// close releases the epoll instance and the pidfd.
func (w *watch) close() {
	w.ep.Close()
	unix.Close(w.pidfd)
}

// fdBuffered returns how many bytes the pipe fd holds, or 0 when that
// cannot be told.
func fdBuffered(fd int) int {
	n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
	if err != nil {
		return 0
	}
	return n
}
