package host

import (
	"slices"
	"testing"

	"github.com/mcplife/mcplife/runtime/backoff"
	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
)

// TestEventValuesMirrorConstants checks that the enumerated attribute values
// documented in runtime/event (and rendered into docs/DRIVER.md) are the
// constants the runtime really emits.
func TestEventValuesMirrorConstants(t *testing.T) {
	for _, tc := range []struct {
		name      string
		doc, code []string
	}{
		{"transport", event.TransportValues(), []string{string(config.Stdio), string(config.HTTP), string(config.SSE)}},
		{"policy", event.PolicyValues(), []string{backoff.Relentless, backoff.Once, backoff.Bounded, backoff.Never}},
		{"step", event.StopStepValues(), []string{proc.StepStdinClosed, proc.StepTerm, proc.StepKill, "session-close", "sockets-closed"}},
		{"code", event.CodeValues(), []string{"", CodeRestartFailed, CodeRestartInProgress, CodeUnavailable, CodeConnectionLost, CodeToolTimeout, CodeBlocked, CodeFailed, CodeAuthRequired}},
		{"signals", event.SignalValues(), bridge.SignalNames()},
	} {
		if !slices.Equal(tc.doc, tc.code) {
			t.Errorf("%s: runtime/event documents %q, the runtime uses %q", tc.name, tc.doc, tc.code)
		}
	}
	for _, p := range event.PolicyValues() {
		if _, err := backoff.ByName(p, nil); err != nil {
			t.Errorf("policy %q: %v", p, err)
		}
	}
}
