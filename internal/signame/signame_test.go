package signame

import (
	"syscall"
	"testing"
)

func TestOf(t *testing.T) {
	for s, want := range map[syscall.Signal]string{
		syscall.SIGTERM:    "SIGTERM",
		syscall.SIGINT:     "SIGINT",
		syscall.SIGHUP:     "SIGHUP",
		syscall.SIGKILL:    "SIGKILL",
		syscall.SIGSEGV:    "SIGSEGV",
		syscall.SIGSYS:     "SIGSYS",
		syscall.Signal(0):  "signal 0",
		syscall.Signal(40): "signal 40",
	} {
		if got := Of(s); got != want {
			t.Errorf("Of(%d) = %q, want %q", int(s), got, want)
		}
	}
}

// TestNamesAreDistinct checks that no two signals share a name, so that a
// name read back from an event or a journal stands for one signal.
func TestNamesAreDistinct(t *testing.T) {
	seen := map[string]syscall.Signal{}
	for s, name := range names {
		if other, dup := seen[name]; dup {
			t.Errorf("signals %d and %d are both %q", int(s), int(other), name)
		}
		seen[name] = s
	}
}
