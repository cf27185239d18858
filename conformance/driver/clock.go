package driver

// The clock methods clock.advance and clock.pending (capability
// virtual-clock); Conn answers clock.now from driver.now, and answers both
// of these "unsupported" after a start with the real clock.

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
