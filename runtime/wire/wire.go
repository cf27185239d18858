// Package wire guards the stdout of a stdio MCP server before go-sdk decodes
// it.
//
// A stdio server's stdout should carry newline-delimited JSON-RPC messages
// and nothing else, but servers outside the host's control print banners and
// log lines there, write invalid UTF-8 or send one endless line. go-sdk's
// decoder treats the first non-JSON byte as the end of the connection and
// buffers a whole line before it can reject it. A [Reader] sits between the
// pipe and go-sdk:
//
//   - A line whose first non-blank byte is not '{' or '[' (outside a JSON
//     value) is not JSON-RPC: it is dropped, counted and reported through
//     [Options.OnNoise] with a sample of its first bytes, in constant memory
//     whatever its length.
//   - A JSON value is passed through unchanged; a small scanner tracks its
//     nesting (strings and escapes included) so that a value spread over
//     several lines is still one message.
//   - No message and no dropped line may exceed [Options.MaxMessageBytes]:
//     the Reader then fails for good with a [*TooLargeError] carrying a
//     sample, so go-sdk ends the connection instead of buffering more.
//   - Read message by message ([Reader.Next]), a list_changed notification
//     of at most [HoldBytes] bytes (see [ListChangedMethod]) is offered to
//     [Options.Absorb], and dropped when Absorb takes it, before go-sdk
//     spends a decode on it: a flood of them costs a byte scan each instead
//     of about 100 KB of decoder buffers.
//
// Samples are at most [SampleBytes] bytes, made valid UTF-8 and stripped of
// control characters, so they are safe to put in events and logs.
//
// A Reader can be read as a stream (Read, for go-sdk's IOTransport) or
// message by message ([Reader.Next]); [Transport] is the runtime's stdio
// connection for go-sdk built on Next: it needs no second JSON scan of the
// stream and keeps no buffer or message past its use.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mcplife/mcplife/runtime/internal/readbuf"
)

// DefaultMaxMessageBytes is the limit callers use when none is configured:
// 16 MiB, go-sdk's own default line limit, so that every server a go-sdk
// client accepts is accepted here too.
const DefaultMaxMessageBytes = 16 << 20

// SampleBytes is the most bytes of a line kept as its sample.
const SampleBytes = 200

// minBufSize and maxBufSize bound the Reader's own buffer (readbuf.Buffer:
// a Reader over a plain io.Reader holds it in a blocked Read for as long
// as its server is idle; over a parkedReader it holds none then).
const (
	minBufSize = 2 << 10
	maxBufSize = 32 << 10
)

// HoldBytes is the longest notification Next offers to Options.Absorb.
const HoldBytes = 512

// ErrTooLarge is matched (errors.Is) by every [*TooLargeError].
var ErrTooLarge = errors.New("message too large")

// TooLargeError reports a stdout message or non-JSON line longer than the
// limit.
type TooLargeError struct {
	// Limit is Options.MaxMessageBytes.
	Limit int
	// JSON tells whether the line started as a JSON value; otherwise it was
	// a non-JSON line that never ended.
	JSON bool
	// Sample is the start of the line (see Sample).
	Sample string
}

