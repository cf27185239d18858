package host

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mcplife/mcplife/runtime/proc"
)

// A connection can break on a message it cannot read: a reply too large for
// MaxMessageBytes, or one go-sdk refuses to decode (a tool schema nested
// thousands deep). go-sdk then fails the request in flight with that error
// and closes the connection, which closes the server's stdin, and a server
// that exits on a closed stdin does so at once. During the handshake the
// runtime's exit watch cancels the connect on that exit, and the request
// can see the cancellation before its own error: the server would be
// reported as exited for no reason, its real failure lost. So the
// connection remembers the first read failure, and a failed handshake
// (failedAttempt.cause, connect.go) and a connection that ended (connection.watch) name it rather
// than the exit it caused.

// noteReadFailure remembers err as the connection's read failure when it is
// the first, is not the end of the stream (an exit or a crash, which the
// exit status explains) and did not come from the read's own cancellation
// or from closing the connection.
func (c *strayConn) noteReadFailure(ctx context.Context, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	if !c.closed && c.readErr == nil {
		c.readErr = err
	}
	c.mu.Unlock()
}

// Close implements mcp.Connection; read failures after it are the close's.
func (c *strayConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.Connection.Close()
}

// readFailure returns the read failure of a stdio server's connection, t
// wrapping its transport, or nil: for other transports the exit watch that
// races it does not exist.
func readFailure(p *proc.Process, t *strayTransport) error {
	if p == nil || t == nil {
		return nil
	}
	c := t.conn.Load()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// withReadFailure names rf, the connection's read failure, as the cause
// instead of err, unless err already is it or there was none.
func withReadFailure(err, rf error) error {
	if rf == nil || errors.Is(err, rf) {
		return err
	}
	return fmt.Errorf("reading from the server failed: %w", rf)
}
