package readbuf

import "testing"

func TestNext(t *testing.T) {
	b := New(1024, 8192)
	steps := []struct {
		last, want int
	}{
		{0, 1024},    // first read: the minimum
		{1024, 2048}, // filled: doubles
		{2048, 4096}, // filled: doubles
		{4096, 8192}, // filled: doubles
		{8192, 8192}, // filled at the maximum: stays
		{2048, 8192}, // a quarter used: stays
		{2047, 4096}, // under a quarter: halves
		{10, 2048},   // under a quarter: halves
		{10, 1024},   // halves down to the minimum
		{0, 1024},    // stays at the minimum
		{1024, 2048}, // grows again
	}
	for i, s := range steps {
		if got := len(b.Next(s.last)); got != s.want {
			t.Fatalf("step %d: Next(%d) gave %d bytes, want %d", i, s.last, got, s.want)
		}
	}
}

func TestNextKeepsOldSlice(t *testing.T) {
	b := New(4, 16)
	first := b.Next(0)
	copy(first, "abcd")
	second := b.Next(4)
	second[0] = 'x'
	if string(first) != "abcd" {
		t.Errorf("resizing wrote into the previous buffer: %q", first)
	}
}

// TestRelease: after Release the next buffer is new and of the released
// one's size, with no resize decided from last; decisions resume after it.
func TestRelease(t *testing.T) {
	b := New(4, 16)
	first := b.Next(0)
	b.Release()
	second := b.Next(4) // a full read would double, but this read is the released one's
	if len(second) != 4 || &second[0] == &first[0] {
		t.Fatalf("after Release: %d bytes, same slice %v; want a new slice of 4", len(second), &second[0] == &first[0])
	}
	if again := b.Next(0); &again[0] != &second[0] {
		t.Fatal("Next without a resize gave a new slice")
	}
	if grown := b.Next(4); len(grown) != 8 {
		t.Fatalf("a full read after the release: %d bytes, want 8", len(grown))
	}
}