func (e *TooLargeError) Error() string {
	what := "JSON-RPC message"
	if !e.JSON {
		what = "non-JSON line"
	}
	return fmt.Sprintf("stdout %s exceeds the limit of %d bytes (starts %q)", what, e.Limit, e.Sample)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Noise describes one dropped non-JSON line.
type Noise struct {
	// Lines counts the lines dropped so far by this Reader, this one
	// included.
	Lines int
	// Bytes is the length of this line without its newline.
	Bytes int
	// Sample is its start (see Sample).
	Sample string
}

// Options configures a Reader.
type Options struct {
	// MaxMessageBytes bounds a message or a dropped line; zero or less means
	// no bound.
	MaxMessageBytes int
	// OnNoise, if set, is called for every dropped line, from the goroutine
	// that calls Read.
	OnNoise func(Noise)
	// OnTooLarge, if set, is called once when the limit is exceeded, before
	// Read returns the error.
	OnTooLarge func(*TooLargeError)
	// Absorb, if set, is offered every list_changed notification of at
	// most HoldBytes bytes that Next reads, with its method, from the
	// goroutine that calls Next; when it returns true the notification is
	// dropped (the caller has handled it), otherwise Next returns it. Read
	// passes every message on.
	Absorb func(method string) bool
}

type state int

const (
	stBetween state = iota // between messages: blanks pass, the next byte decides
	stValue                // inside a JSON value
	stNoise                // inside a non-JSON line
)

// Reader filters a stdio server's stdout; see the package documentation. It
// supports one reader goroutine; Err and Noise may be called from any.
type Reader struct {
	r    io.Reader
	opts Options

	rbuf *readbuf.Buffer
	// parked is r when it is a parkedReader; parkedBuf and parkedIdle
	// are the functions fill gives it (made once: a closure per read
	// would be an allocation per message), parkedLast what the read
	// before returned.
	parked     parkedReader
	parkedBuf  func() []byte
	parkedIdle func()
	parkedLast int
	buf        []byte // rbuf's current buffer
	start, end int
	rerr       error // error of the underlying reader, returned once buf is empty

	st       state
	depth    int
	deepest  int // deepest nesting of the current value
	inString bool
	escaped  bool
	size     int    // bytes of the current message or noise line
	sample   []byte // start of the current line, up to SampleBytes

	msg []byte // the value being assembled by Next

	mu       sync.Mutex
	err      error // sticky failure (a *TooLargeError)
	noise    int   // lines dropped
	absorbed int   // notifications taken by Options.Absorb
	closer   io.Closer
}

// NewReader returns a Reader over r. Close closes r when it is an io.Closer.
func NewReader(r io.Reader, opts Options) *Reader {
	g := &Reader{r: r, opts: opts, rbuf: readbuf.New(minBufSize, maxBufSize), sample: make([]byte, 0, SampleBytes)}
	if c, ok := r.(io.Closer); ok {
		g.closer = c
	}
	if pr, ok := r.(parkedReader); ok {
		g.parked, g.parkedBuf, g.parkedIdle = pr, g.parkBuf, g.parkIdle
	}
	return g
}

// Err returns the limit failure, or nil.
func (g *Reader) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// NoiseLines returns the number of non-JSON lines dropped so far.
func (g *Reader) NoiseLines() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.noise
}

// Absorbed returns the number of notifications Options.Absorb took.
func (g *Reader) Absorbed() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.absorbed
}

// Close closes the underlying reader if it can be closed.
func (g *Reader) Close() error {
	if g.closer != nil {
		return g.closer.Close()
	}
	return nil
}

