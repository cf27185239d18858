// Package backoff defines the restart policies of MCP servers: how long to
// wait before each restart attempt and when to give up.
package backoff

import (
	"fmt"
	"strings"
	"time"
)

// Policy is a named restart schedule. The delay before attempt k (0-based,
// counted since the server was last stable) is Delays[k]; past the end of the
// list a Repeat policy keeps using the last delay forever and any other
// policy gives up.
type Policy struct {
	Name   string
	Delays []time.Duration
	Repeat bool
}

// The named policies.
const (
	Relentless = "relentless"
	Once       = "once"
	Bounded    = "bounded"
	Never      = "never"
)

func seconds(s ...float64) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v * float64(time.Second))
	}
	return out
}

// RelentlessPolicy restarts forever at 0, 1, 2, 5, 10, 30 and 60 s, then
// every 60 s: the default for shared servers (seed 001).
func RelentlessPolicy() Policy {
	return Policy{Name: Relentless, Delays: seconds(0, 1, 2, 5, 10, 30, 60), Repeat: true}
}

// OncePolicy retries a single time, at once: the default for private servers
// (seed 001's legacy behaviour).
func OncePolicy() Policy { return Policy{Name: Once, Delays: seconds(0)} }

// BoundedPolicy waits 2, 5 and 15 s between attempts and then gives up
// (seed 004).
func BoundedPolicy() Policy { return Policy{Name: Bounded, Delays: seconds(2, 5, 15)} }

// NeverPolicy never restarts; recovery is a manual reload (seed 000).
func NeverPolicy() Policy { return Policy{Name: Never} }

// ByName returns the named policy, with delays replacing its default list
// when non-empty.
func ByName(name string, delays []time.Duration) (Policy, error) {
	var p Policy
	switch name {
	case Relentless:
		p = RelentlessPolicy()
	case Once:
		p = OncePolicy()
	case Bounded:
		p = BoundedPolicy()
	case Never:
		p = NeverPolicy()
	default:
		return Policy{}, fmt.Errorf("unknown restart policy %q (want %s)", name, strings.Join([]string{Relentless, Once, Bounded, Never}, ", "))
	}
	if len(delays) > 0 && name != Never {
		p.Delays = append([]time.Duration(nil), delays...)
	}
	return p, nil
}

// Delay returns the wait before attempt k and false when the policy gives up
// before that attempt.
func (p Policy) Delay(k int) (time.Duration, bool) {
	if k < 0 || len(p.Delays) == 0 {
		return 0, false
	}
	if k < len(p.Delays) {
		return p.Delays[k], true
	}
	if p.Repeat {
		return p.Delays[len(p.Delays)-1], true
	}
	return 0, false
}
