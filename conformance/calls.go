package conformance

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/onsi/ginkgo/v2"
)

// This file holds sessions, tools, calls, acquires and status.

// Open opens a session and waits for its start report.
func (h *H) Open(session string) *driver.StartReport {
	ginkgo.GinkgoHelper()
	return h.OpenAsync(session).Report()
}

// PendingOpen is a session.open whose response may not have come yet.
type PendingOpen struct {
	h    *H
	done chan struct{}
	rep  driver.SessionOpenResult
	err  error
}

// OpenAsync sends session.open without waiting.
func (h *H) OpenAsync(session string) *PendingOpen {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	p, err := h.Client().Send(ctx, driver.MethodSessionOpen, driver.SessionParams{Session: session})
	h.must(err, "session.open")
	o := &PendingOpen{h: h, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		o.err = p.Wait(h.ctx, &o.rep)
	}()
	return o
}

// Report waits for the start report.
func (o *PendingOpen) Report() *driver.StartReport {
	ginkgo.GinkgoHelper()
	ctx, cancel := o.h.awaitCtx()
	defer cancel()
	start := time.Now()
	select {
	case <-o.done:
	case <-ctx.Done():
		o.h.fail("%s\n  awaited: the response to session.open", o.h.waitEnded(ctx, start))
	}
	o.h.must(o.err, "session.open")
	return &o.rep.Report
}

// Answered reports whether the response has arrived.
func (o *PendingOpen) Answered() bool {
	select {
	case <-o.done:
		return true
	default:
		return false
	}
}

// CloseSession closes a session.
func (h *H) CloseSession(session string) {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	h.must(h.Client().CloseSession(ctx, session), "session.close")
}

// closeInBackground sends session.close without waiting for it, for a spec
// that acts while the implementation stops the session's servers; the
// channel gets its error.
func (h *H) closeInBackground(session string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := h.awaitCtx()
		defer cancel()
		done <- h.c.CloseSession(ctx, session)
	}()
	return done
}

// awaitClosed fails the spec unless the session.close closeInBackground
// sent returns without an error within the await bound (a passing close
// has returned by the time its servers are gone).
func (h *H) awaitClosed(done <-chan error) {
	ginkgo.GinkgoHelper()
	select {
	case err := <-done:
		h.must(err, "session.close")
	case <-time.After(h.s.cfg.AwaitTimeout):
		h.fail("session.close did not return after the process was killed")
	}
}

// Tools lists a session's tools.
func (h *H) Tools(session string) []driver.Tool {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	t, err := h.Client().Tools(ctx, session)
	h.must(err, "tools.list")
	return t
}

// ToolNames returns the exposed names of a session's tools of server ("":
// all).
func (h *H) ToolNames(session, server string) []string {
	ginkgo.GinkgoHelper()
	var out []string
	for _, t := range h.Tools(session) {
		if server == "" || t.Server == server {
			out = append(out, t.Name)
		}
	}
	return out
}

// Call starts a tool call and returns its call id.
func (h *H) Call(session, tool string, args any) string {
	ginkgo.GinkgoHelper()
	return h.CallTimeout(session, tool, args, nil)
}

// CallTimeout starts a tool call with a per-call timeout (nil: none given).
func (h *H) CallTimeout(session, tool string, args any, timeoutMs *int64) string {
	ginkgo.GinkgoHelper()
	h.calls++
	id := "call-" + strconv.Itoa(h.calls)
	var raw json.RawMessage
	if args != nil {
		b, err := json.Marshal(args)
		h.must(err, "encoding arguments")
		raw = b
	}
	ctx, cancel := h.awaitCtx()
	defer cancel()
	h.must(h.Client().CallTool(ctx, driver.ToolCallParams{Session: session, CallID: id, Tool: tool, Arguments: raw, TimeoutMs: timeoutMs}), "tool.call")
	return id
}

// Result waits for the outcome of a call.
func (h *H) Result(id string) driver.CallResult {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	r, err := h.Client().AwaitCall(ctx, id)
	h.must(err, "awaiting call_result "+id)
	return r
}

// ResultWithin waits at most d of real time for the outcome of a call and
// reports whether it came; with the virtual clock the wait also ends when
// the implementation goes idle without it.
func (h *H) ResultWithin(id string, d time.Duration) (driver.CallResult, bool) {
	ctx, cancel := h.boundCtx(d)
	defer cancel()
	r, err := h.Client().AwaitCall(ctx, id)
	return r, err == nil
}

// HasResult reports whether the outcome of a call has arrived.
func (h *H) HasResult(id string) bool {
	_, ok := h.Client().CallResult(id)
	return ok
}

// CallNow calls a tool and waits for the outcome.
func (h *H) CallNow(session, tool string, args any) driver.CallResult {
	ginkgo.GinkgoHelper()
	return h.Result(h.Call(session, tool, args))
}

// Cancel cancels a call.
func (h *H) Cancel(id string) bool {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	running, err := h.Client().Cancel(ctx, id)
	h.must(err, "tool.cancel")
	return running
}

// Acquire starts acquiring a shared server and returns the acquire id.
func (h *H) Acquire(server string) string {
	ginkgo.GinkgoHelper()
	h.acquires++
	id := "acq-" + strconv.Itoa(h.acquires)
	ctx, cancel := h.awaitCtx()
	defer cancel()
	h.must(h.Client().Acquire(ctx, id, server), "acquire")
	return id
}

// AcquireResult waits for the outcome of an acquire.
func (h *H) AcquireResult(id string) driver.AcquireResult {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	r, err := h.Client().AwaitAcquire(ctx, id)
	h.must(err, "awaiting acquire_result "+id)
	return r
}

// AwaitStatus returns the status of server name once want holds: it
// checks the current status, then re-checks after each new event (a state
// change comes with the event that announces it), until the await timeout.
// what describes the awaited state for the failure message.
func (h *H) AwaitStatus(name, what string, want func(driver.ServerStatus) bool) driver.ServerStatus {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	start := time.Now()
	for {
		seq := h.Last()
		st := h.Status(name)
		if want(st) {
			return st
		}
		if _, err := h.Client().Await(ctx, seq, event.Matcher{}); err != nil {
			h.fail("%s: %v\n  awaited: status of %q: %s\n  last status: state=%s error=%q",
				h.waitEnded(ctx, start), err, name, what, st.State, st.Error)
		}
	}
}

// Status returns the status of server name.
func (h *H) Status(name string) driver.ServerStatus {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	list, err := h.Client().Status(ctx)
	h.must(err, "status")
	names := make([]string, len(list))
	for i, s := range list {
		names[i] = s.Name
	}
	if !slices.IsSorted(names) {
		h.fail("status lists its servers out of order (DRIVER.md, status: sorted by name): %q", names)
	}
	for _, s := range list {
		if s.Name == name {
			return s
		}
	}
	h.fail("status lists no server %q", name)
	return driver.ServerStatus{}
}
