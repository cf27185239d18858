package host

import "sync/atomic"

// connectGauge counts the connect attempts holding a slot of the connect
// concurrency cap, and the most that ever held one at once.
type connectGauge struct {
	running atomic.Int64
	peak    atomic.Int64
}

func (g *connectGauge) enter() {
	n := g.running.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *connectGauge) leave() { g.running.Add(-1) }

// ConnectStats says how many connect attempts run now and the most that ran
// at once since the runtime started or ResetConnectPeak was called. Peak
// never exceeds Options.ConnectConcurrency: a restart storm queues behind
// the cap instead of launching every server at once.
type ConnectStats struct {
	Running int
	Peak    int
}

// ConnectStats returns the runtime's connect counters.
func (rt *Runtime) ConnectStats() ConnectStats {
	return ConnectStats{Running: int(rt.connects.running.Load()), Peak: int(rt.connects.peak.Load())}
}

// ResetConnectPeak sets the peak of ConnectStats to the attempts running
// now.
func (rt *Runtime) ResetConnectPeak() {
	rt.connects.peak.Store(rt.connects.running.Load())
}
