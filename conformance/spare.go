package conformance

import (
	"context"

	"github.com/mcplife/mcplife/conformance/driver"
)

// This file starts drivers of another process ahead of the specs that
// will use them.
//
// Starting a driver process is most of what a short spec costs through a
// driver whose language runtime loads a large library: LangChain's imports
// take about half a second of CPU, and every spec starts its own driver.
// The suite keeps Target.Ahead processes of the target started ahead,
// spares: the next spec's Start takes the oldest, and another spare is
// started once that driver has answered start, so processes load their
// libraries while the specs before them run (two at a time use both cores
// of a small machine). A spare has received nothing, not even hello, so
// the spec that takes it talks to the same driver a start at that moment
// gives; what it printed on stderr while it waited is in its spec's report.

// spare is a driver process started ahead, with its stderr.
type spare struct {
	c      *driver.Client
	stderr *syncBuffer
	err    error // starting it failed
}

// drivers starts the target's drivers. Specs run one at a time, so it is
// used from one goroutine at a time.
type drivers struct {
	target Target
	next   []*spare // oldest first
}

// start returns a started driver and the buffer receiving its stderr: the
// oldest spare when there is one, else a driver started now.
func (d *drivers) start(ctx context.Context) (*driver.Client, *syncBuffer, error) {
	var sp *spare
	if len(d.next) > 0 {
		sp, d.next = d.next[0], d.next[1:]
	} else {
		sp = d.launch(ctx)
	}
	return sp.c, sp.stderr, sp.err
}

// prepare starts spares until there are Target.Ahead, unless the target
// runs in this process (there is nothing to load ahead).
func (d *drivers) prepare(ctx context.Context) {
	for d.target.External() && len(d.next) < d.target.Ahead {
		d.next = append(d.next, d.launch(ctx))
	}
}

// launch starts one driver. It outlives the spec that asked for it, so it
// does not run on that spec's context.
func (d *drivers) launch(ctx context.Context) *spare {
	stderr := &syncBuffer{}
	c, err := d.target.start(context.WithoutCancel(ctx), stderr)
	return &spare{c: c, stderr: stderr, err: err}
}

// outside lists the spares' processes: they are not the implementation of
// the spec under way (idle.Source.Outside).
func (d *drivers) outside() []int {
	var pids []int
	for _, sp := range d.next {
		if sp.c != nil && sp.c.Pid() != 0 {
			pids = append(pids, sp.c.Pid())
		}
	}
	return pids
}

// close kills the spares and waits for them to exit.
func (d *drivers) close() {
	for _, sp := range d.next {
		if sp.c != nil {
			sp.c.Kill()
		}
	}
	d.next = nil
}
