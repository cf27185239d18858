package main

// The host around mcp-go's client: servers, sessions, tools, calls, status
// and shutdown. Every lifecycle step is the library's; the events report what
// the driver can observe of it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/event"
)

// host holds the driver's state after start.
type host struct {
	conn *driver.Conn
	// base ends at shutdown; the servers' processes and requests live
	// under it.
	base   context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	environ  []string // the environment of stdio servers: start.env, or the driver's own
	options  driver.StartOptions
	servers  map[string]*server
	invalid  []invalidDef
	sessions map[string]bool
}

func newHost(conn *driver.Conn) *host {
	base, cancel := context.WithCancel(context.Background())
	return &host{conn: conn, base: base, cancel: cancel, servers: map[string]*server{}, sessions: map[string]bool{}}
}

// start reads the configuration; config problems are events, never errors.
// (driver.Conn refused a virtual clock, which the driver does not announce:
// mcp-go's timers cannot be injected.)
func (h *host) start(_ context.Context, p *driver.StartParams) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.Options != nil {
		h.options = *p.Options
	}
	h.environ = p.Environ()
	defs, invalid := loadConfig(p, h.conn)
	for _, d := range defs {
		h.servers[d.Name] = &server{h: h, def: d, state: "disconnected", stderr: &tail{}}
		if !d.Enabled {
			h.servers[d.Name].state = "disabled"
			h.conn.Emit(event.ServerDisabled, d.Name, "", map[string]any{"file": d.Source.File})
		}
	}
	h.invalid = invalid
	return nil
}

// sessionOpen connects every enabled server not connected yet, in parallel,
// and reports them once each settled (no startup gate).
func (h *host) sessionOpen(_ context.Context, p *driver.SessionParams) (driver.StartReport, error) {
	h.mu.Lock()
	if h.sessions[p.Session] {
		h.mu.Unlock()
		return driver.StartReport{}, driver.Errorf(driver.CodeSessionExists, "session %q is open", p.Session)
	}
	h.sessions[p.Session] = true
	servers := h.sortedServers()
	h.mu.Unlock()
	t0 := h.conn.Now()
	h.conn.Emit(event.SessionOpened, "", p.Session, nil)
	var wg sync.WaitGroup
	for _, s := range servers {
		if !s.def.Enabled {
			continue
		}
		wg.Go(func() { s.ensureConnected(p.Session) })
	}
	wg.Wait()
	rep := driver.StartReport{Errors: map[string]string{}}
	for _, s := range servers {
		if !s.def.Enabled {
			continue
		}
		st, errText := s.snapshot()
		if st == "connected" {
			rep.Ready = append(rep.Ready, s.def.Name)
		} else {
			rep.Failed = append(rep.Failed, s.def.Name)
			rep.Errors[s.def.Name] = errText
		}
	}
	for _, bad := range h.invalid {
		rep.Failed = append(rep.Failed, bad.Name)
		rep.Errors[bad.Name] = bad.Error
	}
	sort.Strings(rep.Failed)
	rep.ElapsedMs = (h.conn.Now() - t0).Milliseconds()
	return rep, nil
}

// sortedServers returns the configured servers by name; h.mu is held.
func (h *host) sortedServers() []*server {
	out := make([]*server, 0, len(h.servers))
	for _, s := range h.servers {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *server) int { return strings.Compare(a.def.Name, b.def.Name) })
	return out
}

func (h *host) sessionClose(_ context.Context, p *driver.SessionParams) error {
	h.mu.Lock()
	if !h.sessions[p.Session] {
		h.mu.Unlock()
		return driver.Errorf(driver.CodeUnknownSession, "no open session %q", p.Session)
	}
	delete(h.sessions, p.Session)
	h.mu.Unlock()
	h.conn.Emit(event.SessionClosed, "", p.Session, nil)
	return nil
}

