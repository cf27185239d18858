package event

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
)

// Recorder keeps the events of one runtime in order, streams them to
// subscribers and lets callers await an event that matches.
type Recorder struct {
	clock  clock.Clock
	start  time.Time
	logger *slog.Logger
	limit  int

	mu     sync.Mutex
	seq    uint64
	events []record // a ring of at most limit events when limit > 0
	head   int      // index of the oldest event once the ring is full
	// changed is closed by the next emit; nil while nobody awaits, so an
	// emit nobody waits for allocates no channel.
	changed chan struct{}
	subs    map[*subscription]struct{}
}

// RecorderOptions configures a Recorder.
type RecorderOptions struct {
	// Clock stamps events; nil means the real clock.
	Clock clock.Clock
	// Logger, when set, receives every event at a level chosen by its kind
	// (restart failures at ERROR).
	Logger *slog.Logger
	// Limit bounds the history kept for Events and Await to the latest
	// Limit events; 0 keeps everything.
	Limit int
}

// NewRecorder returns an empty Recorder.
func NewRecorder(opts RecorderOptions) *Recorder {
	c := opts.Clock
	if c == nil {
		c = clock.Real{}
	}
	logger := opts.Logger
	if logger != nil && logger.Handler() == slog.DiscardHandler {
		// Asking a discarding logger whether it wants each event costs
		// an interface call per emit for nothing.
		logger = nil
	}
	return &Recorder{
		clock:  c,
		start:  c.Now(),
		logger: logger,
		limit:  opts.Limit,
		subs:   make(map[*subscription]struct{}),
	}
}

// Emit records an event.
func (r *Recorder) Emit(server string, kind Kind, attrs ...Attr) {
	r.EmitSession("", server, kind, attrs...)
}

// EmitSession records an event that concerns a session.
func (r *Recorder) EmitSession(session, server string, kind Kind, attrs ...Attr) {
	// Check Enabled first: building and boxing e for a logger that drops
	// it would cost allocations on every emit.
	ctx := context.Background()
	level := levelOf(kind)
	logged := r.logger != nil && r.logger.Enabled(ctx, level)
	rec := packRecord(session, server, kind, attrs)
	r.mu.Lock()
	r.seq++
	rec.seq, rec.at = r.seq, r.clock.Since(r.start)
	var e Event
	if logged || len(r.subs) > 0 {
		e = Event{Seq: rec.seq, At: rec.at, Server: server, Session: session, Kind: kind, Attrs: attrMap(attrs)}
	}
	r.push(rec)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	for s := range r.subs {
		s.push(e)
	}
	r.mu.Unlock()
	if logged {
		r.logger.Log(ctx, level, string(kind), "event", e)
	}
}

