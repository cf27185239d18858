package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/onsi/ginkgo/v2"
)

// This file holds the end of a spec: shutting the driver down, checking
// that no process survived and attaching diagnostics to a failure.

// teardown ends the spec: it shuts the driver down, checks that no server
// process survived, validates the exchange and the evidence, and removes the
// spec's directory. Problems are collected and reported together, after
// everything is cleaned up.
func (h *H) teardown() {
	failedBefore := ginkgo.CurrentSpecReport().Failed()
	h.killEscaped()
	errs := h.closeDriver()
	for _, cmd := range h.procs {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	errs = append(errs, h.checkProcessesGone()...)
	if !failedBefore && len(errs) == 0 {
		errs = append(errs, h.evidenceProblems()...)
	}
	lines := make([]string, len(h.observed))
	for i, o := range h.observed {
		lines[i] = o.String()
	}
	ginkgo.AddReportEntry("evidence", ginkgo.ReportEntryVisibilityNever, strings.Join(lines, "\n"))
	if failedBefore || len(errs) > 0 {
		h.attachDiagnostics()
	}
	_ = os.RemoveAll(h.dir)
	if len(errs) > 0 {
		ginkgo.Fail(strings.Join(errs, "\n"))
	}
}

// killEscaped kills the children the journals say left their server's
// process group (MCP_FIXTURE_ESCAPED_CHILD), before the driver shuts down:
// no implementation can be asked to find them, and killing them first
// releases the pipes they hold, so a failing implementation's shutdown
// cannot wait on them.
func (h *H) killEscaped() {
	for _, key := range slices.Sorted(maps.Keys(h.journals)) {
		for _, pid := range h.readJournal(key).EscapedPIDs() {
			_ = proctest.Kill(pid, syscall.SIGKILL)
		}
	}
}

// checkProcessesGone waits until every process any journal recorded (the
// servers and the children they spawned) is gone, and kills survivors.
func (h *H) checkProcessesGone() []string {
	var errs []string
	for _, key := range slices.Sorted(maps.Keys(h.journals)) {
		j := h.readJournal(key)
		for _, pid := range j.AllPIDs() {
			// The driver has shut down: with the virtual clock the wait
			// also ends once nothing changes any more.
			ctx, cancel := h.boundCtxFrom(context.Background(), 5*time.Second)
			err := proctest.WaitGone(ctx, pid)
			cancel()
			if err != nil {
				errs = append(errs, fmt.Sprintf("process: server %s: pid %d is still running after the driver shut down", key, pid))
				_ = proctest.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return errs
}

// attachDiagnostics adds what a reader of a failure needs to the report.
func (h *H) attachDiagnostics() {
	c := h.c
	if c == nil {
		c = h.lastClient
	}
	if c != nil {
		var b strings.Builder
		for _, e := range c.Events() {
			b.WriteString(e.String() + "\n")
		}
		ginkgo.AddReportEntry("events", ginkgo.ReportEntryVisibilityFailureOrVerbose, b.String())
		tr := c.Transcript()
		if len(tr) > 300 {
			tr = tr[len(tr)-300:]
		}
		b.Reset()
		for _, l := range tr {
			line := string(l.Line)
			if len(line) > 2000 {
				line = line[:2000] + "..."
			}
			fmt.Fprintf(&b, "%s %s\n", l.Dir, line)
		}
		ginkgo.AddReportEntry("transcript (tail)", ginkgo.ReportEntryVisibilityFailureOrVerbose, b.String())
	}
	for _, key := range slices.Sorted(maps.Keys(h.journals)) {
		var b strings.Builder
		for _, e := range h.readJournal(key) {
			fields, _ := json.Marshal(e.Fields)
			fmt.Fprintf(&b, "%d %s pid=%d launch=%d %s\n", e.Seq, e.Kind, e.PID, e.Launch, fields)
		}
		ginkgo.AddReportEntry("journal "+key, ginkgo.ReportEntryVisibilityFailureOrVerbose, b.String())
	}
	if h.stderr != nil && h.stderr.Len() > 0 {
		ginkgo.AddReportEntry("driver stderr", ginkgo.ReportEntryVisibilityFailureOrVerbose, h.stderr.String())
	}
}