// exposedTools returns the tools of every connected server, sorted by
// exposed name.
func (h *host) exposedTools() []driver.Tool {
	h.mu.Lock()
	servers := h.sortedServers()
	h.mu.Unlock()
	var out []driver.Tool
	for _, s := range servers {
		out = append(out, s.exposed()...)
	}
	slices.SortFunc(out, func(a, b driver.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (h *host) toolsList(_ context.Context, p *driver.SessionParams) ([]driver.Tool, error) {
	h.mu.Lock()
	open := h.sessions[p.Session]
	h.mu.Unlock()
	if !open {
		return nil, driver.Errorf(driver.CodeUnknownSession, "no open session %q", p.Session)
	}
	return h.exposedTools(), nil
}

// toolCall accepts a call in an open session; driver.Conn runs it after
// the accepted response and writes its call_result.
func (h *host) toolCall(_ context.Context, p *driver.ToolCallParams) (driver.CallFunc, error) {
	h.mu.Lock()
	open := h.sessions[p.Session]
	h.mu.Unlock()
	if !open {
		return nil, driver.Errorf(driver.CodeUnknownSession, "no open session %q", p.Session)
	}
	return func(ctx context.Context) (driver.CallOutcome, error) { return h.runCall(ctx, p) }, nil
}

// runCall calls the tool through mcp-go. ctx ends when the harness cancels
// the call or the driver shuts down: the call is then aborted.
func (h *host) runCall(ctx context.Context, p *driver.ToolCallParams) (driver.CallOutcome, error) {
	out := driver.CallOutcome{Tool: p.Tool}
	fail := func(code driver.OutcomeCode, msg string) (driver.CallOutcome, error) {
		out.Code, out.Text, out.OriginalChars = string(code), msg, len([]rune(msg))
		return out, driver.Errorf(code, "%s", msg)
	}
	var t *driver.Tool
	for _, x := range h.exposedTools() {
		if x.Name == p.Tool {
			t = &x
			break
		}
	}
	if t == nil {
		return fail(driver.OutcomeUnknownTool, fmt.Sprintf("no tool %q in session %q", p.Tool, p.Session))
	}
	h.mu.Lock()
	s := h.servers[t.Server]
	h.mu.Unlock()
	out.Server = s.def.Name
	cl := s.current()
	if cl == nil {
		return fail(driver.OutcomeConnectionLost, "the server is not connected")
	}
	// The tool timeout is the host's context deadline: the call's own
	// timeoutMs, else the server's toolTimeout, else options.toolTimeoutMs;
	// mcp-go has no default request timeout.
	var timeout int64
	switch {
	case p.TimeoutMs != nil:
		timeout = *p.TimeoutMs
	case s.def.ToolTimeoutMs != nil:
		timeout = *s.def.ToolTimeoutMs
	case h.options.ToolTimeoutMs != nil:
		timeout = *h.options.ToolTimeoutMs
	}
	callCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, time.Duration(timeout)*time.Millisecond)
		defer cancel()
	}
	callName := p.Session + "-" + p.CallID
	h.conn.Emit(event.ToolCallStarted, s.def.Name, p.Session, map[string]any{"call": callName, "tool": t.Name})
	finish := func(outcome string, code driver.OutcomeCode) {
		h.conn.Emit(event.ToolCallFinished, s.def.Name, p.Session, map[string]any{"call": callName, "tool": t.Name, "outcome": outcome, "code": string(code)})
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = t.Tool
	if len(p.Arguments) > 0 {
		var args any
		if err := json.Unmarshal(p.Arguments, &args); err != nil {
			finish("error", "")
			return fail(driver.OutcomeFailed, fmt.Sprintf("arguments: %v", err))
		}
		req.Params.Arguments = args
	}
	res, err := cl.CallTool(callCtx, req)
	switch {
	case ctx.Err() != nil:
		// tool.cancel or shutdown.
		finish("aborted", "")
		out.Code = string(driver.OutcomeAborted)
		return out, driver.Errorf(driver.OutcomeAborted, "cancelled by the caller")
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		h.conn.Emit(event.ToolTimeout, s.def.Name, p.Session, map[string]any{"call": callName, "tool": t.Name, "timeout_ms": timeout})
		finish("error", driver.OutcomeToolTimeout)
		return fail(driver.OutcomeToolTimeout, err.Error())
	case err != nil && errors.Is(err, transport.ErrTransportClosed):
		// The only sign mcp-go gives of a dead stdio connection.
		s.lost(err)
		finish("error", driver.OutcomeConnectionLost)
		return fail(driver.OutcomeConnectionLost, err.Error())
	case err != nil:
		// What the agent sees is mcp-go's error message.
		finish("error", "")
		return fail(driver.OutcomeFailed, err.Error())
	}
	text := flatten(res)
	out.Text, out.IsError, out.OriginalChars = text, res.IsError, len([]rune(text))
	if res.IsError {
		finish("tool_error", "")
	} else {
		finish("ok", "")
	}
	return out, nil
}

// status lists every configured server; driver.Conn sorts them by name.
func (h *host) status(context.Context) ([]driver.ServerStatus, error) {
	h.mu.Lock()
	servers := h.sortedServers()
	invalid := slices.Clone(h.invalid)
	refs := len(h.sessions)
	h.mu.Unlock()
	var out []driver.ServerStatus
	for _, s := range servers {
		out = append(out, s.status(refs))
	}
	for _, bad := range invalid {
		out = append(out, driver.ServerStatus{Name: bad.Name, State: "failed", Error: bad.Error, Source: bad.Source, Shared: true})
	}
	return out, nil
}

// shutdown closes the sessions and every client (mcp-go's Close), and
// writes runtime.closed. driver.Conn has aborted the calls in flight and
// waited for them, and calls it once.
func (h *host) shutdown(context.Context) {
	h.mu.Lock()
	sessions := make([]string, 0, len(h.sessions))
	for s := range h.sessions {
		sessions = append(sessions, s)
	}
	h.sessions = map[string]bool{}
	servers := h.sortedServers()
	h.mu.Unlock()
	sort.Strings(sessions)
	for _, s := range sessions {
		h.conn.Emit(event.SessionClosed, "", s, nil)
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.close)
	}
	wg.Wait()
	h.cancel()
	h.conn.Emit(event.RuntimeClosed, "", "", nil)
}

// server is one configured server and its mcp-go client.
type server struct {
	h   *host
	def *serverDef

	connectMu sync.Mutex // one connect at a time

	mu          sync.Mutex
	state       string
	err         string
	cl          *client.Client
	cmd         *exec.Cmd
	pid         int
	tools       []driver.Tool
	connectedAt time.Duration
	stderr      *tail
	closed      bool
}

// snapshot returns the state and error.
func (s *server) snapshot() (state, errText string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.err
}

// current returns the connected client, or nil.
func (s *server) current() *client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != "connected" {
		return nil
	}
	return s.cl
}

