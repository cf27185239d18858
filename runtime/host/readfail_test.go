package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/proc"
)

// TestHandshakeNamesReadFailure: when a stdio server's connection broke on
// a reply it could not read, a failed handshake (and a connection that
// ended after it) names that failure, even
// when the request saw the exit watch's cancellation first (the server
// exits on the stdin the runtime closed after the failure: scenario
// 131-deep-schema flaked that way under load). Only a real read failure
// counts: the end of the stream, a read's own cancellation and reads after
// Close leave the exit as the cause.
func TestHandshakeNamesReadFailure(t *testing.T) {
	p, err := proc.Start(proc.Spec{Command: "true"}, clock.Real{})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	ctx := context.Background()
	canceled := fmt.Errorf("calling %q: %w", "tools/list", context.Canceled)
	depth := errors.New("unmarshaling jsonrpc message: json: exceeded maximum nesting depth of 1000")

	newTransport := func(reads ...func(*strayConn)) *strayTransport {
		st := &strayTransport{}
		sc := &strayConn{Connection: nopConn{}, pending: map[jsonrpc.ID]struct{}{}}
		for _, r := range reads {
			r(sc)
		}
		st.conn.Store(sc)
		return st
	}
	readFails := func(err error) func(*strayConn) {
		return func(sc *strayConn) { sc.noteReadFailure(ctx, err) }
	}
	cancelledCtx, cancel := context.WithCancel(ctx)
	cancel()

	for _, c := range []struct {
		name   string
		st     *strayTransport
		err    error
		want   string
		wantIs error
	}{
		{"cancelled request, read failure", newTransport(readFails(depth)), canceled, "reading from the server failed: " + depth.Error(), depth},
		{"request failed with the read failure", newTransport(readFails(depth)), fmt.Errorf("calling %q: %w", "tools/list", depth), `calling "tools/list": ` + depth.Error(), depth},
		{"the first failure wins", newTransport(readFails(depth), readFails(errors.New("later"))), canceled, depth.Error(), depth},
		{"no read failure", newTransport(), canceled, "server process exited during the handshake (exit status 0)", nil},
		{"end of stream", newTransport(readFails(io.EOF), readFails(fmt.Errorf("cut: %w", io.ErrUnexpectedEOF))), canceled, "server process exited during the handshake", nil},
		{"the read's own cancellation", newTransport(func(sc *strayConn) { sc.noteReadFailure(cancelledCtx, errors.New("read interrupted")) }), canceled, "server process exited during the handshake", nil},
		{"after Close", newTransport(func(sc *strayConn) { sc.Close(); sc.noteReadFailure(ctx, depth) }), canceled, "server process exited during the handshake", nil},
	} {
		got := failedAttempt{ctx: ctx, err: c.err, proc: p, stray: c.st}.cause(true)
		if !strings.Contains(got.Error(), c.want) {
			t.Errorf("%s: %q, want it to contain %q", c.name, got, c.want)
		}
		if c.wantIs != nil && !errors.Is(got, c.wantIs) {
			t.Errorf("%s: %q does not wrap the read failure", c.name, got)
		}
		if errors.Is(got, context.Canceled) || strings.Contains(got.Error(), "context canceled") {
			t.Errorf("%s: %q names the runtime's own cancellation (or reads as the caller's abort)", c.name, got)
		}
	}
	// A live connection that ended: the read failure is named over the exit
	// it caused, kept when the cause already is it, ignored without a
	// process.
	exited := errors.New("server process exited (exit status 0)")
	if got := withReadFailure(exited, readFailure(p, newTransport(readFails(depth)))); !errors.Is(got, depth) || !strings.HasPrefix(got.Error(), "reading from the server failed: ") {
		t.Errorf("ended connection: %q, want the read failure named", got)
	}
	if got := withReadFailure(depth, readFailure(p, newTransport(readFails(depth)))); got != depth {
		t.Errorf("cause already the read failure: %q", got)
	}
	if got := withReadFailure(exited, readFailure(p, newTransport())); got != exited {
		t.Errorf("no read failure: %q", got)
	}
	if got := withReadFailure(exited, readFailure(nil, newTransport(readFails(depth)))); got != exited {
		t.Errorf("without a process: %q", got)
	}
	if got := withReadFailure(exited, readFailure(p, nil)); got != exited {
		t.Errorf("without a wrapped transport: %q", got)
	}
	// Not a stdio server: no read failure, whatever the connection saw.
	if got := (failedAttempt{ctx: ctx, err: canceled, stray: newTransport(readFails(depth))}).cause(false); errors.Is(got, depth) {
		t.Errorf("without a process: %q names the read failure", got)
	}
}

// nopConn is a connection that does nothing.
type nopConn struct{}

func (nopConn) Read(context.Context) (jsonrpc.Message, error) { return nil, io.EOF }
func (nopConn) Write(context.Context, jsonrpc.Message) error  { return nil }
func (nopConn) Close() error                                  { return nil }
func (nopConn) SessionID() string                             { return "" }
