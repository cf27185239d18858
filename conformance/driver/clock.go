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

// clocks returns the runtime's fake clock (virtual) or tracked one (real),
// one of them nil; not_started before start.
func (d *driver) clocks() (*clocktest.Fake, *clocktest.Tracked, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt == nil {
		return nil, nil, rerr(CodeNotStarted, "start has not succeeded")
	}
	return d.fake, d.tracked, nil
}

func (d *driver) fakeClock() (*clocktest.Fake, error) {
	fake, _, err := d.clocks()
	if err == nil && fake == nil {
		err = rerr(CodeUnsupported, "the clock is %q", ClockReal)
	}
	return fake, err
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
	_, tracked, err := d.clocks()
	if err != nil {
		return nil, err
	}
	if tracked == nil {
		return nil, rerr(CodeUnsupported, "the clock is %q", ClockVirtual)
	}
	return tracked.Pending(), nil
}
