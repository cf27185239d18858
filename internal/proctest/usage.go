package proctest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

// Usage returns the CPU time process pid has used so far (user and system,
// its threads included) and its resident memory in bytes, from /proc.
func Usage(pid int) (cpu time.Duration, rss int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("usage of pid %d: %w", pid, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	// After the command: state (0), ppid, ..., utime (11), stime (12).
	if i < 0 || len(f) < 13 {
		return 0, 0, fmt.Errorf("usage of pid %d: malformed /proc stat %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("usage of pid %d: malformed CPU times in %q", pid, s)
	}
	cpu = time.Duration(utime+stime) * time.Second / userHZ
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, fmt.Errorf("usage of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("usage of pid %d: malformed VmRSS %q", pid, line)
			}
			return cpu, kb << 10, nil
		}
	}
	return 0, 0, fmt.Errorf("usage of pid %d: no VmRSS in /proc status", pid)
}
