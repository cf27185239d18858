package proc

import "golang.org/x/sys/unix"

// StdinUnread returns how many bytes written to the child's stdin it has
// not read yet: what the pipe still holds (FIONREAD, which Linux answers on
// either end of a pipe). ok is false when that cannot be told, for example
// once stdin is closed. A child that has read everything may still be
// working on it; one that leaves bytes unread has not got that far.
func (p *Process) StdinUnread() (n int, ok bool) {
	rc, err := p.stdin.f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ioErr != nil {
		return 0, false
	}
	return n, true
}
