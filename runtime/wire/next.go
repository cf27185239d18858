package wire

import (
	"bytes"
	"errors"
	"io"
)

// Next returns the next JSON value on stdout, whole, in a slice of its own:
// non-JSON lines are dropped (Options.OnNoise), list_changed notifications
// that Options.Absorb takes are dropped, and Options.MaxMessageBytes
// applies, exactly as through Read. At the end of stdout it returns the
// source's error (io.EOF), or io.ErrUnexpectedEOF when a value was cut off.
// Next and Read must not both be used on one Reader.
func (g *Reader) Next() ([]byte, error) {
	if err := g.Err(); err != nil {
		return nil, err
	}
	limit := g.opts.MaxMessageBytes
	for {
		if g.start == g.end {
			if g.rerr != nil {
				return nil, g.endOfInput()
			}
			g.fill()
			continue
		}
		switch g.st {
		case stBetween:
			switch g.buf[g.start] {
			case ' ', '\t', '\r', '\n':
				g.start++
				continue
			case '{', '[':
				g.st, g.depth, g.deepest, g.inString, g.escaped = stValue, 0, 0, false, false
				g.msg = g.msg[:0]
			default:
				g.st = stNoise
			}
			g.size = 0
			g.sample = g.sample[:0]
		case stValue:
			i := g.start
			for i < g.end && g.st == stValue {
				g.step(g.buf[i])
				i++
			}
			chunk := g.buf[g.start:i]
			g.start = i
			g.size += len(chunk)
			g.keepAll(chunk)
			if limit > 0 && g.size > limit {
				g.msg = nil
				return nil, g.fail(true)
			}
			g.msg = append(g.msg, chunk...)
			if g.st == stBetween {
				if msg, ok := g.complete(); ok {
					return msg, nil
				}
			}
		case stNoise:
			seg := g.buf[g.start:g.end]
			j := bytes.IndexByte(seg, '\n')
			if j >= 0 {
				seg = seg[:j]
			}
			g.size += len(seg)
			g.keepAll(seg)
			if limit > 0 && g.size > limit {
				return nil, g.fail(false)
			}
			g.start += len(seg)
			if j >= 0 {
				g.start++ // the newline
				g.endNoise()
				g.st = stBetween
			}
		}
	}
}

// complete handles the value just finished in g.msg: an absorbed
// notification is dropped (ok false) and its buffer reused; anything else
// is handed over, buffer and all, so that no copy is made and an idle
// connection holds no message buffer.
func (g *Reader) complete() (msg []byte, ok bool) {
	if g.opts.Absorb != nil && len(g.msg) <= HoldBytes && g.msg[0] == '{' {
		if m, isLC := ListChangedMethod(g.msg); isLC && g.opts.Absorb(m) {
			g.mu.Lock()
			g.absorbed++
			g.mu.Unlock()
			return nil, false
		}
	}
	msg, g.msg = g.msg, nil
	return msg, true
}

// endOfInput is Next's error once the source is exhausted.
func (g *Reader) endOfInput() error {
	switch {
	case g.st == stNoise && g.size > 0:
		g.endNoise()
		g.st = stBetween
	case g.st == stValue:
		g.msg = nil
		if errors.Is(g.rerr, io.EOF) {
			return io.ErrUnexpectedEOF
		}
	}
	return g.rerr
}

// keepAll keeps the start of a line for its sample.
func (g *Reader) keepAll(b []byte) {
	if room := SampleBytes - len(g.sample); room > 0 {
		g.sample = append(g.sample, b[:min(room, len(b))]...)
	}
}
