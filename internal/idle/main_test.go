package idle

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/runtime/event"
	"go.uber.org/goleak"
)

// timersDriverEnv makes the test binary a driver on the real clock that
// lists the pending timers named by its value (TestRealTimers).
const timersDriverEnv = "IDLE_TEST_TIMERS_DRIVER"

// eventsDriverEnv makes the test binary a driver on the real clock that
// lists no timer and, at session.open, emits the events its value holds
// (a JSON list) and then holds the request until shutdown (TestBusyEvents).
const eventsDriverEnv = "IDLE_TEST_EVENTS_DRIVER"

func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(timersDriverEnv); ok {
		os.Exit(serveTimersDriver(v))
	}
	if v, ok := os.LookupEnv(eventsDriverEnv); ok {
		os.Exit(serveEventsDriver(v))
	}
	goleak.VerifyTestMain(m)
}

// serveEventsDriver serves the driver of eventsDriverEnv.
func serveEventsDriver(spec string) int {
	var evs []event.Event
	if err := json.Unmarshal([]byte(spec), &evs); err != nil {
		return 2
	}
	conn := driver.NewConn(os.Stdout, nil)
	h := driver.Handlers{
		Implementation: driver.Implementation{Name: "events", Version: "1"},
		Capabilities:   []driver.Capability{driver.CapPendingTimers},
		Eras:           []driver.Era{driver.EraLegacy},
		Start:          func(context.Context, *driver.StartParams) error { return nil },
		SessionOpen: func(ctx context.Context, _ *driver.SessionParams) (driver.StartReport, error) {
			for _, e := range evs {
				conn.Emit(e.Kind, e.Server, e.Session, e.Attrs)
			}
			<-ctx.Done()
			return driver.StartReport{}, ctx.Err()
		},
		SessionClose: func(context.Context, *driver.SessionParams) error { return nil },
		ToolsList:    func(context.Context, *driver.SessionParams) ([]driver.Tool, error) { return nil, nil },
		ToolCall: func(context.Context, *driver.ToolCallParams) (driver.CallFunc, error) {
			return nil, driver.Errorf(driver.CodeFailed, "no tools")
		},
		TimersPending: func(context.Context) ([]time.Duration, error) { return nil, nil },
	}
	if err := conn.Serve(context.Background(), os.Stdin, h); err != nil {
		return 1
	}
	return 0
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
