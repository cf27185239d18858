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
// events its recorder numbered with write.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error // the first write error; nothing is written after it
	seq uint64
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

// write writes v as one line.
func (o *lineWriter) write(v any) error {
	b, err := encode(v)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.writeLocked(b)
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

func (o *lineWriter) writeLocked(b []byte) error {
	if o.err == nil {
		if _, err := o.w.Write(b); err != nil {
			o.err = fmt.Errorf("driver: writing a line: %w", err)
		}
	}
	return o.err
}

// forwarder writes the recorder's events in seq order.
type forwarder struct {
	rec   *event.Recorder
	out   *lineWriter
	ch    <-chan event.Event
	unsub func()
	done  chan struct{}

	mu      sync.Mutex
	sent    uint64
	changed chan struct{}
}

func newForwarder(rec *event.Recorder, out *lineWriter) *forwarder {
	ch, unsub := rec.Subscribe(1 << 14)
	f := &forwarder{rec: rec, out: out, ch: ch, unsub: unsub, done: make(chan struct{}), changed: make(chan struct{})}
	go f.run()
	return f
}

func (f *forwarder) run() {
	defer close(f.done)
	for e := range f.ch {
		f.mu.Lock()
		sent := f.sent
		f.mu.Unlock()
		if e.Seq <= sent {
			continue
		}
		if e.Seq > sent+1 {
			// The subscription dropped events; take them from the history.
			for _, old := range f.rec.Events() {
				if old.Seq > sent && old.Seq < e.Seq {
					f.write(old)
				}
			}
		}
		f.write(e)
	}
}

func (f *forwarder) write(e event.Event) {
	// An event line always encodes; a write error stays in the writer,
	// and the next response logs it.
	_ = f.out.write(EventLine{Type: TypeEvent, Event: e})
	f.mu.Lock()
	f.sent = e.Seq
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// flush waits until every event emitted before the call has been written.
func (f *forwarder) flush() {
	target := f.rec.Last()
	for {
		f.mu.Lock()
		sent, ch := f.sent, f.changed
		f.mu.Unlock()
		if sent >= target {
			return
		}
		select {
		case <-ch:
		case <-f.done:
			return
		}
	}
}

// stop writes the remaining events and ends the forwarder.
func (f *forwarder) stop() {
	f.flush()
	f.unsub()
	<-f.done
}