func levelOf(k Kind) slog.Level {
	switch k {
	case RestartScheduled, RestartFailed, RestartGaveUp, ServerFailed, ConfigError:
		return slog.LevelError
	case ConfigWarning, ConfigUnresolved, ToolsCollision, ToolInjectionSignal, TransportClosed, PoolUnavailable, ToolTimeout:
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// Events returns a copy of the recorded history: every event, or the latest
// Limit of them when the recorder is bounded.
func (r *Recorder) Events() []Event { return r.EventsAfter(0) }

// EventsAfter returns a copy of the recorded events after sequence number
// after, in order: those the history still holds. A reader that has seen
// events up to after takes what it missed without copying the whole
// history.
func (r *Recorder) EventsAfter(after uint64) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	r.eachAfter(after, func(rec record) bool {
		out = append(out, rec.event())
		return true
	})
	return out
}

// push appends e to the history. A bounded recorder keeps its history in a
// ring of exactly limit events, so memory stays flat and each emit is O(1).
// r.mu must be held.
func (r *Recorder) push(e record) {
	if r.limit <= 0 || len(r.events) < r.limit {
		r.events = append(r.events, e)
		return
	}
	r.events[r.head] = e
	r.head = (r.head + 1) % r.limit
}

// eachAfter calls f on the events after sequence number after, in order,
// until f returns false; r.mu must be held. The history holds consecutive
// sequence numbers, so the first one to visit is found by arithmetic: an
// Await woken by every emit looks only at the events it has not seen, not
// at the whole history again.
func (r *Recorder) eachAfter(after uint64, f func(record) bool) {
	n := len(r.events)
	if n == 0 {
		return
	}
	skip := 0
	if oldest := r.events[r.head].seq; after >= oldest {
		skip = int(min(after-oldest+1, uint64(n)))
	}
	for i := skip; i < n; i++ {
		if !f(r.events[(r.head+i)%n]) {
			return
		}
	}
}

// Last returns the sequence number of the latest event.
func (r *Recorder) Last() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

// Await returns the first recorded event after sequence number after that
// matches m. It checks the history first, then waits for new events until
// ctx is done.
func (r *Recorder) Await(ctx context.Context, after uint64, m Matcher) (Event, error) {
	rm := newRecordMatcher(m)
	for {
		r.mu.Lock()
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		var found *Event
		r.eachAfter(after, func(rec record) bool {
			if rec.match(&rm) {
				e := rec.event()
				found = &e
				return false
			}
			return true
		})
		r.mu.Unlock()
		if found != nil {
			return *found, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Event{}, fmt.Errorf("awaiting %s: %w", m, context.Cause(ctx))
		}
	}
}

// Count returns how many recorded events match m.
func (r *Recorder) Count(m Matcher) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	rm := newRecordMatcher(m)
	r.eachAfter(0, func(rec record) bool {
		if rec.match(&rm) {
			n++
		}
		return true
	})
	return n
}

// Subscribe returns a channel that receives every event emitted from now on,
// and a cancel function that ends the subscription and closes the channel.
// A subscriber that falls behind by more than buffer events loses the oldest
// ones; Dropped on the returned Subscription tells how many.
func (r *Recorder) Subscribe(buffer int) (<-chan Event, func()) {
	if buffer < 1 {
		buffer = 1024
	}
	s := &subscription{ch: make(chan Event, buffer)}
	r.mu.Lock()
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.subs, s)
			close(s.ch)
			r.mu.Unlock()
		})
	}
}

type subscription struct {
	ch chan Event
}

// push delivers e without blocking the emitter, dropping the oldest queued
// event when the subscriber is full. It runs with the recorder's lock held.
func (s *subscription) push(e Event) {
	for {
		select {
		case s.ch <- e:
			return
		default:
		}
		select {
		case <-s.ch:
		default:
		}
	}
}

// Matcher selects events.
type Matcher struct {
	Kind    Kind
	Server  string
	Session string
	// Attrs must all be present with these values (compared as strings).
	Attrs map[string]string
}

// Match reports whether e satisfies m. Empty fields match anything.
func (m Matcher) Match(e Event) bool {
	if m.Kind != "" && e.Kind != m.Kind {
		return false
	}
	if m.Server != "" && e.Server != m.Server {
		return false
	}
	if m.Session != "" && e.Session != m.Session {
		return false
	}
	for k, want := range m.Attrs {
		got, ok := e.Get(k)
		if !ok || got != want {
			return false
		}
	}
	return true
}

// String describes the matcher, e.g. `restart.succeeded server=a reason=probe-failure`.
func (m Matcher) String() string {
	var b strings.Builder
	b.WriteString(string(m.Kind))
	if m.Kind == "" {
		b.WriteString("any event")
	}
	if m.Server != "" {
		fmt.Fprintf(&b, " server=%s", m.Server)
	}
	if m.Session != "" {
		fmt.Fprintf(&b, " session=%s", m.Session)
	}
	for _, k := range sortedKeys(m.Attrs) {
		fmt.Fprintf(&b, " %s=%s", k, m.Attrs[k])
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
