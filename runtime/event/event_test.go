package event

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEmitStampsVirtualTime(t *testing.T) {
	c := clocktest.New()
	r := NewRecorder(RecorderOptions{Clock: c})
	r.Emit("a", ServerConnecting)
	c.Advance(1500 * time.Millisecond)
	r.Emit("a", ServerConnected, Int("tools", 3))
	evs := r.Events()
	e := evs[len(evs)-1]
	if e.Seq != 2 || e.At != 1500*time.Millisecond {
		t.Fatalf("event = %+v", e)
	}
	if got, want := e.String(), "+1.500s server.connected server=a tools=3"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}

func TestAwaitChecksHistoryThenWaits(t *testing.T) {
	r := NewRecorder(RecorderOptions{Clock: clocktest.New()})
	r.Emit("a", RestartFailed, Int("attempt", 1))
	ctx := context.Background()
	e, err := r.Await(ctx, 0, Matcher{Kind: RestartFailed, Attrs: map[string]string{"attempt": "1"}})
	if err != nil || e.Seq != 1 {
		t.Fatalf("history: %v %v", e, err)
	}
	done := make(chan Event)
	go func() {
		e, _ := r.Await(ctx, 1, Matcher{Kind: RestartSucceeded, Server: "a"})
		done <- e
	}()
	r.Emit("b", RestartSucceeded)
	r.Emit("a", RestartSucceeded)
	if e := <-done; e.Seq != 3 {
		t.Fatalf("waited event = %v", e)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Await(cctx, 0, Matcher{Kind: GateClosed}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled await = %v", err)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := NewRecorder(RecorderOptions{Clock: clocktest.New()})
	r.Emit("a", RestartScheduled, String("reason", "probe-failure"), Millis("delay_ms", time.Second), Bool("x", true))
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, r.Events()); err != nil {
		t.Fatal(err)
	}
	var e Event
	if err := json.Unmarshal(buf.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	if e.Attrs["delay_ms"] != int64(1000) || e.Attrs["x"] != true || e.Kind != RestartScheduled {
		t.Fatalf("round trip = %#v", e)
	}
}

func TestSubscribeAndLimit(t *testing.T) {
	r := NewRecorder(RecorderOptions{Clock: clocktest.New(), Limit: 2})
	ch, cancel := r.Subscribe(8)
	for range 3 {
		r.Emit("", SessionOpened)
	}
	if n := len(r.Events()); n != 2 {
		t.Fatalf("history kept %d events, want 2", n)
	}
	cancel()
	n := 0
	for range ch {
		n++
	}
	if n != 3 {
		t.Fatalf("subscriber got %d events", n)
	}
}

func TestKindsUnique(t *testing.T) {
	seen := map[Kind]bool{}
	for _, k := range Kinds() {
		if seen[k.Kind] {
			t.Fatalf("duplicate kind %s", k.Kind)
		}
		seen[k.Kind] = true
	}
}

// TestBoundedHistoryRing: a bounded recorder keeps exactly the latest Limit
// events, in order, and Await and Count see only those.
func TestBoundedHistoryRing(t *testing.T) {
	r := NewRecorder(RecorderOptions{Clock: clocktest.New(), Limit: 3})
	for i := range 7 {
		r.Emit("", RestartAttempt, Int("attempt", i+1))
	}
	evs := r.Events()
	if len(evs) != 3 || evs[0].Seq != 5 || evs[1].Seq != 6 || evs[2].Seq != 7 {
		t.Fatalf("history = %v, want seq 5, 6, 7", evs)
	}
	if n := r.Count(Matcher{Kind: RestartAttempt}); n != 3 {
		t.Fatalf("Count = %d, want 3", n)
	}
	e, err := r.Await(context.Background(), 0, Matcher{Kind: RestartAttempt})
	if err != nil || e.Seq != 5 {
		t.Fatalf("Await from 0 = %v, %v; want the oldest kept (seq 5)", e, err)
	}
}

// Found by FuzzEventJSONL: int64 attributes beyond 2^53 came back rounded
// through float64, and String() broke its line on a newline or carriage
// return in a server, session or value.
func TestJSONLRoundTripExactAndStringOneLine(t *testing.T) {
	e := Event{Seq: 1, Server: "a\nb", Session: "s\r1", Kind: Kind("server.connected"), Attrs: map[string]any{
		"big": int64(1<<53 + 1), "max": int64(math.MaxInt64), "min": int64(math.MinInt64),
		"f": 1.5, "whole": 3.0, "s": "x\ry", "empty": "", "plain": "ok",
	}}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, []Event{e}); err != nil {
		t.Fatal(err)
	}
	var got Event
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"big": int64(1<<53 + 1), "max": int64(math.MaxInt64), "min": int64(math.MinInt64),
		"f": 1.5, "whole": int64(3), "s": "x\ry", "empty": "", "plain": "ok"}
	if !reflect.DeepEqual(got.Attrs, want) {
		t.Errorf("attrs %#v, want %#v", got.Attrs, want)
	}
	s := e.String()
	if want := `+0.000s server.connected server="a\nb" session="s\r1" big=9007199254740993 empty="" f=1.5 max=9223372036854775807 min=-9223372036854775808 plain=ok s="x\ry" whole=3`; s != want {
		t.Errorf("String() = %s\nwant        %s", s, want)
	}
}

// TestHistoryKeepsAttributesOfUnreadEvents: an event nobody read at emit
// time (no subscriber, no logger) keeps its attributes for later readers,
// also once the ring has wrapped, and a subscriber sees them at once.
func TestHistoryKeepsAttributesOfUnreadEvents(t *testing.T) {
	r := NewRecorder(RecorderOptions{Clock: clocktest.New(), Limit: 3})
	for i := range 5 {
		r.Emit("a", ToolCallStarted, String("call", fmt.Sprint("c", i)), Int("n", i))
	}
	evs := r.Events()
	if len(evs) != 3 {
		t.Fatalf("%d events kept, want 3", len(evs))
	}
	for i, e := range evs {
		if e.Attrs["call"] != fmt.Sprint("c", i+2) || e.Attrs["n"] != int64(i+2) {
			t.Errorf("event %d: attrs %v", i, e.Attrs)
		}
	}
	ch, cancel := r.Subscribe(4)
	defer cancel()
	r.Emit("a", ToolCallFinished, String("outcome", "ok"))
	if e := <-ch; e.Attrs["outcome"] != "ok" || e.Seq != 6 {
		t.Errorf("subscriber got %+v", e)
	}
	if n := r.Count(Matcher{Kind: ToolCallStarted, Attrs: map[string]string{"call": "c4"}}); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
}
