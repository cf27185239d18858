package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcplife/mcplife/runtime/wire"
)

// MaxServerRequests bounds the requests a server may have in flight to the
// client (ping, sampling, elicitation, roots/list) on one connection: read,
// and not yet answered (stdio and SSE: here; streamable HTTP:
// inflight_http.go). go-sdk queues every request it
// reads and answers them one by one, so a server that sends requests
// faster than their answers are written (or never reads them) would grow
// the queue, and the goroutines blocked on writing the answers, without
// bound: 300,000 pings took 2.2 GB in 15 s. A real server waits for its
// answers; 256 leaves room for many parallel sampling or elicitation
// requests.
const MaxServerRequests = 256

// ErrTooManyServerRequests is matched (errors.Is) by every
// *ServerRequestsError.
var ErrTooManyServerRequests = errors.New("too many server requests in flight")

// ServerRequestsError is the read failure of a connection whose server
// went past MaxServerRequests.
type ServerRequestsError struct {
	// Limit is MaxServerRequests.
	Limit int
	// Method is the method of the request that went past the limit.
	Method string
}

func (e *ServerRequestsError) Error() string {
	return fmt.Sprintf("the server sent more than %d requests to the client without waiting for their answers (the last %q); the connection is closed", e.Limit, wire.Sample([]byte(e.Method)))
}

// Is makes errors.Is(err, ErrTooManyServerRequests) true.
func (e *ServerRequestsError) Is(target error) bool { return target == ErrTooManyServerRequests }

// admit counts a request the server sent. Past maxIncoming requests in
// flight it closes the connection and returns the *ServerRequestsError that
// Read returns in place of the request: go-sdk then fails the calls in
// flight and ends the session, and closing the connection releases the
// answers blocked on writing to a server that does not read them (go-sdk
// would wait for them forever before closing it itself).
func (c *strayConn) admit(req *jsonrpc.Request) error {
	if !req.ID.IsValid() || c.maxIncoming <= 0 {
		return nil // a notification gets no answer
	}
	c.mu.Lock()
	if c.flooded {
		c.mu.Unlock()
		return &ServerRequestsError{Limit: c.maxIncoming, Method: req.Method}
	}
	c.incoming[req.ID] = struct{}{}
	over := len(c.incoming) > c.maxIncoming
	if over {
		c.flooded = true
		clear(c.incoming)
	}
	c.mu.Unlock()
	if !over {
		return nil
	}
	_ = c.Connection.Close()
	return &ServerRequestsError{Limit: c.maxIncoming, Method: req.Method}
}

// writeAnswer writes the client's answer to a server request, and counts
// the request as answered once the write is over, whatever its outcome.
func (c *strayConn) writeAnswer(ctx context.Context, resp *jsonrpc.Response) error {
	err := c.Connection.Write(ctx, resp)
	c.mu.Lock()
	delete(c.incoming, resp.ID)
	c.mu.Unlock()
	return err
}