// exposed returns the server's tools while it is connected.
func (s *server) exposed() []driver.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != "connected" {
		return nil
	}
	return slices.Clone(s.tools)
}

// ensureConnected connects the server once; a server that is connected
// announces its tools to the new session, one that failed stays failed (no
// restart policy: mcp-go has none).
func (s *server) ensureConnected(session string) {
	s.connectMu.Lock()
	defer s.connectMu.Unlock()
	s.mu.Lock()
	state, closed := s.state, s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return
	case state == "connected":
		s.announce(session)
		return
	case state != "disconnected":
		return
	}
	if err := s.connect(); err != nil {
		return
	}
	s.h.mu.Lock()
	sessions := make([]string, 0, len(s.h.sessions))
	for name := range s.h.sessions {
		sessions = append(sessions, name)
	}
	s.h.mu.Unlock()
	sort.Strings(sessions)
	for _, name := range sessions {
		s.announce(name)
	}
}

// announce emits tools.registered for one session.
func (s *server) announce(session string) {
	tools := s.exposed()
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	s.h.conn.Emit(event.ToolsRegistered, s.def.Name, session, map[string]any{"tools": int64(len(tools)), "deferred": false, "names": strings.Join(names, ",")})
}

// newClient builds the mcp-go client of the server's transport. For stdio
// the command is built as mcp-go's default does (exec.CommandContext, the
// environment plus the server's env, no process group) through
// transport.WithCommandFunc, which only lets the driver read the pid.
func (s *server) newClient(ctx context.Context) (*client.Client, error) {
	d := s.def
	switch d.Transport {
	case "http":
		t, err := transport.NewStreamableHTTP(d.URL, transport.WithHTTPHeaders(d.Headers))
		if err != nil {
			return nil, fmt.Errorf("streamable http transport: %w", err)
		}
		return client.NewClient(t), nil
	case "sse":
		cl, err := client.NewSSEMCPClient(d.URL, client.WithHeaders(d.Headers))
		if err != nil {
			return nil, fmt.Errorf("sse transport: %w", err)
		}
		return cl, nil
	}
	env := make([]string, 0, len(d.Env))
	for k, v := range d.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	s.h.mu.Lock()
	base := s.h.environ
	s.h.mu.Unlock()
	cmdFunc := func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, command, args...)
		cmd.Env = slices.Concat(base, env)
		cmd.Dir = d.Cwd
		s.mu.Lock()
		s.cmd = cmd
		s.mu.Unlock()
		return cmd, nil
	}
	t := transport.NewStdioWithOptions(d.Command, env, d.Args,
		transport.WithCommandFunc(cmdFunc),
		transport.WithCommandStderrWriter(s.stderr))
	return client.NewClient(t), nil
}

