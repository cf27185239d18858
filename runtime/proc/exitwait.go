package proc

import (
	"errors"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waitNoReap blocks until the process pid has exited, leaving it unreaped
// (waitid with WEXITED|WNOWAIT), so that its pid, and with it the group
// id, stays the caller's until it reaps the child.
//
// It waits on a pidfd in Go's network poller: the waiting goroutine is
// parked, not a thread blocked in waitid, so a host with many servers does
// not keep an OS thread (and its 16 KiB system stack) per server. Where
// pidfds are missing (Linux before 5.3) or cannot be polled, it falls back
// to a blocking waitid.
func waitNoReap(pid int) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return waitNoReapBlocking(pid)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return waitNoReapBlocking(pid)
	}
	var waitErr error
	polled := rc.Read(func(fd uintptr) bool {
		exited, err := pidfdExited(int(fd))
		waitErr = err
		return exited || err != nil
	})
	if polled != nil {
		// The pidfd is not pollable here: wait the blocking way.
		return waitNoReapBlocking(pid)
	}
	return waitErr
}

// pidfdExited reports whether the child of the pidfd fd has exited,
// leaving it unreaped (waitid with WEXITED|WNOWAIT|WNOHANG).
func pidfdExited(fd int) (bool, error) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			// Ask again now: the readiness that woke the caller is not
			// signalled a second time.
			continue
		case err != nil:
			return false, err
		}
		// WNOHANG: a zero signal number means the child has not exited
		// yet; the pidfd becomes readable when it does.
		return info.Signo != 0, nil
	}
}

// waitNoReapBlocking is waitNoReap in a blocking waitid call, which holds
// an OS thread until the child exits.
func waitNoReapBlocking(pid int) error {
	const pPID = 1      // P_PID
	var info [16]uint64 // siginfo_t is 128 bytes
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}
