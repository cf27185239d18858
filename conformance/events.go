package conformance

import (
	"slices"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/onsi/ginkgo/v2"
)

// This file holds awaiting and finding the events an implementation
// streams.

// Ev returns a matcher: kind, server ("" any) and attribute pairs.
func Ev(kind event.Kind, server string, attrs ...string) event.Matcher {
	m := event.Matcher{Kind: kind, Server: server}
	if len(attrs) > 0 {
		m.Attrs = map[string]string{}
		for i := 0; i+1 < len(attrs); i += 2 {
			m.Attrs[attrs[i]] = attrs[i+1]
		}
	}
	return m
}

// Await waits for the first event matching m.
func (h *H) Await(m event.Matcher) event.Event {
	ginkgo.GinkgoHelper()
	return h.AwaitAfter(0, m)
}

// AwaitAfter waits for the first event after seq matching m.
func (h *H) AwaitAfter(seq uint64, m event.Matcher) event.Event {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	start := time.Now()
	e, err := h.Client().Await(ctx, seq, m)
	if err != nil {
		h.fail("%s: %v\n  awaited: an event matching %s after seq %d", h.waitEnded(ctx, start), err, m, seq)
	}
	return e
}

// Count returns how many events match m.
func (h *H) Count(m event.Matcher) int { return h.Client().Count(m) }

// Last returns the seq of the latest event.
func (h *H) Last() uint64 { return h.Client().Last() }

// Find returns the events matching m.
func (h *H) Find(m event.Matcher) []event.Event {
	var out []event.Event
	for _, e := range h.Client().Events() {
		if m.Match(e) {
			out = append(out, e)
		}
	}
	return out
}

// EventsAfter returns, formatted for a message, the events of server after
// seq whose kind is one of kinds.
func (h *H) EventsAfter(seq uint64, server string, kinds ...event.Kind) []string {
	var out []string
	for _, e := range h.Client().Events() {
		if e.Seq > seq && (server == "" || e.Server == server) && slices.Contains(kinds, e.Kind) {
			out = append(out, e.String())
		}
	}
	return out
}
