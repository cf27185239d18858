// Package latch is a one-shot event that runs functions when it fires, in
// the manner of context.AfterFunc: a host that waits for the ends of many
// servers can react to each without a goroutine parked per end.
package latch

import "sync"

// Latch is closed once. Then the channel Done returns is closed and the
// functions given to AfterFunc run. Make one with New.
type Latch struct {
	mu     sync.Mutex
	done   chan struct{}
	after  []func()
	closed bool
}

// New returns an open Latch.
func New() *Latch { return &Latch{done: make(chan struct{})} }

// Done returns a channel closed when the latch is.
func (l *Latch) Done() <-chan struct{} { return l.done }

// AfterFunc arranges for f to be called once the latch is closed: by the
// goroutine that closes it, or at once by the caller when it is closed
// already. f must not block.
func (l *Latch) AfterFunc(f func()) {
	l.mu.Lock()
	if !l.closed {
		l.after = append(l.after, f)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	f()
}

// Close closes the latch and calls AfterFunc's functions, in the order
// they were given. Only the first call does anything.
func (l *Latch) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.done)
	fs := l.after
	l.after = nil
	l.mu.Unlock()
	for _, f := range fs {
		f()
	}
}
