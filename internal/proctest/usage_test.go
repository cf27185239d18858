package proctest

import (
	"os"
	"testing"
)

func TestUsage(t *testing.T) {
	cpu, rss, err := Usage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// A test binary has run its init and this test: some CPU, and more
	// than a MiB resident.
	if cpu < 0 || rss < 1<<20 {
		t.Errorf("Usage(self) = %v CPU, %d bytes resident", cpu, rss)
	}
	// Touching 64 MiB shows in the resident memory.
	b := make([]byte, 64<<20)
	for i := range b {
		if i%4096 == 0 {
			b[i] = 1
		}
	}
	_, after, err := Usage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-rss < 32<<20 {
		t.Errorf("resident memory grew %d bytes after touching 64 MiB, want at least 32 MiB", after-rss)
	}
	b[len(b)-1] = 1
	if _, _, err := Usage(1 << 30); err == nil {
		t.Error("Usage of a pid that cannot exist: no error")
	}
}
