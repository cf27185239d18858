package scenarios_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"go.uber.org/goleak"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/conformance/driver/drivertest"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/internal/proctest"
)

// TestMain makes the test binary double as the commands scenarios run:
// mcp-fixture (the fixture MCP server the implementation spawns) and
// mcplife-driver (the reference driver as a separate process, like
// `harness driver`). The tests themselves run under the same checks as
// proctest.Main: no goroutine leaks and no process left behind.
func TestMain(m *testing.M) {
	testscript.Main(checkedM{m}, map[string]func(){
		"mcp-fixture": func() {
			quietRaceExit()
			os.Exit(fixture.Main())
		},
		"mcplife-driver": func() {
			quietRaceExit()
			os.Exit(serveDriver())
		},
		"fake-driver-v0": func() { os.Exit(serveCannedOtherVersion()) },
	})
}

// checkedM runs the tests, then fails the package when a goroutine leaked
// or a process descending from the test binary is still alive.
// testscript.Main calls os.Exit itself, so proctest.Main cannot wrap it.
type checkedM struct{ m *testing.M }

const prSetChildSubreaper = 36

func (c checkedM) Run() int {
	// Orphans of our children become our children, so they can be seen.
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	code := c.m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
		if left := proctest.Descendants(os.Getpid()); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "proctest: processes left behind by the tests: %s\n", strings.Join(left, "; "))
			code = 1
		}
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			break
		}
	}
	return code
}

// quietRaceExit re-executes a race-enabled binary (same pid) with
// GORACE=atexit_sleep_ms=0: the race runtime otherwise sleeps a second at
// every exit, and a fixture's exit is what the runtime under test waits for.
func quietRaceExit() {
	if !raceEnabled || strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	g := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	env := append(os.Environ(), "GORACE="+g)
	_ = syscall.Exec(exe, os.Args, env)
}

// serveDriver is `harness driver`: the reference driver on stdin/stdout.
func serveDriver() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := driver.Serve(ctx, os.Stdin, os.Stdout, driver.ServeOptions{ShutdownTimeout: 2 * time.Second})
	if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		fmt.Fprintf(os.Stderr, "mcplife-driver: %v\n", err)
		return 1
	}
	return 0
}

// serveCannedOtherVersion is a driver of protocol version mcplife-driver/0.
func serveCannedOtherVersion() int {
	if err := drivertest.ServeCanned(os.Stdin, os.Stdout, drivertest.OtherVersion()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
