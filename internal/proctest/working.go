package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Working describes the work under way, at this instant, in the calling
// process and in every process descending from it: goroutines of the
// calling process that are ready to run but not running, its threads that
// wait on a disk (state D), threads of its descendants that are running
// or wait for a CPU (state R) or a disk, and exited children of its
// descendants that their parent has not reaped yet. It returns "" when
// there is none.
// The calling process's own running threads do not count: one of them is
// reading this, and the Go runtime's monitor thread runs now and then in
// any busy Go process.
//
// It is the CPU evidence of an idle decision: on a starved machine a
// process that still has work looks, from its output, the same as one that
// stopped; its threads do not.
func Working(outside ...int) string {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, tid := os.Getpid(), syscall.Gettid()
	var found []string
	if n := runnableGoroutines(); n > 0 {
		found = append(found, fmt.Sprintf("%d goroutines of pid %d ready to run", n, self))
	}
	live, zombies := descendants(self)
	if len(outside) > 0 {
		skip := map[int]bool{}
		for _, pid := range outside {
			skip[pid] = true
			for _, d := range descendantPIDs(pid) {
				skip[d] = true
			}
		}
		live = slices.DeleteFunc(live, func(pid int) bool { return skip[pid] })
		zombies = slices.DeleteFunc(zombies, func(z zombie) bool { return skip[z.ppid] })
	}
	for _, z := range zombies {
		found = append(found, fmt.Sprintf("pid %d exited, not yet reaped by its parent %d", z.pid, z.ppid))
	}
	pids := append([]int{self}, live...)
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/task"
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue // gone
		}
		for _, t := range tasks {
			if pid == self && t.Name() == strconv.Itoa(tid) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
			if err != nil {
				continue
			}
			if state, comm, ok := taskState(b); ok && (state == "D" || state == "R" && pid != self) {
				found = append(found, fmt.Sprintf("pid %d (%s) thread %s in state %s", pid, comm, t.Name(), state))
			}
		}
	}
	return strings.Join(found, "; ")
}

// runnableGoroutines is how many goroutines of this process are ready to
// run but not running.
func runnableGoroutines() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// taskState reads the state and command name from a /proc stat line.
func taskState(b []byte) (state, comm string, ok bool) {
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", "", false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 1 {
		return "", "", false
	}
	return f[0], s[open+1 : end], true
}

// descendantPIDs lists the live processes descending from pid.
func descendantPIDs(pid int) []int {
	live, _ := descendants(pid)
	return live
}

// zombie is a process that exited and that its parent has not reaped yet.
type zombie struct{ pid, ppid int }

// descendants lists the live processes descending from pid, and the
// exited ones whose parent is one of them: a live process has yet to
// collect such a child's status and react to its exit, which is work
// under way. A zombie child of pid itself is left out: pid is the calling
// process, whose own pending work shows in its goroutines, and which may
// adopt orphans it collects only later.
func descendants(pid int) (live []int, zombies []zombie) {
	children := map[int][]int{}
	dead := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, ppid, ok := stat(p)
		switch {
		case !ok, state == "X":
		case state == "Z":
			dead[ppid] = append(dead[ppid], p)
		default:
			children[ppid] = append(children[ppid], p)
		}
	}
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			live = append(live, c)
			for _, z := range dead[c] {
				zombies = append(zombies, zombie{pid: z, ppid: c})
			}
			walk(c)
		}
	}
	walk(pid)
	return live, zombies
}
