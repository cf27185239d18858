package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// memServer is an in-memory MCP server a test controls: each connect
// attempt runs a fresh go-sdk server over in-memory transports.
type memServer struct {
	mu       sync.Mutex
	failNext int               // connect attempts to refuse
	block    chan struct{}     // while non-nil, every request waits on it
	initWait chan struct{}     // while non-nil, initialize waits on it
	srv      *mcp.Server       // the latest server
	tools    func(*mcp.Server) // adds tools
	// wrap, when set, wraps the server's side of each connection.
	wrap     func(mcp.Transport) mcp.Transport
	launches atomic.Int32
	sessions []*mcp.ServerSession
	conns    []mcp.Connection
}

// killable wraps a client transport so a test can cut the connection, as a
// crashed server would.
type killable struct {
	mcp.Transport
	m *memServer
}

func (k killable) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := k.Transport.Connect(ctx)
	if err == nil {
		k.m.mu.Lock()
		k.m.conns = append(k.m.conns[:0], c) // keep only the latest
		k.m.mu.Unlock()
	}
	return c, err
}

func (m *memServer) dial(ctx context.Context) (mcp.Transport, error) {
	m.launches.Add(1)
	m.mu.Lock()
	if m.failNext > 0 {
		m.failNext--
		m.mu.Unlock()
		return nil, errors.New("launch refused")
	}
	m.mu.Unlock()
	srv := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			m.mu.Lock()
			b := m.block
			if method == "initialize" {
				b = m.initWait
			}
			m.mu.Unlock()
			if b != nil && method != "notifications/initialized" {
				select {
				case <-b:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	})
	if m.tools != nil {
		m.tools(srv)
	}
	st, ct := mcp.NewInMemoryTransports()
	var server mcp.Transport = st
	if m.wrap != nil {
		server = m.wrap(st)
	}
	ss, err := srv.Connect(ctx, server, nil)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.sessions = append(m.sessions[:0], ss) // keep only the latest
	m.srv = srv
	m.mu.Unlock()
	return killable{ct, m}, nil
}

// kill ends the server side of the latest session, as a crash would.
func (m *memServer) kill() {
	m.mu.Lock()
	c := m.conns[len(m.conns)-1]
	m.mu.Unlock()
	c.Close()
}

func echoTools(srv *mcp.Server) {
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	type sleepIn struct {
		Forever bool `json:"forever,omitempty"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "hang", Description: "never returns"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ sleepIn) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
}

type memEnv struct {
	rt      *Runtime
	servers map[string]*memServer
}

// newMemRuntime makes a runtime whose servers are in-memory. It must run
// inside a synctest bubble. cfgs maps server name to extra config JSON
// fields.
func newMemRuntime(t *testing.T, cfgs map[string]string, opts Options) *memEnv {
	t.Helper()
	env := &memEnv{servers: map[string]*memServer{}}
	inline := map[string]json.RawMessage{}
	for name, extra := range cfgs {
		env.servers[name] = &memServer{tools: echoTools}
		body := `{"command":"mem"`
		if extra != "" {
			body += "," + extra
		}
		inline[name] = json.RawMessage(body + "}")
	}
	opts.Discovery.Inline = inline
	opts.Discovery.HomeDir = t.TempDir()
	opts.Discovery.Env = func(string) (string, bool) { return "", false }
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	opts.Dial = func(ctx context.Context, srv *config.Server, _ *config.Resolved) (mcp.Transport, error) {
		m := env.servers[srv.Name]
		if m == nil {
			return nil, fmt.Errorf("no mem server %q", srv.Name)
		}
		return m.dial(ctx)
	}
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	env.rt = rt
	t.Cleanup(func() {
		rt.Close(context.Background())
		checkDocumented(t, rt.Events().Events())
	})
	return env
}

func (e *memEnv) await(t *testing.T, m event.Matcher) event.Event {
	t.Helper()
	ev, err := e.rt.Events().Await(t.Context(), 0, m)
	if err != nil {
		t.Fatalf("%v\nevents:\n%s", err, e.trace())
	}
	return ev
}

func (e *memEnv) trace() string {
	var s string
	for _, ev := range e.rt.Events().Events() {
		s += ev.String() + "\n"
	}
	return s
}

func (e *memEnv) count(kind event.Kind, server string) int {
	return e.rt.Events().Count(event.Matcher{Kind: kind, Server: server})
}

// checkDocumented fails the test when an event carries an attribute the
// vocabulary (docs/TESTING.md) does not document.
func checkDocumented(t *testing.T, evs []event.Event) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range evs {
		if err := event.CheckDocumented(e); err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			t.Error(err)
		}
	}
}

// advance moves a synctest bubble's fake time forward by d once every other
// goroutine of the bubble is blocked. It waits on the runtime's own clock
// abstraction (clock.Real, whose timers inside a bubble are the bubble's
// fake time); synctest.Wait panics outside a bubble, so this can never become
// a wall-clock wait.
func advance(d time.Duration) {
	synctest.Wait()
	clock.Sleep(context.Background(), clock.Real{}, d)
}
