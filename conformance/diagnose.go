package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/mcplife/mcplife/internal/idle"
)

// This file holds awaiting with a bound and what a failure message carries:
// a failing requirement must be diagnosable from its message alone, so every
// timeout names what it awaited and for how long, what was seen instead, and
// the last events and journal lines.

// How much of the recent past a failure message quotes.
const (
	diagEvents       = 10
	diagJournalLines = 6
	diagLineBytes    = 300
)

// Eventually polls cond on a short real-time ticker until it holds, and
// fails the spec when the await timeout passes first.
func (h *H) Eventually(what string, cond func() bool) {
	ginkgo.GinkgoHelper()
	h.EventuallySeen(what, cond, nil)
}

// EventuallySeen is Eventually with a description of the current state,
// quoted in the failure message when the wait times out.
func (h *H) EventuallySeen(what string, cond func() bool, seen func() string) {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	tick := time.NewTicker(3 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			if cond() {
				return
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s\n  awaited: %s", h.waitEnded(ctx, start), what)
			if seen != nil {
				fmt.Fprintf(&b, "\n  seen instead: %s", seen())
			}
			h.fail("%s", b.String())
		}
	}
}

// waitEnded says why a wait bounded by awaitCtx ended: the implementation
// went idle, or the await timeout passed.
func (h *H) waitEnded(ctx context.Context, start time.Time) string {
	took := time.Since(start).Round(time.Millisecond)
	if err := context.Cause(ctx); idle.Decided(err) {
		return fmt.Sprintf("await failed after %v of real time: %v", took, err)
	}
	msg := fmt.Sprintf("await timed out after %v of real time (-await-timeout %v)", took, h.s.cfg.AwaitTimeout)
	if h.Virtual() && h.c != nil {
		if busy := h.idleSource().Busy(h.ctx); busy != "" {
			msg += " (still in flight: " + busy + ")"
		}
	}
	return msg
}

// recentContext is the tail of the event stream and of every journal, for
// failure messages.
func (h *H) recentContext() string {
	var b strings.Builder
	c := h.c
	if c == nil {
		c = h.lastClient
	}
	if c != nil {
		evs := c.Events()
		from := max(0, len(evs)-diagEvents)
		fmt.Fprintf(&b, "\n  last %d of %d events:", len(evs)-from, len(evs))
		if len(evs) == 0 {
			b.WriteString(" none")
		}
		for _, e := range evs[from:] {
			b.WriteString("\n    " + clip(e.String()))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(h.journals)) {
		fmt.Fprintf(&b, "\n  journal %s: %s", key, journalTail(h.readJournal(key), diagJournalLines))
	}
	return b.String()
}

// journalTail formats the last n entries of a journal.
func journalTail(j JournalEntries, n int) string {
	if len(j) == 0 {
		return "no entries"
	}
	from := max(0, len(j)-n)
	var b strings.Builder
	fmt.Fprintf(&b, "last %d of %d entries:", len(j)-from, len(j))
	for _, e := range j[from:] {
		fields, _ := json.Marshal(e.Fields)
		b.WriteString("\n    " + clip(fmt.Sprintf("#%d %s pid=%d launch=%d %s", e.Seq, e.Kind, e.PID, e.Launch, fields)))
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > diagLineBytes {
		return s[:diagLineBytes] + "..."
	}
	return s
}
