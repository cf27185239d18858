package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// readAll reads r to the end, also through one-byte reads of the source.
func readAll(t *testing.T, in string, opts Options, oneByte bool) (string, []Noise, error) {
	t.Helper()
	var noise []Noise
	user := opts.OnNoise
	opts.OnNoise = func(n Noise) {
		noise = append(noise, n)
		if user != nil {
			user(n)
		}
	}
	var src io.Reader = strings.NewReader(in)
	if oneByte {
		src = iotest.OneByteReader(src)
	}
	g := NewReader(src, opts)
	var out bytes.Buffer
	buf := make([]byte, 7) // small reads exercise the partial paths
	for {
		n, err := g.Read(buf)
		out.Write(buf[:n])
		if err == io.EOF {
			return out.String(), noise, nil
		}
		if err != nil {
			return out.String(), noise, err
		}
	}
}

func TestPassesMessagesAndDropsNoise(t *testing.T) {
	msg1 := `{"jsonrpc":"2.0","id":1,"result":{"text":"a } and { and \" inside"}}`
	msg2 := `[{"jsonrpc":"2.0","method":"x"}]`
	multi := "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 2,\n  \"result\": {}\n}"
	in := "\x1b[32mbanner\x1b[0m v1\n\nReady.\n" + msg1 + "\n" + "log: {not json}\n" + msg2 + "\r\n" + multi + "\n" + "\xff\xfe bad \xc3\x28\n" + "trailing noise without newline"
	for _, oneByte := range []bool{false, true} {
		out, noise, err := readAll(t, in, Options{MaxMessageBytes: 1 << 20}, oneByte)
		if err != nil {
			t.Fatal(err)
		}
		want := "\n" + msg1 + "\n" + msg2 + "\r\n" + multi + "\n"
		if out != want {
			t.Errorf("oneByte=%v: out %q\nwant %q", oneByte, out, want)
		}
		var samples []string
		for i, n := range noise {
			if n.Lines != i+1 {
				t.Errorf("noise %d counts %d lines", i, n.Lines)
			}
			samples = append(samples, n.Sample)
		}
		wantSamples := []string{"\uFFFD[32mbanner\uFFFD[0m v1", "Ready.", "log: {not json}", "\uFFFD\uFFFD bad \uFFFD(", "trailing noise without newline"}
		if strings.Join(samples, "|") != strings.Join(wantSamples, "|") {
			t.Errorf("samples %q\nwant %q", samples, wantSamples)
		}
		// Everything passed is a sequence of JSON values.
		dec := json.NewDecoder(strings.NewReader(out))
		for dec.More() {
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("passed output does not decode: %v", err)
			}
		}
	}
}

func TestMessageTooLarge(t *testing.T) {
	var got *TooLargeError
	big := `{"data":"` + strings.Repeat("x", 5000) + `"}`
	in := `{"id":1}` + "\n" + big + "\n" + `{"id":2}` + "\n"
	out, _, err := readAll(t, in, Options{MaxMessageBytes: 1000, OnTooLarge: func(e *TooLargeError) { got = e }}, false)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	var tl *TooLargeError
	if !errors.As(err, &tl) || !tl.JSON || tl.Limit != 1000 || !strings.HasPrefix(tl.Sample, `{"data":"xxx`) || len(tl.Sample) != SampleBytes {
		t.Errorf("error %+v", tl)
	}
	if got != tl {
		t.Errorf("OnTooLarge got %v", got)
	}
	if !strings.HasPrefix(out, `{"id":1}`+"\n") || len(out) > len(`{"id":1}`)+1+1001 {
		t.Errorf("passed %d bytes", len(out))
	}
	if !strings.Contains(err.Error(), "exceeds the limit of 1000 bytes") {
		t.Errorf("message %q", err)
	}
}

func TestNoiseTooLarge(t *testing.T) {
	in := strings.Repeat("x", 1<<20) + `{"id":1}` + "\n"
	_, noise, err := readAll(t, in, Options{MaxMessageBytes: 4096}, false)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.JSON || tl.Sample != strings.Repeat("x", SampleBytes) {
		t.Fatalf("err %v, want a non-JSON TooLargeError", err)
	}
	if len(noise) != 0 {
		t.Errorf("an unfinished line was reported as noise: %v", noise)
	}
	if !strings.Contains(tl.Error(), "non-JSON line") {
		t.Errorf("message %q", tl)
	}
}

// TestNoLimit: a zero limit passes a message of any size.
func TestNoLimit(t *testing.T) {
	big := `{"data":"` + strings.Repeat("y", 100000) + `"}` + "\n"
	out, _, err := readAll(t, big, Options{}, false)
	if err != nil || out != big {
		t.Fatalf("err %v, %d of %d bytes", err, len(out), len(big))
	}
}

// TestStickyError: once failed, every Read fails.
func TestStickyError(t *testing.T) {
	g := NewReader(strings.NewReader(strings.Repeat("z", 100)), Options{MaxMessageBytes: 10})
	buf := make([]byte, 64)
	_, err := g.Read(buf)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("first read %v", err)
	}
	if _, err2 := g.Read(buf); err2 != err || g.Err() != err {
		t.Errorf("later read %v, Err %v", err2, g.Err())
	}
}

func TestSample(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"  plain  ", "plain"},
		{"\x1b[31mred", "\uFFFD[31mred"},
		{"a\xffb", "a\uFFFDb"},
		{"tab\there", "tab here"},
		{strings.Repeat("é", 150), strings.Repeat("é", 100)},
	} {
		got := Sample([]byte(tc.in))
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Sample(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCloseAndCounts: Close reaches the source; NoiseLines counts.
func TestCloseAndCounts(t *testing.T) {
	src := &closer{Reader: strings.NewReader("a\nb\n{}\n")}
	g := NewReader(src, Options{})
	if _, err := io.ReadAll(g); err != nil {
		t.Fatal(err)
	}
	if g.NoiseLines() != 2 {
		t.Errorf("NoiseLines %d", g.NoiseLines())
	}
	if err := g.Close(); err != nil || !src.closed {
		t.Errorf("Close: %v, closed %v", err, src.closed)
	}
}

type closer struct {
	io.Reader
	closed bool
}

func (c *closer) Close() error { c.closed = true; return nil }
