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
