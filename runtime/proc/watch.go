package proc

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// A Watcher watches processes: it copies each one's stderr into its tail
// and notices when it has exited. All the processes of one Watcher share
// one goroutine, parked in Go's network poller on one epoll instance that
// holds each process's stderr pipe and a pidfd of it. A host with many
// quiet servers therefore pays one parked goroutine for all of them, and
// no read buffer, instead of a stderr reader holding its buffer in a
// blocked Read and an exit waiter per server.
//
// The goroutine and the epoll instance exist while the Watcher watches a
// process: the first process started with the Watcher creates them, and
// they end once the last one has exited. A Watcher therefore needs no
// Close; its zero value is ready to use, and it must not be copied after
// first use. Where the watch cannot be set up (pidfds came with Linux
// 5.3), each process gets the two goroutines of before (copyStderr,
// waitExit) instead.
type Watcher struct {
	mu      sync.Mutex
	set     *pollSet          // the epoll instance and its goroutine; nil while nothing is watched
	watches map[uint32]*watch // by id
	next    uint32            // the last id given (ids wrap around)
}

// pollSet is one epoll instance of a Watcher, read by one goroutine (run).
type pollSet struct {
	ep   *os.File // in Go's network poller
	epfd int      // its descriptor (ep.Fd would make it blocking)
}

// What an epoll event of a watch is about (EpollEvent.Pad; EpollEvent.Fd
// holds the watch's id).
const (
	aboutExit   = 0 // the pidfd: the child may have exited
	aboutStderr = 1 // the stderr pipe
)

// stderrChunk bounds one read of stderr: the watcher looks at the other
// descriptors again after each read, so a flood of stderr hides neither
// the child's exit nor any other process.
const stderrChunk = 64 << 10

// eventBatch is how many ready descriptors one epoll_wait takes.
const eventBatch = 32

// watch is what a Watcher holds of one process. Once added, only the
// Watcher's goroutine touches open and the epoll set; once removed (at the
// child's exit), only the goroutine that finishes the process.
type watch struct {
	p     *Process
	id    uint32
	pidfd int
	errFd int  // the stderr pipe (p.stderr owns and closes it)
	open  bool // stderr has not ended: errFd is in the epoll set
}

// newWatch opens what the watch of the child pid whose stderr pipe is
// stderr needs: a pidfd, and stderr's descriptor.
func newWatch(p *Process, stderr *os.File) (*watch, error) {
	rc, err := stderr.SyscallConn()
	if err != nil {
		return nil, err
	}
	w := &watch{p: p, open: true}
	if err := rc.Control(func(fd uintptr) { w.errFd = int(fd) }); err != nil {
		return nil, err
	}
	if w.pidfd, err = unix.PidfdOpen(p.pid, unix.PIDFD_NONBLOCK); err != nil {
		return nil, err
	}
	return w, nil
}

// add starts watching w. It fails when no epoll instance can be set up or
// w's descriptors cannot join it; w is then not watched.
func (wt *Watcher) add(w *watch) error {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	set := wt.set
	fresh := set == nil
	if fresh {
		var err error
		if set, err = newPollSet(); err != nil {
			return err
		}
	}
	if wt.watches == nil {
		wt.watches = make(map[uint32]*watch)
	}
	for {
		wt.next++
		if wt.watches[wt.next] == nil {
			break
		}
	}
	w.id = wt.next
	added := 0
	for _, about := range []int32{aboutExit, aboutStderr} {
		fd := w.pidfd
		if about == aboutStderr {
			fd = w.errFd
		}
		if err := unix.EpollCtl(set.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(w.id), Pad: about}); err != nil {
			if added > 0 {
				_ = unix.EpollCtl(set.epfd, unix.EPOLL_CTL_DEL, w.pidfd, nil)
			}
			if fresh {
				set.ep.Close()
			}
			return err
		}
		added++
	}
	wt.watches[w.id] = w
	if fresh {
		wt.set = set
		go wt.run(set)
	}
	return nil
}

