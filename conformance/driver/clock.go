package driver

// The clock methods: clock.advance, clock.now and clock.pending.

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/runtime/clock"
)

func (d *driver) clockState() (clock.Clock, *clocktest.Fake, time.Time, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt == nil {
		return nil, nil, time.Time{}, rerr(CodeNotStarted, "start has not succeeded")
	}
	return d.clk, d.fake, d.origin, nil
}

func (d *driver) clockAdvance(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p AdvanceParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	if p.Ms < 0 {
		return nil, nil, rerr(CodeBadRequest, "ms must be >= 0")
	}
	clk, fake, origin, err := d.clockState()
	if err != nil {
		return nil, nil, err
	}
	if fake == nil {
		return nil, nil, rerr(CodeUnsupported, "clock.advance needs start with clock %q", ClockVirtual)
	}
	fake.Advance(ms(p.Ms))
	return ClockResult{NowMs: clk.Since(origin).Milliseconds()}, nil, nil
}

func (d *driver) clockNow(ctx context.Context, params json.RawMessage) (any, func(), error) {
	if err := decodeParams(params, &Empty{}); err != nil {
		return nil, nil, err
	}
	clk, _, origin, err := d.clockState()
	if err != nil {
		return nil, nil, err
	}
	return ClockResult{NowMs: clk.Since(origin).Milliseconds()}, nil, nil
}

func (d *driver) clockPending(ctx context.Context, params json.RawMessage) (any, func(), error) {
	if err := decodeParams(params, &Empty{}); err != nil {
		return nil, nil, err
	}
	_, fake, _, err := d.clockState()
	if err != nil {
		return nil, nil, err
	}
	if fake == nil {
		return nil, nil, rerr(CodeUnsupported, "clock.pending needs start with clock %q", ClockVirtual)
	}
	pending := fake.Pending()
	out := PendingResult{TimersMs: make([]int64, len(pending))}
	for i, p := range pending {
		// Rounded up, so advancing by the value fires the timer.
		out.TimersMs[i] = int64(math.Ceil(float64(max(p, 0)) / float64(time.Millisecond)))
	}
	return out, nil, nil
}
