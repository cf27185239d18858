package conformance

import (
	"fmt"
	"slices"
	"time"

	"github.com/mcplife/mcplife/internal/idle"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/onsi/ginkgo/v2"
)

// This file holds the implementation's clock: advancing virtual time,
// pending timers, and checking durations.

// D scales a duration in milliseconds the suite configures: unchanged with
// the virtual clock, multiplied by the time scale in real time.
func (h *H) D(ms int64) int64 {
	if h.Virtual() {
		return ms
	}
	return max(1, int64(float64(ms)*h.s.cfg.TimeScale))
}

// Pass lets ms of the implementation's time pass: the virtual clock is
// advanced, or the harness sleeps in real time.
func (h *H) Pass(ms int64) {
	ginkgo.GinkgoHelper()
	if h.Virtual() {
		h.Advance(ms)
		return
	}
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
	case <-h.ctx.Done():
		h.fail("interrupted")
	}
}

// Advance advances the virtual clock by ms.
func (h *H) Advance(ms int64) {
	ginkgo.GinkgoHelper()
	if !h.Virtual() {
		h.fail("Advance needs the virtual clock")
	}
	ctx, cancel := h.awaitCtx()
	defer cancel()
	_, err := h.Client().Advance(ctx, time.Duration(ms)*time.Millisecond)
	h.must(err, "clock.advance")
}

// Pending returns the pending timers of the virtual clock, soonest first.
func (h *H) Pending() []time.Duration {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	p, err := h.Client().Pending(ctx)
	h.must(err, "clock.pending")
	return p
}

// AdvanceToNext advances the virtual clock to its next pending timer.
func (h *H) AdvanceToNext() {
	ginkgo.GinkgoHelper()
	var p []time.Duration
	h.Eventually("a pending timer", func() bool { p = h.Pending(); return len(p) > 0 })
	h.Advance(max(p[0].Milliseconds(), 1))
}

// Now returns the implementation's clock offset.
func (h *H) Now() time.Duration {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	d, err := h.Client().Now(ctx)
	h.must(err, "clock.now")
	return d
}

// AwaitStopped waits until process pid of server key is gone while the
// implementation stops it. Each step of a stop announces its wait
// (process.signaled, the armed-timer rule). With the virtual clock the
// harness then decides from the fixture's own documented behaviour, never
// from real time passing, whether the step ends the process (and waits for
// that) or is ignored (and advances to the next pending timer, the step's
// grace): SIGKILL always ends it; SIGTERM unless MCP_FIXTURE_IGNORE_SIGTERM;
// closing stdin unless MCP_FIXTURE_IGNORE_STDIN_EOF or the process is
// wedged in a blocking hang (MCP_FIXTURE_BLOCK_EVENT_LOOP).
func (h *H) AwaitStopped(key string, pid int) {
	ginkgo.GinkgoHelper()
	var after uint64
	for h.Alive(pid) {
		var step event.Event
		h.Eventually(fmt.Sprintf("pid %d to be stopped, or the next stop step", pid), func() bool {
			if !h.Alive(pid) {
				return true
			}
			for _, e := range h.Find(Ev(event.ProcessSignaled, key)) {
				if e.Seq > after {
					step = e
					return true
				}
			}
			return false
		})
		if step.Kind == "" || !h.Alive(pid) {
			return
		}
		after = step.Seq
		name, _ := step.Get("step")
		if !h.Virtual() || !h.stepIgnored(key, name) {
			h.Verify(Process, h.AwaitGone(pid), fmt.Sprintf("the stop step %s ends pid %d", name, pid), "pid %d %s", pid, pick(h.Alive(pid), "still runs", "is gone"))
			return
		}
		h.AdvanceToNext()
	}
}

// stepIgnored reports whether the fixture of server key carries on after
// the stop step named step (idle.StepIgnored).
func (h *H) stepIgnored(key, step string) bool {
	return idle.StepIgnored(h.knobs[key], h.readJournal(key), step)
}

// The tolerance bands of real-time timing checks.
const (
	earlyTolerance = 50 * time.Millisecond
	lateTolerance  = 1500 * time.Millisecond
	lateFactor     = 0.5
)

// VerifyElapsed checks a duration measured on the implementation's clock:
// exactly with the virtual clock, within the tolerance band in real time.
func (h *H) VerifyElapsed(src Evidence, claim string, got, want time.Duration) {
	ginkgo.GinkgoHelper()
	if h.Virtual() {
		h.Verify(src, got == want, claim, "%v (virtual clock: exactly %v)", got, want)
		return
	}
	lo := want - earlyTolerance
	hi := want + lateTolerance + time.Duration(float64(want)*lateFactor)
	h.Verify(src, got >= lo && got <= hi, claim, "%v (real time: want %v within [%v, %v])", got, want, lo, hi)
}

// AwaitTimerDue waits until the implementation's virtual clock has a timer
// pending that is due in exactly ms. It is the point an implementation
// reaches while a wait it announced is armed and has not fired, so a
// negative check ("nothing happened yet") made after it is bounded by the
// implementation's own state, not by real time passing. In real time it
// returns at once: there, the check after it is a snapshot.
func (h *H) AwaitTimerDue(ms int64, what string) {
	ginkgo.GinkgoHelper()
	if !h.Virtual() {
		return
	}
	var p []time.Duration
	want := time.Duration(ms) * time.Millisecond
	h.EventuallySeen(fmt.Sprintf("a pending virtual-clock timer due in exactly %d ms: %s", ms, what), func() bool {
		p = h.Pending()
		return slices.Contains(p, want)
	}, func() string { return fmt.Sprintf("pending timers %v", p) })
}