// newPollSet creates an epoll instance in Go's network poller.
func newPollSet() (*pollSet, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// Nonblocking, so that os.NewFile puts it in the network poller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	return &pollSet{ep: os.NewFile(uintptr(epfd), "epoll"), epfd: epfd}, nil
}

// run is the Watcher's goroutine: it copies stderr and hands each exited
// process over to a goroutine of its own (Process.exited) until set has
// nothing left to watch. Should the epoll instance fail, every process it
// watched falls back to the goroutines of before.
func (wt *Watcher) run(set *pollSet) {
	defer set.ep.Close()
	rc, err := set.ep.SyscallConn()
	if err != nil {
		wt.fail(set)
		return
	}
	var events [eventBatch]unix.EpollEvent
	failed := false
	polled := rc.Read(func(epfd uintptr) bool {
		for {
			n, err := unix.EpollWait(int(epfd), events[:], 0)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				failed = true
				return true
			case n == 0:
				// Nothing ready: park until something is, unless
				// nothing is watched any more.
				return wt.retire(set)
			}
			for _, ev := range events[:n] {
				wt.handle(set, ev)
			}
		}
	})
	if polled != nil || failed {
		wt.fail(set)
	}
}

// retire ends set when it watches nothing; it reports whether it did. The
// next process added gets a new one.
func (wt *Watcher) retire(set *pollSet) bool {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if len(wt.watches) > 0 {
		return false
	}
	wt.set = nil
	return true
}

// handle takes one ready descriptor of set.
func (wt *Watcher) handle(set *pollSet, ev unix.EpollEvent) {
	wt.mu.Lock()
	w := wt.watches[uint32(ev.Fd)]
	wt.mu.Unlock()
	if w == nil {
		// Removed earlier in the same batch.
		return
	}
	switch ev.Pad {
	case aboutStderr:
		if _, open := w.readStderr(w.p.tail, stderrChunk); !open && w.open {
			w.open = false
			_ = unix.EpollCtl(set.epfd, unix.EPOLL_CTL_DEL, w.errFd, nil)
		}
	case aboutExit:
		exited, err := pidfdExited(w.pidfd)
		if !exited && err == nil {
			return
		}
		wt.remove(set, w)
		if err != nil {
			go w.p.watchFailed(w)
			return
		}
		go w.p.exited(w)
	}
}

// remove stops watching w.
func (wt *Watcher) remove(set *pollSet, w *watch) {
	_ = unix.EpollCtl(set.epfd, unix.EPOLL_CTL_DEL, w.pidfd, nil)
	if w.open {
		_ = unix.EpollCtl(set.epfd, unix.EPOLL_CTL_DEL, w.errFd, nil)
	}
	wt.mu.Lock()
	delete(wt.watches, w.id)
	wt.mu.Unlock()
}

// fail hands every process set watched over to the goroutines of before.
func (wt *Watcher) fail(set *pollSet) {
	wt.mu.Lock()
	ws := wt.watches
	wt.watches, wt.set = nil, nil
	wt.mu.Unlock()
	for _, w := range ws {
		go w.p.watchFailed(w)
	}
}

// readStderr copies into tail what stderr holds, up to limit bytes, in
// one read; the Watcher's epoll instance, level-triggered, tells again
// while more is held. It returns how many bytes it copied and whether
// stderr is still open: false once every writer has gone (EOF) or the
// read failed.
func (w *watch) readStderr(tail *tailBuffer, limit int) (copied int, open bool) {
	// Read exactly what the pipe holds: no buffer outlives the read.
	// Readable with nothing held is the end of the stream, which a read
	// into probe confirms.
	var probe [1]byte
	buf := probe[:]
	if held := fdBuffered(w.errFd); held > 0 {
		buf = make([]byte, min(held, limit))
	}
	for {
		n, err := unix.Read(w.errFd, buf)
		switch {
		case n > 0:
			tail.Write(buf[:n])
			return n, true
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			return 0, true
		default:
			return 0, false
		}
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
		n, open := w.readStderr(tail, min(left, stderrChunk))
		left -= n
		if !open || n == 0 {
			return
		}
	}
}

// close releases the pidfd.
func (w *watch) close() {
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
