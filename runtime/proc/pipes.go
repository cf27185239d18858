package proc

import (
	"io"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// drainSlack bounds how many bytes beyond those buffered at exit a reader may
// still return, against an escaped writer that keeps the pipe busy. It is the
// largest pipe an unprivileged process can make, so it also covers a read in
// flight when the child exited.
const drainSlack = 1 << 20

// drainReader is the parent's read end of a child's output pipe. Once the
// child has exited (markExited) it returns io.EOF as soon as the pipe is
// empty, even if an escaped process still holds the write end. It supports
// one reader at a time.
type drainReader struct {
	f *os.File

	mu      sync.Mutex
	exited  bool // markExited was called
	expired bool // the pipe was empty at exit; a past read deadline was set
	left    int  // bytes still allowed after exit

	closeOnce sync.Once
	closeErr  error
}

func (r *drainReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	exited, expired, left := r.exited, r.expired, r.left
	r.mu.Unlock()
	if exited {
		if expired || left <= 0 || pipeBuffered(r.f) <= 0 {
			return 0, io.EOF
		}
		if len(p) > left {
			p = p[:left]
		}
	}
	n, err := r.f.Read(p)
	r.mu.Lock()
	if r.exited {
		r.left -= n
		if err != nil {
			// A read deadline set at exit, a close, or the real EOF: the
			// stream has ended either way.
			err = io.EOF
		}
	}
	r.mu.Unlock()
	return n, err
}

// ReadParked is Read into the buffer buf returns, with idle called each
// time the pipe is empty, before the read waits in the network poller:
// the caller holds no buffer while its server is quiet (wire.Reader). buf
// is called again once data is there.
func (r *drainReader) ReadParked(buf func() []byte, idle func()) (int, error) {
	r.mu.Lock()
	exited, expired, left := r.exited, r.expired, r.left
	r.mu.Unlock()
	if exited && (expired || left <= 0 || pipeBuffered(r.f) <= 0) {
		return 0, io.EOF
	}
	rc, err := r.f.SyscallConn()
	if err != nil {
		return r.Read(buf())
	}
	n, read := 0, false
	err = rc.Read(func(fd uintptr) bool {
		for {
			p := buf()
			if exited && len(p) > left {
				p = p[:left]
			}
			m, err := syscall.Read(int(fd), p)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				idle()
				return false
			case err == nil && m > 0:
				n, read = m, true
			}
			return true
		}
	})
	if err != nil || !read {
		// The end, a failure, a read deadline set at exit or a close:
		// Read tells which, as it does for every reader.
		return r.Read(buf())
	}
	r.mu.Lock()
	if r.exited {
		r.left -= n
	}
	r.mu.Unlock()
	return n, nil
}

// markExited is called once the child has exited and its group was killed:
// what the pipe holds now is what the reader may still read.
func (r *drainReader) markExited() {
	n := pipeBuffered(r.f)
	r.mu.Lock()
	r.exited = true
	r.expired = n <= 0
	r.left = max(n, 0) + drainSlack
	r.mu.Unlock()
	if n <= 0 {
		// Wake a Read blocked on the empty pipe. The deadline is a point in
		// the past, not a wait.
		if err := r.f.SetReadDeadline(time.Unix(1, 0)); err != nil {
			r.Close()
		}
	}
}

func (r *drainReader) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.f.Close() })
	return r.closeErr
}

// pipeBuffered returns the number of bytes waiting in the pipe (FIONREAD), or
// 0 if f is closed or the query fails.
func pipeBuffered(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	var n int32
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	})
	if err != nil || errno != 0 {
		return 0
	}
	return int(n)
}

// pipeWriter is the parent's write end of the child's stdin; Close is
// idempotent.
type pipeWriter struct {
	f         *os.File
	closeOnce sync.Once
	closeErr  error
}

func (w *pipeWriter) Write(p []byte) (int, error) { return w.f.Write(p) }

func (w *pipeWriter) Close() error {
	w.closeOnce.Do(func() { w.closeErr = w.f.Close() })
	return w.closeErr
}
