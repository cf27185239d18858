package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/mcplife/mcplife/runtime/event"
)

// lineWriter serializes the lines of every goroutine. It numbers the
// events written with writeEvent; the reference driver's forwarder writes
// events its recorder numbered with hold and write.
type lineWriter struct {
	mu   sync.Mutex
	w    io.Writer
	err  error  // the first write error; nothing is written after it
	seq  uint64 // the last seq writeEvent used
	held []byte // lines held by hold for the next write
}

// encode returns v as one JSON line.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("driver: encoding a %T line: %w", v, err)
	}
	return buf.Bytes(), nil
}

// write writes v as one line, after the lines held.
func (o *lineWriter) write(v any) error {
	b, err := encode(v)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.writeLocked(b)
}

// hold appends lines, already encoded, to go out in one write with the
// next line written (or at sync): a response and the events before it
// reach the reader in one piece, not one wake-up each.
func (o *lineWriter) hold(lines []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held = append(o.held, lines...)
}

// sync writes the lines held.
func (o *lineWriter) sync() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.writeLocked(nil)
}

// writeEvent writes e as an event line numbered with the next seq; a line
// that cannot be encoded uses no seq.
func (o *lineWriter) writeEvent(e event.Event) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	e.Seq = o.seq + 1
	b, err := encode(EventLine{Type: TypeEvent, Event: e})
	if err != nil {
		return err
	}
	o.seq = e.Seq
	return o.writeLocked(b)
}

// writeLocked writes the lines held, then b, in one write.
func (o *lineWriter) writeLocked(b []byte) error {
	if len(o.held) > 0 {
		b = append(o.held, b...)
		o.held = nil
	}
	if o.err == nil && len(b) > 0 {
		if _, err := o.w.Write(b); err != nil {
			o.err = fmt.Errorf("driver: writing a line: %w", err)
		}
	}
	return o.err
}

// forwarder writes the recorder's events in seq order. Its goroutine
// writes what the subscription delivers, as many events per write as are
// waiting; flush writes what the goroutine has not reached yet itself, so a
// response never waits for a hand-off between goroutines.
type forwarder struct {
	rec   *event.Recorder
	out   *lineWriter
	ch    <-chan event.Event
	unsub func()
	done  chan struct{}

	mu   sync.Mutex // held while events are encoded and handed to out
	sent uint64     // the seq of the last event handed to out
}

func newForwarder(rec *event.Recorder, out *lineWriter) *forwarder {
	ch, unsub := rec.Subscribe(1 << 14)
	f := &forwarder{rec: rec, out: out, ch: ch, unsub: unsub, done: make(chan struct{})}
	go f.run()
	return f
}

func (f *forwarder) run() {
	defer close(f.done)
	for e := range f.ch {
		batch := []event.Event{e}
	more:
		for {
			select {
			case next, ok := <-f.ch:
				if !ok {
					break more
				}
				batch = append(batch, next)
			default:
				break more
			}
		}
		f.mu.Lock()
		buf := f.encodeLocked(batch)
		// An event line always encodes; a write error stays in the
		// writer, and the next response logs it.
		f.out.hold(buf)
		_ = f.out.sync()
		f.mu.Unlock()
	}
}

// encodeLocked returns the lines of the events of batch not sent yet, with
// any the subscription dropped taken from the history, and marks them
// sent; f.mu must be held.
func (f *forwarder) encodeLocked(batch []event.Event) []byte {
	var buf []byte
	for _, e := range batch {
		if e.Seq <= f.sent {
			continue
		}
		if e.Seq > f.sent+1 {
			// The subscription dropped events; take them from the history.
			for _, old := range f.rec.EventsAfter(f.sent) {
				if old.Seq >= e.Seq {
					break
				}
				buf = appendEventLine(buf, old)
			}
		}
		buf = appendEventLine(buf, e)
		f.sent = e.Seq
	}
	return buf
}

func appendEventLine(buf []byte, e event.Event) []byte {
	b, err := encode(EventLine{Type: TypeEvent, Event: e})
	if err != nil {
		return buf // an event line always encodes
	}
	return append(buf, b...)
}

// flush hands every event emitted so far to the writer, which writes them
// with the next line (see hold), and waits for nothing: what the goroutine
// has not written yet, flush takes from the recorder's history.
func (f *forwarder) flush() {
	target := f.rec.Last()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent >= target {
		return
	}
	var batch []event.Event
	for _, e := range f.rec.EventsAfter(f.sent) {
		if e.Seq > target {
			break
		}
		batch = append(batch, e)
	}
	if len(batch) > 0 && batch[0].Seq > f.sent+1 {
		// The history no longer holds the next events (a bounded
		// recorder): go on from the oldest it holds.
		f.sent = batch[0].Seq - 1
	}
	f.out.hold(f.encodeLocked(batch))
}

// stop writes the remaining events and ends the forwarder.
func (f *forwarder) stop() {
	f.flush()
	_ = f.out.sync()
	f.unsub()
	<-f.done
}
