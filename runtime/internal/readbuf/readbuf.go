// Package readbuf sizes the buffer of a read loop that may block in Read
// for a long time, such as the runtime's reads of a server's stdout and
// stderr: the buffer passed to a blocked Read stays allocated while it
// waits, so an idle stream should hold a small one, and a busy stream
// should be read in large chunks.
package readbuf

// Buffer is a read buffer between Min and Max bytes long. It starts at
// Min, doubles after a read that filled it and halves after a read that
// used less than a quarter of it, so a burst leaves no large buffer behind
// once the stream quiets down. The zero value is not usable; make one with
// New.
type Buffer struct {
	buf      []byte
	min, max int
}

// New returns a Buffer of min bytes that grows up to max.
func New(min, max int) *Buffer {
	return &Buffer{buf: make([]byte, min), min: min, max: max}
}

// Next returns the buffer for the next read, given how many bytes the
// previous read returned into the buffer Next last gave (0 before the
// first read). A buffer it resizes is a new slice: nothing read into the
// previous one is overwritten.
func (b *Buffer) Next(last int) []byte {
	switch n := len(b.buf); {
	case last == n && n < b.max:
		b.buf = make([]byte, min(2*n, b.max))
	case last < n/4 && n > b.min:
		b.buf = make([]byte, max(n/2, b.min))
	}
	return b.buf
}
