package proc

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// tailBuffer keeps the last limit bytes written to it in a fixed-size ring:
// its memory is limit bytes (allocated on the first write), whatever is
// written, and a write copies at most limit bytes, so a chatty server costs
// time proportional to what it writes and nothing more.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte // len limit once written to
	w     int    // next write position in buf
	total int64  // bytes written so far
}

func newTailBuffer(limit int) *tailBuffer {
	if limit <= 0 {
		limit = DefaultStderrLimit
	}
	return &tailBuffer{limit: limit}
}

// Write appends p, discarding the oldest bytes beyond the limit.
func (b *tailBuffer) Write(p []byte) {
	if len(p) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf == nil {
		b.buf = make([]byte, b.limit)
	}
	b.total += int64(len(p))
	if len(p) >= b.limit {
		copy(b.buf, p[len(p)-b.limit:])
		b.w = 0
		return
	}
	n := copy(b.buf[b.w:], p)
	copy(b.buf, p[n:])
	b.w = (b.w + len(p)) % b.limit
}

// appendTo appends the kept bytes, oldest first, to dst and reports whether
// older bytes were discarded.
func (b *tailBuffer) appendTo(dst []byte) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total <= int64(b.limit) {
		return append(dst, b.buf[:b.total]...), false
	}
	dst = append(dst, b.buf[b.w:]...)
	return append(dst, b.buf[:b.w]...), true
}

// String returns the kept bytes, trimmed of surrounding white space. When
// older bytes were discarded, it does not start inside a UTF-8 sequence.
func (b *tailBuffer) String() string {
	s, truncated := b.appendTo(nil)
	if truncated {
		for i := 0; i < utf8.UTFMax-1 && len(s) > 0 && !utf8.RuneStart(s[0]); i++ {
			s = s[1:]
		}
	}
	return strings.TrimSpace(string(s))
}
