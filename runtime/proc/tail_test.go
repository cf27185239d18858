package proc

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// naiveTail is the reference tailBuffer: it keeps everything and cuts on
// read.
type naiveTail struct {
	limit int
	all   []byte
}

func (n *naiveTail) Write(p []byte) { n.all = append(n.all, p...) }

func (n *naiveTail) String() string {
	s := n.all
	if len(s) > n.limit {
		s = s[len(s)-n.limit:]
		for i := 0; i < utf8.UTFMax-1 && len(s) > 0 && !utf8.RuneStart(s[0]); i++ {
			s = s[1:]
		}
	}
	return strings.TrimSpace(string(s))
}

func TestTailBufferWrapAround(t *testing.T) {
	b := newTailBuffer(8)
	for _, tc := range []struct{ write, want string }{
		{"", ""},
		{"abc", "abc"},
		{"defgh", "abcdefgh"},      // exactly full
		{"i", "bcdefghi"},          // wraps by one
		{"jklmn", "ghijklmn"},      // wraps across the end
		{"0123456789", "23456789"}, // longer than the ring
		{"\u00e9\u00e9\u00e9\u00e9\u00e9", "\u00e9\u00e9\u00e9\u00e9"}, // 10 bytes: the kept 8 are 4 whole runes
		{"x\u20ac", "\u00e9\u00e9x\u20ac"},                             // 4 bytes: the kept 8 start on a rune
		{"y", "\u00e9x\u20acy"},                                        // the kept 8 start inside an 'é'
		{"  ", "x\u20acy"},                                             // trailing space trimmed
	} {
		b.Write([]byte(tc.write))
		if got := b.String(); got != tc.want {
			t.Fatalf("after %q: got %q, want %q", tc.write, got, tc.want)
		}
	}
}

func TestTailBufferConstantMemory(t *testing.T) {
	b := newTailBuffer(DefaultStderrLimit)
	chunk := bytes.Repeat([]byte("stderr line\n"), 400) // 4,800 bytes
	b.Write(chunk)
	buf := &b.buf[0]
	allocs := testing.AllocsPerRun(1000, func() { b.Write(chunk) })
	if allocs != 0 {
		t.Errorf("Write allocates %v times per call", allocs)
	}
	big := bytes.Repeat([]byte("x"), 10*DefaultStderrLimit)
	if allocs := testing.AllocsPerRun(100, func() { b.Write(big) }); allocs != 0 {
		t.Errorf("a write larger than the ring allocates %v times", allocs)
	}
	if &b.buf[0] != buf || len(b.buf) != DefaultStderrLimit || cap(b.buf) != DefaultStderrLimit {
		t.Errorf("the ring was reallocated: len %d cap %d", len(b.buf), cap(b.buf))
	}
}

func TestTailBufferLazy(t *testing.T) {
	b := newTailBuffer(0)
	if b.limit != DefaultStderrLimit || b.buf != nil || b.String() != "" {
		t.Fatalf("new tail: limit %d, buf %d bytes, %q", b.limit, len(b.buf), b.String())
	}
}

// FuzzTailBuffer writes arbitrary bytes into the stderr tail ring (limit 1
// to 64) in chunks of arbitrary sizes: after every write, String equals a
// naive reference that keeps everything and cuts on read (the last limit
// bytes, not starting inside a UTF-8 sequence once cut, trimmed), and the
// ring stays exactly limit bytes, never reallocated.
func FuzzTailBuffer(f *testing.F) {
	f.Add(uint8(5), []byte("abcdefghijklmnop"), []byte{1, 2, 3, 7, 20})
	f.Add(uint8(4), []byte("\u00e9\u00e9\u20ac\u20ac\U0001F600 x "), []byte{3, 1, 5})
	f.Add(uint8(1), []byte("\xff\xfe\xc3"), []byte{0, 1})
	f.Add(uint8(16), bytes.Repeat([]byte("line\n"), 20), []byte{16, 15, 17, 32})
	f.Fuzz(func(t *testing.T, limit uint8, data, sizes []byte) {
		lim := int(limit)%64 + 1
		ring, ref := newTailBuffer(lim), &naiveTail{limit: lim}
		if !bytes.ContainsFunc(sizes, func(r rune) bool { return r != 0 }) {
			sizes = nil // all empty chunks: one write of everything
		}
		for i := 0; len(data) > 0; i++ {
			n := len(data)
			if len(sizes) > 0 {
				n = min(n, int(sizes[i%len(sizes)]))
			}
			ring.Write(data[:n])
			ref.Write(data[:n])
			data = data[n:]
			if got, want := ring.String(), ref.String(); got != want {
				t.Fatalf("limit %d, after %d writes: got %q, want %q", lim, i+1, got, want)
			}
			if ring.total > 0 && (len(ring.buf) != lim || cap(ring.buf) != lim) {
				t.Fatalf("ring is %d bytes (cap %d), limit %d", len(ring.buf), cap(ring.buf), lim)
			}
		}
	})
}

// BenchmarkTailBufferWrite writes 4 KiB chunks into the 8 KiB tail.
func BenchmarkTailBufferWrite(b *testing.B) {
	t := newTailBuffer(DefaultStderrLimit)
	chunk := bytes.Repeat([]byte("x"), 4096)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		t.Write(chunk)
	}
}
