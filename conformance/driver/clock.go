package driver

// The clock methods clock.advance and clock.pending (capability
// virtual-clock) and timers.pending (capability pending-timers); Conn
// answers clock.now from driver.now, answers the first two "unsupported"
// after a start with the real clock and the third after one with the
// virtual clock.

import (
	"context"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
)

func (d *driver) fakeClock() (*clocktest.Fake, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt == nil {
		return nil, rerr(CodeNotStarted, "start has not succeeded")
	}
	if d.fake == nil {
		return nil, rerr(CodeUnsupported, "the clock is %q", ClockReal)
	}
	return d.fake, nil
}

func (d *driver) clockAdvance(ctx context.Context, by time.Duration) error {
	fake, err := d.fakeClock()
	if err != nil {
		return err
	}
	fake.Advance(by)
	return nil
}

func (d *driver) clockPending(ctx context.Context) ([]time.Duration, error) {
	fake, err := d.fakeClock()
	if err != nil {
		return nil, err
	}
	return fake.Pending(), nil
}

// timersPending lists the runtime's pending timers on the real clock.
func (d *driver) timersPending(ctx context.Context) ([]time.Duration, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt == nil {
		return nil, rerr(CodeNotStarted, "start has not succeeded")
	}
	if d.tracked == nil {
		return nil, rerr(CodeUnsupported, "the clock is %q", ClockVirtual)
	}
	return d.tracked.Pending(), nil
}
