package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/scenarios/repro"
)

// partialTrace is a stdio server that exited while idle and whose first
// restart attempt failed: the fixture cannot fail a relaunch, so repro
// cannot reproduce it.
func partialTrace() *repro.Trace {
	ev := func(seq uint64, kind event.Kind, attrs ...any) event.Event {
		e := event.Event{Seq: seq, Server: "fx", Kind: kind, At: time.Duration(seq) * time.Millisecond, Attrs: map[string]any{}}
		for i := 0; i+1 < len(attrs); i += 2 {
			e.Attrs[attrs[i].(string)] = attrs[i+1]
		}
		return e
	}
	return &repro.Trace{
		Servers: map[string]repro.Server{"fx": {Transport: "stdio", Proxied: true}},
		Events: []event.Event{
			ev(1, event.ServerConnected),
			ev(2, event.TransportClosed, "error", "server process exited (exit status 3)"),
			ev(3, event.RestartScheduled, "reason", "transport-exit", "attempt", int64(1), "delay_ms", int64(0)),
			ev(4, event.RestartAttempt), ev(5, event.RestartFailed, "error", "exit status 1"),
			ev(6, event.RestartScheduled, "reason", "transport-exit", "attempt", int64(2), "delay_ms", int64(1000)),
			ev(7, event.RestartAttempt), ev(8, event.RestartSucceeded),
		},
	}
}

// Issue 31: repro exits non-zero and writes nothing when the scenario
// would not reproduce the trace's failure; -partial writes it, with what
// it leaves out in its header, and what repro prints matches what it
// wrote.
func TestReproPartial(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "p.trace.json")
	if err := repro.Write(trace, partialTrace()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "deeper", "still", "950-partial.txtar")
	code, _, errs := harness(t, "repro", "-o", out, trace)
	if code != 1 || !strings.Contains(errs, "not reproduced: server fx: restart for transport-exit, 1 failed attempts, recovered: 1 failed restart attempts are recorded") ||
		!strings.Contains(errs, "0 calls replayed, 0 of 1 failures reproduced; nothing written") {
		t.Fatalf("repro of a partial trace: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("repro wrote %s although it exited 1: %v", out, err)
	}
	code, _, errs = harness(t, "repro", "-partial", "-o", out, trace)
	if code != 0 || !strings.Contains(errs, "wrote "+out+": 0 calls replayed, 0 of 1 failures reproduced; partial") {
		t.Fatalf("repro -partial: exit %d\n%s", code, errs)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Failures in the trace: 1, reproduced: 0.", "# Not reproduced: server fx: restart for transport-exit, 1 failed attempts, recovered: 1 failed restart attempts are recorded"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the scenario lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), "count-journal fx.journal") {
		t.Errorf("the partial scenario asserts a launch count that differs from the trace:\n%s", data)
	}
}