// connect runs one connect attempt: Start (the process), Initialize
// (server/discover, then initialize when the server is not of the modern
// era) and ListTools (every page), bounded by the server's "timeout".
func (s *server) connect() error {
	d := s.def
	s.mu.Lock()
	s.state, s.err, s.pid = "connecting", "", 0
	s.mu.Unlock()
	s.h.conn.Emit(event.ServerConnecting, d.Name, "", map[string]any{"transport": d.Transport, "attempt": int64(0), "timeout_ms": d.TimeoutMs})
	ctx := s.h.base
	cl, err := s.newClient(ctx)
	if err == nil {
		s.mu.Lock()
		s.cl = cl
		s.mu.Unlock()
		// The process lives under the driver's base context, not the
		// connect deadline.
		err = cl.Start(ctx)
	}
	if err == nil && d.Transport == "stdio" {
		s.mu.Lock()
		if s.cmd != nil && s.cmd.Process != nil {
			s.pid = s.cmd.Process.Pid
		}
		pid := s.pid
		s.mu.Unlock()
		s.h.conn.Emit(event.ProcessStarted, d.Name, "", map[string]any{"pid": int64(pid), "command": d.Command})
	}
	var tools []mcp.Tool
	if err == nil {
		cctx := ctx
		if d.TimeoutMs > 0 {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(ctx, time.Duration(d.TimeoutMs)*time.Millisecond)
			defer cancel()
		}
		req := mcp.InitializeRequest{}
		req.Params.ClientInfo = mcp.Implementation{Name: "mcplife-driver-mcp-go", Version: "0.1.0"}
		if _, err = cl.Initialize(cctx, req); err == nil {
			var res *mcp.ListToolsResult
			if res, err = cl.ListTools(cctx, mcp.ListToolsRequest{}); err == nil {
				tools = res.Tools
			}
		}
		if err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("connect timed out after %dms: %w", d.TimeoutMs, err)
		}
	}
	if err != nil {
		// stderr arrives on its own pipe: give it a moment to drain.
		time.Sleep(20 * time.Millisecond)
		stderr := s.stderr.String()
		msg := err.Error()
		s.mu.Lock()
		s.state, s.err = "failed", msg
		if stderr != "" {
			s.err += "; stderr: " + stderr
		}
		s.mu.Unlock()
		s.h.conn.Emit(event.ServerFailed, d.Name, "", map[string]any{"transport": d.Transport, "error": msg, "stderr": stderr})
		s.stop()
		return err
	}
	exposed := make([]driver.Tool, 0, len(tools))
	for _, t := range tools {
		b, _ := json.Marshal(t)
		var raw struct {
			InputSchema any `json:"inputSchema"`
		}
		_ = json.Unmarshal(b, &raw)
		schema, _ := json.Marshal(bridge.ConvertSchema(raw.InputSchema))
		exposed = append(exposed, driver.Tool{
			Name: bridge.ToolName(d.Name, t.Name), Server: d.Name, Tool: t.Name, Description: t.Description,
			RequiresApproval: d.RequiresApproval, InputSchema: schema,
		})
	}
	s.mu.Lock()
	s.state, s.tools, s.connectedAt = "connected", exposed, s.h.conn.Now()
	s.mu.Unlock()
	s.h.conn.Emit(event.ServerConnected, d.Name, "", map[string]any{"transport": d.Transport, "attempt": int64(0), "tools": int64(len(exposed)), "protocol": cl.ProtocolVersion()})
	return nil
}

