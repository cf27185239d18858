package host

import (
	"context"
	"net"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerClient returns an HTTP client of its own (so its sockets can be
// closed by force, see socketSet) that adds headers to every request and,
// when rc is not nil, handles what a remote server's HTTP answers mean
// (remote.go).
func headerClient(headers map[string]string, sockets *socketSet, rc *remoteConn) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{}
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			sockets.add(c)
		}
		return c, err
	}
	var rt http.RoundTripper = base
	if rc != nil {
		rt = &remoteTransport{rc: rc, base: base}
	}
	if len(headers) == 0 {
		return &http.Client{Transport: rt}
	}
	return &http.Client{Transport: headerTransport{headers: headers, base: rt}}
}

// socketSet tracks the sockets of one remote connection so that closing a
// session with a wedged server (go-sdk waits on its DELETE) can be bounded:
// closing the sockets fails whatever waits on them.
type socketSet struct {
	mu    sync.Mutex
	conns []net.Conn
	shut  bool
}

func (s *socketSet) add(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shut {
		c.Close()
		return
	}
	s.conns = append(s.conns, c)
}

// closeAll closes every socket, and any opened later.
func (s *socketSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shut = true
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// longLived makes a transport whose connection outlives the context its
// Connect is called with. go-sdk's SSE client binds its event stream to that
// context, which is the connect timeout here; the stream must instead live as
// long as the server (life). The connect context still bounds the attempt.
type longLived struct {
	inner mcp.Transport
	life  context.Context
}

func (l longLived) Connect(ctx context.Context) (mcp.Connection, error) {
	cctx, cancel := context.WithCancel(l.life)
	stop := context.AfterFunc(ctx, cancel)
	conn, err := l.inner.Connect(cctx)
	if !stop() {
		// The connect context ended during the attempt.
		if err == nil {
			conn.Close()
		}
		cancel()
		return nil, context.Cause(ctx)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &cancelOnClose{Connection: conn, cancel: cancel}, nil
}

// cancelOnClose releases the connection's context when it is closed.
type cancelOnClose struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
