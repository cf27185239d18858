package event

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// packedAt packs an event with its sequence number and time, as the
// recorder does.
func packedAt(seq uint64, at time.Duration, session, server string, kind Kind, attrs []Attr) record {
	rec := packRecord(session, server, kind, attrs)
	rec.seq, rec.at = seq, at
	return rec
}

// TestRecordRoundTrip: a packed record gives back the event as emitted
// (attribute values typed as Attr.Value gives them), for empty and
// non-ASCII strings, extreme integers, booleans and no attributes at all.
func TestRecordRoundTrip(t *testing.T) {
	long := strings.Repeat("é", 300)
	cases := []struct {
		session, server string
		kind            Kind
		attrs           []Attr
	}{
		{"", "", RuntimeClosed, nil},
		{"s1", "a", ToolCallStarted, []Attr{String("call", "s1-1"), String("tool", "mcp_a_echo")}},
		{"", "srv", ProcessExited, []Attr{Int64("code", math.MinInt64), Int64("max", math.MaxInt64), Int("zero", 0), Bool("yes", true), Bool("no", false)}},
		{"séance", long, ToolTruncated, []Attr{String("", ""), String(long, long), Millis("timeout_ms", 90*time.Second)}},
	}
	for i, c := range cases {
		rec := packedAt(uint64(i+1), time.Duration(i)*time.Second, c.session, c.server, c.kind, c.attrs)
		got := rec.event()
		want := Event{Seq: uint64(i + 1), At: time.Duration(i) * time.Second, Server: c.server, Session: c.session, Kind: c.kind}
		if len(c.attrs) > 0 {
			want.Attrs = map[string]any{}
			for _, a := range c.attrs {
				want.Attrs[a.Key] = a.Value()
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("case %d: got %+v, want %+v", i, got, want)
		}
	}
}

// TestRecordMatchesLikeEvent: matching a packed record gives the same answer
// as Matcher.Match on the rebuilt event, for every field and attribute type,
// missing attributes and a key emitted twice (the last value wins, as in
// Event.Attrs).
func TestRecordMatchesLikeEvent(t *testing.T) {
	recs := []record{
		packedAt(1, 0, "s1", "a", ToolCallFinished, []Attr{String("call", "s1-1"), String("outcome", "ok"), String("code", "")}),
		packedAt(2, 0, "", "b", ProcessExited, []Attr{Int("code", -1), Bool("signaled", true)}),
		packedAt(3, 0, "", "b", ProcessExited, []Attr{Int("code", 0), Bool("signaled", false)}),
		packedAt(4, 0, "", "c", RuntimeClosed, nil),
		packedAt(5, 0, "s2", "c", ToolCallStarted, []Attr{String("call", "x"), String("call", "y")}),
	}
	matchers := []Matcher{
		{},
		{Kind: ToolCallFinished},
		{Kind: ProcessExited, Server: "b"},
		{Server: "a", Session: "s1"},
		{Session: "s2"},
		{Attrs: map[string]string{"outcome": "ok"}},
		{Attrs: map[string]string{"outcome": "ok", "code": ""}},
		{Attrs: map[string]string{"outcome": "ok", "missing": ""}},
		{Attrs: map[string]string{"code": "-1"}},
		{Attrs: map[string]string{"code": "0", "signaled": "false"}},
		{Attrs: map[string]string{"signaled": "true"}},
		{Attrs: map[string]string{"signaled": "1"}},
		{Attrs: map[string]string{"call": "x"}},
		{Attrs: map[string]string{"call": "y"}},
		{Kind: RuntimeClosed, Attrs: map[string]string{"code": "0"}},
	}
	for i, m := range matchers {
		rm := newRecordMatcher(m)
		for _, rec := range recs {
			if got, want := rec.match(&rm), m.Match(rec.event()); got != want {
				t.Errorf("matcher %d %+v on event %d: record match %v, Matcher.Match %v", i, m, rec.seq, got, want)
			}
		}
	}
}

// TestRecordSizedExactly: a record's blob is allocated at its final size
// for string attributes (integers reserve their longest varint), so the
// history holds no slack.
func TestRecordSizedExactly(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 16383, 16384, 70000} {
		s := strings.Repeat("x", n)
		rec := packedAt(1, 0, s, "a", ToolCallStarted, []Attr{String("call", s), String(s, "v")})
		if len(rec.blob) != cap(rec.blob) {
			t.Errorf("strings of %d bytes: blob len %d, cap %d", n, len(rec.blob), cap(rec.blob))
		}
		if e := rec.event(); e.Session != s || e.Attrs["call"] != s || e.Attrs[s] != "v" {
			t.Errorf("strings of %d bytes: round trip lost them", n)
		}
	}
}

// TestAwaitAfterInWrappedRing: Await finds the first matching event after
// any sequence number, before, inside and past a wrapped ring, and never one
// at or before it.
func TestAwaitAfterInWrappedRing(t *testing.T) {
	r := NewRecorder(RecorderOptions{Limit: 5})
	for i := range 12 { // seqs 1..12; the ring keeps 8..12
		r.Emit("a", ToolCallStarted, Int("i", i+1))
	}
	for after := uint64(0); after <= 11; after++ {
		e, err := r.Await(t.Context(), after, Matcher{Kind: ToolCallStarted})
		want := max(after+1, 8)
		if err != nil || e.Seq != want || e.Attrs["i"] != int64(want) {
			t.Errorf("Await(after %d) = seq %d %v, %v; want seq %d", after, e.Seq, e.Attrs, err, want)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Await(ctx, 12, Matcher{Kind: ToolCallStarted}); err == nil {
		t.Error("Await(after the last event) found one")
	}
	if e, err := r.Await(t.Context(), 3, Matcher{Attrs: map[string]string{"i": "10"}}); err != nil || e.Seq != 10 {
		t.Errorf("Await(i=10) = %+v, %v", e, err)
	}
}

// TestSubscriberSeesWhatHistoryKeeps: the event a subscriber receives at
// emit time (built from the attributes) equals the one the history gives
// back later (rebuilt from the packed record).
func TestSubscriberSeesWhatHistoryKeeps(t *testing.T) {
	r := NewRecorder(RecorderOptions{Limit: 10})
	ch, cancel := r.Subscribe(10)
	defer cancel()
	r.EmitSession("s", "a", ToolCallFinished, String("call", "s-1"), Int("n", -7), Bool("ok", true), String("call", "s-2"))
	r.Emit("", RuntimeClosed)
	hist := r.Events()
	for i, want := range hist {
		if got := <-ch; !reflect.DeepEqual(got, want) {
			t.Errorf("event %d: subscriber got %+v, history has %+v", i, got, want)
		}
	}
}