// lost records a connection mcp-go reported closed (a request failed with
// transport.ErrTransportClosed). mcp-go does not stop the process; neither
// does the driver (no policy of its own).
func (s *server) lost(err error) {
	s.mu.Lock()
	if s.state != "connected" {
		s.mu.Unlock()
		return
	}
	n := len(s.tools)
	s.state, s.err, s.tools = "failed", err.Error(), nil
	s.mu.Unlock()
	s.h.conn.Emit(event.TransportClosed, s.def.Name, "", map[string]any{"transport": s.def.Transport, "error": err.Error()})
	s.h.mu.Lock()
	sessions := make([]string, 0, len(s.h.sessions))
	for name := range s.h.sessions {
		sessions = append(sessions, name)
	}
	s.h.mu.Unlock()
	sort.Strings(sessions)
	for _, name := range sessions {
		s.h.conn.Emit(event.ToolsUnregistered, s.def.Name, name, map[string]any{"tools": int64(n), "reason": "connection lost"})
	}
}

// close stops the server at shutdown.
func (s *server) close() {
	s.connectMu.Lock()
	defer s.connectMu.Unlock()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
}

// stop closes the client the library's way (Stdio.Close: stdin closed,
// 2 s, SIGTERM to the child, 3 s, SIGKILL) and reports the exit it reaped.
func (s *server) stop() {
	s.mu.Lock()
	cl, cmd, pid := s.cl, s.cmd, s.pid
	s.cl = nil
	s.mu.Unlock()
	if cl == nil {
		return
	}
	if pid != 0 {
		s.h.conn.Emit(event.ProcessSignaled, s.def.Name, "", map[string]any{"pid": int64(pid), "step": "stdin-closed"})
	}
	if err := cl.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "[%s] close: %v\n", s.def.Name, err)
	}
	if pid != 0 && cmd != nil {
		status := "running"
		if ps := cmd.ProcessState; ps != nil {
			status = exitStatus(ps)
		}
		s.h.conn.Emit(event.ProcessExited, s.def.Name, "", map[string]any{"pid": int64(pid), "status": status, "planned": true})
	}
}

// status is the server's entry of the status result.
func (s *server) status(sessions int) driver.ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := driver.ServerStatus{
		Name: s.def.Name, State: s.state, Transport: s.def.Transport, Tools: len(s.tools),
		Error: s.err, Stderr: s.stderr.String(), Source: s.def.Source, Shared: true, Policy: "never",
	}
	if s.state == "connected" {
		at := s.connectedAt.Milliseconds()
		st.ConnectedAtMs, st.Refs, st.PID = &at, sessions, s.pid
	}
	return st
}