// Read implements io.Reader.
func (g *Reader) Read(p []byte) (int, error) {
	if err := g.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	for n == 0 {
		if g.start == g.end {
			if g.rerr != nil {
				if g.st == stNoise && g.size > 0 {
					g.endNoise()
				}
				return 0, g.rerr
			}
			g.fill()
			continue
		}
		var err error
		n, err = g.scan(p)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// parkedReader is a reader that can say when its next read would wait
// (proc's pipes): ReadParked reads like Read into the buffer buf returns,
// and calls idle each time nothing is there yet, before it waits.
type parkedReader interface {
	ReadParked(buf func() []byte, idle func()) (int, error)
}

// fill reads into the emptied buffer. From a parkedReader it holds no
// buffer while the read waits: an idle server's Reader costs none.
func (g *Reader) fill() {
	var m int
	var err error
	if g.parked != nil {
		g.buf, g.parkedLast = nil, g.end
		m, err = g.parked.ReadParked(g.parkedBuf, g.parkedIdle)
	} else {
		g.buf = g.rbuf.Next(g.end)
		m, err = g.r.Read(g.buf)
	}
	g.start, g.end = 0, m
	if err != nil {
		g.rerr = err
	}
}

// parkBuf is the buffer of a parked read: the one sized for it, taken
// once per read, or again after parkIdle released it.
func (g *Reader) parkBuf() []byte {
	if g.buf == nil {
		g.buf = g.rbuf.Next(g.parkedLast)
	}
	return g.buf
}

// parkIdle releases the buffer while a parked read waits.
func (g *Reader) parkIdle() {
	g.buf = nil
	g.rbuf.Release()
}

// scan moves bytes from the buffer into p (messages) or drops them (noise).
func (g *Reader) scan(p []byte) (int, error) {
	limit := g.opts.MaxMessageBytes
	n := 0
	for g.start < g.end && n < len(p) {
		b := g.buf[g.start]
		switch g.st {
		case stBetween:
			switch b {
			case ' ', '\t', '\r', '\n':
				p[n] = b
				n++
				g.start++
				continue
			case '{', '[':
				g.st, g.depth, g.deepest, g.inString, g.escaped = stValue, 0, 0, false, false
			default:
				g.st = stNoise
			}
			g.size = 0
			g.sample = g.sample[:0]
		case stValue:
			g.start++
			g.size++
			g.keep(b)
			p[n] = b
			n++
			g.step(b)
			if limit > 0 && g.size > limit {
				return n, g.fail(true)
			}
		case stNoise:
			g.start++
			if b == '\n' {
				g.endNoise()
				g.st = stBetween
				continue
			}
			g.size++
			g.keep(b)
			if limit > 0 && g.size > limit {
				return n, g.fail(false)
			}
		}
	}
	return n, nil
}

// step advances the JSON nesting scanner by one byte of a value.
func (g *Reader) step(b byte) {
	if g.inString {
		switch {
		case g.escaped:
			g.escaped = false
		case b == '\\':
			g.escaped = true
		case b == '"':
			g.inString = false
		}
		return
	}
	switch b {
	case '"':
		g.inString = true
	case '{', '[':
		g.depth++
		g.deepest = max(g.deepest, g.depth)
	case '}', ']':
		g.depth--
		if g.depth <= 0 {
			g.st = stBetween
		}
	}
}

// listChangedMethods are the notifications ListChangedMethod recognizes,
// and canonicalListChanged their usual spelling, by index.
var (
	listChangedMethods = [...]string{
		"notifications/tools/list_changed",
		"notifications/resources/list_changed",
		"notifications/prompts/list_changed",
	}
	canonicalListChanged = [...]string{
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`,
	}
)

// ListChangedMethod reports whether msg is exactly one JSON-RPC 2.0
// list_changed notification (tools, resources or prompts) and returns its
// method. The message must be an object with the keys "jsonrpc" ("2.0") and
// "method", and optionally "params" (an object), and no others (key names are matched
// exactly, as go-sdk matches them); anything else, a request or a response
// included, is not one.
func ListChangedMethod(msg []byte) (string, bool) {
	if !bytes.Contains(msg, []byte("/list_changed")) {
		return "", false
	}
	for i, c := range canonicalListChanged {
		// The common spelling, without a decode.
		if string(msg) == c {
			return listChangedMethods[i], true
		}
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(msg, &fields) != nil {
		return "", false
	}
	var version, method string
	for k, v := range fields {
		var err error
		switch k {
		case "jsonrpc":
			err = json.Unmarshal(v, &version)
		case "method":
			err = json.Unmarshal(v, &method)
		case "params":
			if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '{' {
				return "", false // go-sdk would reject it: not ours to absorb
			}
		default:
			return "", false
		}
		if err != nil {
			return "", false
		}
	}
	if version != "2.0" {
		return "", false
	}
	for _, m := range listChangedMethods {
		if method == m {
			return m, true
		}
	}
	return "", false
}

func (g *Reader) keep(b byte) {
	if len(g.sample) < SampleBytes {
		g.sample = append(g.sample, b)
	}
}

func (g *Reader) endNoise() {
	g.mu.Lock()
	g.noise++
	n := Noise{Lines: g.noise, Bytes: g.size, Sample: Sample(g.sample)}
	g.mu.Unlock()
	g.size = 0
	if g.opts.OnNoise != nil {
		g.opts.OnNoise(n)
	}
}

func (g *Reader) fail(json bool) error {
	e := &TooLargeError{Limit: g.opts.MaxMessageBytes, JSON: json, Sample: Sample(g.sample)}
	g.mu.Lock()
	g.err = e
	g.mu.Unlock()
	if g.opts.OnTooLarge != nil {
		g.opts.OnTooLarge(e)
	}
	return e
}

// Sample renders the start of a line for events and logs: at most
// SampleBytes bytes of input, invalid UTF-8 replaced by U+FFFD, control
// characters (ANSI escapes included) by U+FFFD too, surrounding blanks
// trimmed.
func Sample(b []byte) string {
	if len(b) > SampleBytes {
		b = b[:SampleBytes]
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == utf8.RuneError && size <= 1:
			sb.WriteRune(utf8.RuneError)
		case r == '\t' || r == ' ':
			sb.WriteByte(' ')
		case unicode.IsControl(r):
			sb.WriteRune(utf8.RuneError)
		default:
			sb.WriteRune(r)
		}
	}
	return strings.TrimSpace(sb.String())
}
