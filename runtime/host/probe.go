package host

import (
	"context"
	"errors"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// probeRun is one health probe shared by every caller that asks while it
// runs.
type probeRun struct {
	conn    *connection
	done    chan struct{}
	healthy bool
}

// probe checks whether the server behind c still answers: ping with the probe
// timeout and, when ping fails, tools/list with the probe timeout. Either
// success means healthy. A server that answers ping with method-not-found is
// remembered as ping-less and probed with tools/list from then on. A
// connection of the stateless era (2026-07-28, era.go) has no ping: it is
// probed with tools/list alone.
func (s *server) probe(ctx context.Context, c *connection) bool {
	s.mu.Lock()
	if p := s.probing; p != nil && p.conn == c {
		s.mu.Unlock()
		select {
		case <-p.done:
			return p.healthy
		case <-ctx.Done():
			return true // the caller left; no verdict of ours
		}
	}
	p := &probeRun{conn: c, done: make(chan struct{})}
	s.probing = p
	pingless := s.pingless || s.cfg.Probe == config.ProbeToolsList || probeMethods(c.protocol)[0] != "ping"
	s.mu.Unlock()

	p.healthy = s.runProbe(c, pingless)

	s.mu.Lock()
	s.probing = nil
	s.mu.Unlock()
	close(p.done)
	return p.healthy
}

func (s *server) runProbe(c *connection, pingless bool) bool {
	timeout := s.rt.opts.ProbeTimeout
	if !pingless {
		err := s.probeRequest(c, "ping", timeout)
		if err == nil {
			s.emit(event.ProbeFinished, event.Bool("healthy", true), event.String("method", "ping"), event.String("error", ""))
			return true
		}
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound {
			s.mu.Lock()
			s.pingless = true
			s.mu.Unlock()
			s.emit(event.ProbePingUnsupported)
		}
		s.emit(event.ProbeFinished, event.Bool("healthy", false), event.String("method", "ping"), event.Err(err))
	}
	err := s.probeRequest(c, "tools/list", timeout)
	healthy := err == nil
	if healthy && !pingless {
		// Ping failed but the server answers: it drops or rejects ping.
		s.mu.Lock()
		s.pingless = true
		s.mu.Unlock()
	}
	s.emit(event.ProbeFinished, event.Bool("healthy", healthy), event.String("method", "tools/list"), event.Err(err))
	return healthy
}

// probeRequest sends one probe request (method ping or tools/list) on c,
// bounded by timeout, and emits probe.started once that bound is armed.
// When it fails because the session of a remote connection expired, it
// is sent once more, with the same bound, on the session the runtime
// initialized in its place (retryProbe): an expired session is no sign of
// an unhealthy server.
func (s *server) probeRequest(c *connection, method string, timeout time.Duration) error {
	err := s.probeSend(c, method, timeout, func() {
		s.emit(event.ProbeStarted, event.String("method", method), event.Millis("timeout_ms", timeout))
	})
	if err != nil {
		err = s.sessions.retryProbe(c, method, timeout, err, func(nc *connection) error {
			return s.probeSend(nc, method, timeout, nil)
		})
	}
	return err
}

// probeSend sends method on c, bounded by timeout on the runtime's clock.
// started (may be nil) is called once the bound is armed: a harness that
// drives the clock advances it as soon as it hears of the probe, and a
// bound armed after that advance would wait for one more.
func (s *server) probeSend(c *connection, method string, timeout time.Duration, started func()) error {
	ctx, cancel := clock.WithTimeout(c.ctx, s.rt.clock, timeout, method)
	defer cancel()
	if started != nil {
		started()
	}
	var err error
	if method == "ping" {
		err = c.cs.Ping(ctx, nil)
	} else {
		_, err = c.cs.ListTools(ctx, nil)
	}
	if err != nil && ctx.Err() != nil {
		// Timed out (or the connection ended): name that, not the SDK's
		// cancellation. Checked before cancel, which would make every
		// error look like a timeout.
		err = context.Cause(ctx)
	}
	return err
}
