package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/mcplife/mcplife/runtime/event"
)

// lineWriter serializes the lines of every goroutine.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (o *lineWriter) write(v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Every line type marshals; this is a bug in the driver.
		panic(fmt.Sprintf("driver: marshal %T: %v", v, err))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		_, o.err = o.w.Write(buf.Bytes())
	}
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
	f.out.write(EventLine{Type: TypeEvent, Event: e})
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
