package event

import (
	"runtime"
	"strconv"
	"testing"
)

// fullHistory returns a recorder holding limit tool.call_finished events,
// as a runtime that has made that many tool calls holds them.
func fullHistory(limit int) *Recorder {
	r := NewRecorder(RecorderOptions{Limit: limit})
	for i := range limit {
		r.EmitSession("s1", "a", ToolCallFinished, String("call", "s1-"+strconv.Itoa(i)), String("tool", "mcp_a_echo"), String("outcome", "ok"), String("code", ""))
	}
	return r
}

// BenchmarkHistoryGC measures what a full history of 10,000 events (the
// host's default EventLimit) costs the garbage collector: one op is one
// runtime.GC with the history live; history-B is the heap the history
// holds. A runtime whose tool calls go through go-sdk allocates hundreds of
// kilobytes per call, so the collector runs every few calls and marks the
// whole history each time.
//
//	go test -run '^$' -bench HistoryGC -count 5 ./runtime/event/
func BenchmarkHistoryGC(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := fullHistory(10_000)
	runtime.GC()
	runtime.ReadMemStats(&after)
	for b.Loop() {
		runtime.GC()
	}
	runtime.KeepAlive(r)
	// After the loop: b.Loop resets the timer and the reported metrics.
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "history-B")
}

// BenchmarkEmit measures one emit into a full bounded history with nobody
// subscribed, the path every tool call takes twice.
func BenchmarkEmit(b *testing.B) {
	r := fullHistory(10_000)
	b.ReportAllocs()
	for b.Loop() {
		r.EmitSession("s1", "a", ToolCallFinished, String("call", "s1-1"), String("tool", "mcp_a_echo"), String("outcome", "ok"), String("code", ""))
	}
}

// BenchmarkAwaitScan measures an Await that finds its event at the end of a
// full history, matching on an attribute, as the harness's awaits do.
func BenchmarkAwaitScan(b *testing.B) {
	r := fullHistory(10_000)
	m := Matcher{Kind: ToolCallFinished, Attrs: map[string]string{"call": "s1-9999"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Await(b.Context(), 0, m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAwaitRecent measures an Await for the latest event of a full
// history, given the sequence number before it, as a harness awaiting the
// next step does on every emit that wakes it.
func BenchmarkAwaitRecent(b *testing.B) {
	r := fullHistory(10_000)
	last := r.Last()
	m := Matcher{Kind: ToolCallFinished}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Await(b.Context(), last-1, m); err != nil {
			b.Fatal(err)
		}
	}
}
