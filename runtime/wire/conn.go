package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport is an [mcp.Transport] over a stdio server's filtered stdout and
// its stdin, for one connection. It replaces go-sdk's IOTransport for
// servers behind a Reader:
//
//   - Messages come whole from [Reader.Next], which already knows where each
//     JSON value ends; go-sdk's IOTransport scans every message a second
//     time with an encoding/json.Decoder whose buffer grows to the largest
//     message and never shrinks (a server that once sent 15 MiB left 32 MiB
//     on the heap), and tries every message as a batch before decoding it
//     as one message.
//   - Each message is decoded as go-sdk's own jsonrpc.DecodeMessage decodes
//     it, with the same parser and flags, but without the 32 KiB buffer
//     go-sdk's decoder allocates per message; what go-sdk refuses (a message
//     nested past 1,000 levels, a wrong version tag) goes to
//     jsonrpc.DecodeMessage itself, so acceptance and errors are unchanged.
//   - A batch (a JSON array) from the server is decoded into its messages,
//     delivered in order; replies to requests in it are written one by one.
//
// Closing the connection closes Stdout and then Stdin, as IOTransport does.
type Transport struct {
	// Stdout is the server's filtered stdout.
	Stdout *Reader
	// Stdin is the server's stdin.
	Stdin io.WriteCloser
}

// Connect implements mcp.Transport. Call it once.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	return &conn{r: t.Stdout, w: t.Stdin, closed: make(chan struct{})}, nil
}

// conn is the mcp.Connection of a Transport. Read reads and decodes in the
// caller's goroutine (go-sdk reads from one goroutine at a time): a
// read-ahead goroutine would cost every connection a goroutine and every
// message a hand-off between goroutines.
type conn struct {
	r *Reader
	w io.WriteCloser

	closed   chan struct{}
	close    sync.Once
	closeErr error

	queue []jsonrpc.Message // rest of a batch; only Read uses it
	err   error             // the read error, once seen; only Read uses it

	wmu sync.Mutex
}

// decode decodes one message or a batch whose objects and arrays nest
// depth levels deep.
func decode(raw []byte, depth int) ([]jsonrpc.Message, error) {
	if raw[0] != '[' {
		msg, err := decodeMessage(raw, depth)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{msg}, nil
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(raw, &batch); err != nil {
		return nil, fmt.Errorf("unmarshaling a batch: %w", err)
	}
	if len(batch) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, len(batch))
	for i, b := range batch {
		// An element nests one level less than its batch, or less.
		msg, err := decodeMessage(b, depth-1)
		if err != nil {
			return nil, err
		}
		msgs[i] = msg
	}
	return msgs, nil
}

// Read implements mcp.Connection. After Close it returns io.EOF; after a
// read error, that error. A read blocked on the server's stdout ends when
// Close closes it; ctx is checked before the read, not during it (go-sdk
// reads with a context that is never done, and ends its reads by closing
// the connection).
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		msg := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		if len(c.queue) == 0 {
			c.queue = nil
		}
		return msg, nil
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.isClosed() {
		return nil, io.EOF
	}
	raw, err := c.r.Next()
	var msgs []jsonrpc.Message
	if err == nil {
		msgs, err = decode(raw, c.r.deepest)
	}
	if err != nil {
		if c.isClosed() {
			// Close interrupted the read: the error is the closed pipe's.
			return nil, io.EOF
		}
		c.err = err
		return nil, err
	}
	if len(msgs) > 1 {
		// Not msgs[1:] when there is one: an empty slice of the array
		// would keep msgs[0], a message of any size, reachable until the
		// next batch (go-sdk's IOTransport keeps the last message that
		// way).
		c.queue = msgs[1:]
	}
	return msgs[0], nil
}

func (c *conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// Write implements mcp.Connection: one line per message.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(data)
	return err
}

// Close implements mcp.Connection: it closes stdout, then stdin; later
// calls return the first call's error.
func (c *conn) Close() error {
	c.close.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: stdio has no session id.
func (c *conn) SessionID() string { return "" }
