package conformance

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/proctest"
)

// TestDriversStartedAhead checks the spares of an external driver: prepare
// keeps Target.Ahead processes started, start hands out the oldest one
// (which then answers hello as a fresh start would), outside lists the
// spares still waiting, and close leaves no process behind.
func TestDriversStartedAhead(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	d := drivers{target: Target{Command: []string{exe}, Env: append(os.Environ(), roleEnv+"=driver"), Ahead: 2}}
	defer d.close()

	d.prepare(ctx)
	first := d.outside()
	if len(first) != 2 {
		t.Fatalf("after prepare, spares %v, want 2", first)
	}
	for _, pid := range first {
		if !proctest.Alive(pid) {
			t.Fatalf("spare %d is not running", pid)
		}
	}
	c, stderr, err := d.start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pid() != first[0] {
		t.Errorf("start handed out pid %d, want the oldest spare %d", c.Pid(), first[0])
	}
	if stderr == nil {
		t.Error("no stderr buffer for the started driver")
	}
	if got := d.outside(); !slices.Equal(got, first[1:]) {
		t.Errorf("after start, spares %v, want %v", got, first[1:])
	}
	if _, err := c.Hello(ctx); err != nil {
		t.Fatalf("hello to a driver started ahead: %v", err)
	}
	d.prepare(ctx)
	all := d.outside()
	if len(all) != 2 || all[0] != first[1] {
		t.Errorf("after the second prepare, spares %v, want %d and a new one", all, first[1])
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("closing the started driver: %v", err)
	}
	d.close()
	if got := d.outside(); len(got) != 0 {
		t.Errorf("after close, spares %v", got)
	}
	// close returns once every spare has exited and been collected.
	for _, pid := range append(first, all...) {
		if proctest.Alive(pid) {
			t.Errorf("pid %d still running after close", pid)
		}
	}
}

// TestDriversNotAhead checks that nothing is started ahead for a target
// without Ahead, or one that runs in this process.
func TestDriversNotAhead(t *testing.T) {
	for _, target := range []Target{{Command: []string{"true"}}, {Ahead: 2}} {
		d := drivers{target: target}
		d.prepare(t.Context())
		if len(d.next) != 0 {
			t.Errorf("target %+v: %d spares started", target, len(d.next))
			d.close()
		}
	}
}
