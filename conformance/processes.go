package conformance

import (
	"syscall"

	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/onsi/ginkgo/v2"
)

// This file holds the process table checks.

// Alive reports whether pid is a running process.
func (h *H) Alive(pid int) bool { return proctest.Alive(pid) }

// AwaitGone waits until pid is gone.
func (h *H) AwaitGone(pid int) bool {
	ctx, cancel := h.awaitCtx()
	defer cancel()
	return proctest.WaitGone(ctx, pid) == nil
}

// Kill sends sig to pid, as something outside the implementation would.
func (h *H) Kill(pid int, sig syscall.Signal) {
	ginkgo.GinkgoHelper()
	h.must(proctest.Kill(pid, sig), "kill")
}

// KillAtEnd has the harness kill pid when the spec ends, before the driver
// shuts down: a process that left its server's process group (setsid), which
// no implementation can be asked to find. Killing it first also releases
// any pipe it holds, so a failing implementation's shutdown cannot wait on
// it.
func (h *H) KillAtEnd(pid int) {
	if pid > 0 {
		h.escaped = append(h.escaped, pid)
	}
}
