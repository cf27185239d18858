package driver

// The reference driver's Handlers: what Conn calls for each method. Conn
// applies the protocol's rules (error precedence, params, capabilities,
// the bookkeeping of calls and acquires, ordering); the handlers below only
// put runtime/host behind them.

import (
	"slices"
	"time"
)

// handlers returns the reference driver's Handlers.
func (d *driver) handlers() Handlers {
	return Handlers{
		Implementation:   d.opts.Implementation,
		Capabilities:     slices.Clone(d.opts.Capabilities),
		Profiles:         slices.Clone(d.opts.Profiles),
		Eras:             slices.Clone(d.opts.Eras),
		Now:              d.now,
		Start:            d.start,
		SessionOpen:      d.sessionOpen,
		SessionClose:     d.sessionClose,
		ToolsList:        d.toolsList,
		ToolCall:         d.toolCall,
		Acquire:          d.acquire,
		Status:           d.status,
		Reload:           d.reload,
		ServerDisconnect: d.serverDisconnect,
		ClockAdvance:     d.clockAdvance,
		ClockPending:     d.clockPending,
		TimersPending:    d.timersPending,
		Shutdown:         d.shutdown,
	}
}

// now reads the runtime's clock as an offset from start; 0 before start.
func (d *driver) now() time.Duration {
	d.mu.Lock()
	clk, origin := d.clk, d.origin
	d.mu.Unlock()
	if clk == nil {
		return 0
	}
	return clk.Since(origin)
}
