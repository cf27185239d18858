package idle

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"go.uber.org/goleak"
)

// timersDriverEnv makes the test binary a driver on the real clock that
// lists the pending timers named by its value (TestRealTimers).
const timersDriverEnv = "IDLE_TEST_TIMERS_DRIVER"

func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(timersDriverEnv); ok {
		os.Exit(serveTimersDriver(v))
	}
	goleak.VerifyTestMain(m)
}

// serveTimersDriver serves a driver with no servers that announces
// pending-timers and lists one timer, set at start to fire after the
// duration in spec ("" for none); once due, it is no longer listed, as a
// timer that fired.
func serveTimersDriver(spec string) int {
	var after time.Duration
	if spec != "" {
		d, err := time.ParseDuration(spec)
		if err != nil {
			return 2
		}
		after = d
	}
	var due time.Time
	h := driver.Handlers{
		Implementation: driver.Implementation{Name: "timers", Version: "1"},
		Capabilities:   []driver.Capability{driver.CapPendingTimers},
		Eras:           []driver.Era{driver.EraLegacy},
		Start: func(context.Context, *driver.StartParams) error {
			due = time.Now().Add(after)
			return nil
		},
		SessionOpen: func(context.Context, *driver.SessionParams) (driver.StartReport, error) {
			return driver.StartReport{}, nil
		},
		SessionClose: func(context.Context, *driver.SessionParams) error { return nil },
		ToolsList:    func(context.Context, *driver.SessionParams) ([]driver.Tool, error) { return nil, nil },
		ToolCall: func(context.Context, *driver.ToolCallParams) (driver.CallFunc, error) {
			return nil, driver.Errorf(driver.CodeFailed, "no tools")
		},
		TimersPending: func(context.Context) ([]time.Duration, error) {
			if left := time.Until(due); after > 0 && left > 0 {
				return []time.Duration{left}, nil
			}
			return nil, nil
		},
	}
	if err := driver.NewConn(os.Stdout, nil).Serve(context.Background(), os.Stdin, h); err != nil {
		return 1
	}
	return 0
}
