package wire

import (
	"io"
	"testing"
)

// parkedStub is a parkedReader serving chunks, each after a wait: it
// records whether the Reader kept its buffer over the wait.
type parkedStub struct {
	chunks []string
	held   []bool // per wait: the Reader still held its buffer
}

func (s *parkedStub) Read([]byte) (int, error) { panic("Read: a parkedReader is read with ReadParked") }

func (s *parkedStub) ReadParked(buf func() []byte, idle func()) (int, error) {
	if len(s.chunks) == 0 {
		return 0, io.EOF
	}
	before := buf() // a read finds the pipe empty
	idle()
	after := buf() // data is there
	// Held: the Reader kept a reference, or its buffer was not released
	// (Next gave the same slice again).
	s.held = append(s.held, &before[0] == &after[0])
	n := copy(after, s.chunks[0])
	s.chunks = s.chunks[1:]
	return n, nil
}

// TestParkedReaderHoldsNoBuffer: over a parkedReader the Reader drops its
// buffer while the read waits and reads the messages as over any reader.
func TestParkedReaderHoldsNoBuffer(t *testing.T) {
	s := &parkedStub{chunks: []string{`{"a":1}` + "\n", `{"b":`, `2}` + "\n"}}
	g := NewReader(s, Options{})
	var got []string
	for {
		msg, err := g.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(msg))
	}
	if len(got) != 2 || got[0] != `{"a":1}` || got[1] != `{"b":2}` {
		t.Fatalf("messages %q", got)
	}
	for i, held := range s.held {
		if held {
			t.Errorf("wait %d: the Reader held its buffer", i)
		}
	}
	if len(s.held) != 3 {
		t.Fatalf("%d waits, want 3", len(s.held))
	}
}
