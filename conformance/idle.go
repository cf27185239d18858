package conformance

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/idle"
)

// This file bounds the suite's waits: by -await-timeout in real time and,
// with the virtual clock, by the implementation going idle (internal/idle):
// a wait for what can no longer come fails at once, so a failing
// requirement costs about what a passing one does.

// awaitCtx bounds one wait: by Config.AwaitTimeout in real time, by the
// implementation going idle (virtual clock) and by the spec's
// contradictions (Unless).
func (h *H) awaitCtx() (context.Context, context.CancelFunc) {
	return h.boundCtx(h.s.cfg.AwaitTimeout)
}

// boundCtx is awaitCtx with a real-time bound of d.
func (h *H) boundCtx(d time.Duration) (context.Context, context.CancelFunc) {
	return h.boundCtxFrom(h.ctx, d)
}

// boundCtxFrom is boundCtx on another parent context.
func (h *H) boundCtxFrom(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return idle.Bound(parent, d, h.idleSource())
}

// idleSource is what the idle detector reads: copies of the spec's state,
// so it runs beside the spec without sharing it. Idleness is decided with
// the virtual clock, on the real clock when the driver lists its
// implementation's pending timers (capability pending-timers), and with
// either clock once the driver has shut down (then nothing of the
// implementation is left to act).
func (h *H) idleSource() idle.Source {
	realTimers := !h.Virtual() && h.c != nil && h.c.HelloResult().Has(driver.CapPendingTimers)
	return idle.Source{
		DecideIdle:     h.Virtual() || h.c == nil || realTimers,
		RealTimers:     realTimers,
		Client:         h.c,
		Journals:       maps.Clone(h.journals),
		Knobs:          maps.Clone(h.knobs),
		HoldBound:      h.s.cfg.AwaitTimeout,
		Contradictions: slices.Clone(h.contradictions),
		Pace:           &h.s.idle,
		Outside:        h.s.drivers.outside(),
	}
}

// Unless runs body with a contradiction in force: every wait in body ends
// at once, failing the spec, as soon as contradicted returns a reason. It
// turns "what the requirement forbids has already happened" into a verdict
// without waiting for the await bound, with either clock. contradicted runs
// beside the spec: it may only read files and the driver's client.
func (h *H) Unless(contradicted func() string, body func()) {
	h.contradictions = append(h.contradictions, contradicted)
	defer func() { h.contradictions = h.contradictions[:len(h.contradictions)-1] }()
	body()
}
