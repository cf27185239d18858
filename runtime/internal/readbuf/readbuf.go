// Package readbuf sizes the buffer of a read loop that may wait for a long
// time, such as the runtime's reads of a server's stdout: the buffer passed
// to a blocked Read stays allocated while it waits, so an idle stream
// should hold a small one, or none, and a busy stream should be read in
// large chunks.
package readbuf

// Buffer is a read buffer between Min and Max bytes long. It starts at
// Min, doubles after a read that filled it and halves after a read that
// used less than a quarter of it, so a burst leaves no large buffer behind
// once the stream quiets down. A reader that can tell when its next read
// would wait drops the buffer while it waits (Release). The zero value is
// not usable; make one with New.
type Buffer struct {
	buf            []byte // nil once released
	size, min, max int
}

// New returns a Buffer of min bytes that grows up to max.
func New(min, max int) *Buffer {
	return &Buffer{buf: make([]byte, min), size: min, min: min, max: max}
}

// Next returns the buffer for the next read, given how many bytes the
// previous read returned into the buffer Next last gave (0 before the
// first read). A buffer it resizes is a new slice: nothing read into the
// previous one is overwritten. After Release it returns a new buffer of
// the size the released one had, whatever last: the read it serves is the
// one the released buffer was sized for.
func (b *Buffer) Next(last int) []byte {
	switch n := b.size; {
	case b.buf == nil:
	case last == n && n < b.max:
		b.size, b.buf = min(2*n, b.max), nil
	case last < n/4 && n > b.min:
		b.size, b.buf = max(n/2, b.min), nil
	}
	if b.buf == nil {
		b.buf = make([]byte, b.size)
	}
	return b.buf
}

// Release drops the buffer: a reader about to wait for its next read
// holds none while it waits, and takes a new one from Next once data is
// there. Nothing may be left in the released buffer that is still needed.
func (b *Buffer) Release() { b.buf = nil }
