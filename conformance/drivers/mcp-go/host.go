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
	w *wire
	// base ends at shutdown; the servers' processes and requests live
	// under it.
	base   context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	started  bool
	closing  bool
	env      map[string]string // start.env; nil: the driver's own
	options  driver.StartOptions
	servers  map[string]*server
	invalid  []invalidDef
	sessions map[string]bool
	calls    map[string]*call
}

// call is one accepted tool.call.
type call struct {
	cancel context.CancelFunc
	done   chan struct{}
	// aborted is set by tool.cancel (or shutdown) before cancel runs.
	aborted bool
}

func newHost(w *wire) *host {
	base, cancel := context.WithCancel(context.Background())
	return &host{w: w, base: base, cancel: cancel, servers: map[string]*server{}, sessions: map[string]bool{}, calls: map[string]*call{}}
}

func (h *host) isClosing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closing
}

// handle runs a method other than hello, start and shutdown: params are
// checked before not_started (docs/DRIVER.md, "Which error wins").
func (h *host) handle(method string, params json.RawMessage) (any, error) {
	var p any
	switch method {
	case driver.MethodSessionOpen, driver.MethodSessionClose, driver.MethodToolsList:
		p = &driver.SessionParams{}
	case driver.MethodToolCall:
		p = &driver.ToolCallParams{}
	case driver.MethodToolCancel:
		p = &driver.CancelParams{}
	case driver.MethodStatus, driver.MethodClockNow:
		p = &driver.Empty{}
	default:
		// Methods of capabilities the driver does not announce were
		// answered unsupported before.
		return nil, rerr(driver.CodeUnsupported, "%s is not supported", method)
	}
	if err := decodeParams(params, p); err != nil {
		return nil, err
	}
	h.mu.Lock()
	started := h.started
	h.mu.Unlock()
	if !started {
		return nil, rerr(driver.CodeNotStarted, "start has not succeeded")
	}
	switch method {
	case driver.MethodSessionOpen:
		return h.sessionOpen(p.(*driver.SessionParams))
	case driver.MethodSessionClose:
		return h.sessionClose(p.(*driver.SessionParams))
	case driver.MethodToolsList:
		return h.toolsList(p.(*driver.SessionParams))
	case driver.MethodToolCall:
		return h.toolCall(p.(*driver.ToolCallParams))
	case driver.MethodToolCancel:
		return h.toolCancel(p.(*driver.CancelParams))
	case driver.MethodStatus:
		return h.status(), nil
	default: // clock.now
		return driver.ClockResult{NowMs: h.w.now().Milliseconds()}, nil
	}
}

// start reads the configuration; config problems are events, never errors.
func (h *host) start(params json.RawMessage) (any, error) {
	var p driver.StartParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return nil, rerr(driver.CodeAlreadyStarted, "start was already called")
	}
	if p.Clock != driver.ClockReal {
		return nil, rerr(driver.CodeUnsupported, "clock %q: this driver runs on the real clock only (mcp-go's timers cannot be injected)", p.Clock)
	}
	if p.Options != nil {
		h.options = *p.Options
	}
	h.env = p.Env
	defs, invalid := loadConfig(&p, h.w)
	for _, d := range defs {
		h.servers[d.Name] = &server{h: h, def: d, state: "disconnected", stderr: &tail{}}
		if !d.Enabled {
			h.servers[d.Name].state = "disabled"
			h.w.event(event.ServerDisabled, d.Name, "", map[string]any{"file": d.Source.File})
		}
	}
	h.invalid = invalid
	h.started = true
	return driver.Empty{}, nil
}

// sessionOpen connects every enabled server not connected yet, in parallel,
// and reports them once each settled (no startup gate).
func (h *host) sessionOpen(p *driver.SessionParams) (any, error) {
	if p.Session == "" {
		return nil, rerr(driver.CodeBadRequest, "session must be a non-empty string")
	}
	h.mu.Lock()
	if h.sessions[p.Session] {
		h.mu.Unlock()
		return nil, rerr(driver.CodeSessionExists, "session %q is open", p.Session)
	}
	h.sessions[p.Session] = true
	servers := h.sortedServers()
	h.mu.Unlock()
	t0 := h.w.now()
	h.w.event(event.SessionOpened, "", p.Session, nil)
	var wg sync.WaitGroup
	for _, s := range servers {
		if !s.def.Enabled {
			continue
		}
		wg.Go(func() { s.ensureConnected(p.Session) })
	}
	wg.Wait()
	rep := driver.StartReport{Ready: []string{}, Failed: []string{}, Deferred: []string{}, Late: []string{}, Errors: map[string]string{}}
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
	rep.ElapsedMs = (h.w.now() - t0).Milliseconds()
	return driver.SessionOpenResult{Report: rep}, nil
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

func (h *host) sessionClose(p *driver.SessionParams) (any, error) {
	h.mu.Lock()
	if !h.sessions[p.Session] {
		h.mu.Unlock()
		return nil, rerr(driver.CodeUnknownSession, "no open session %q", p.Session)
	}
	delete(h.sessions, p.Session)
	h.mu.Unlock()
	h.w.event(event.SessionClosed, "", p.Session, nil)
	return driver.Empty{}, nil
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

func (h *host) toolsList(p *driver.SessionParams) (any, error) {
	h.mu.Lock()
	open := h.sessions[p.Session]
	h.mu.Unlock()
	if !open {
		return nil, rerr(driver.CodeUnknownSession, "no open session %q", p.Session)
	}
	tools := h.exposedTools()
	if tools == nil {
		tools = []driver.Tool{}
	}
	return driver.ToolsListResult{Tools: tools}, nil
}

// toolCall accepts the call and runs it; its outcome is a call_result line.
func (h *host) toolCall(p *driver.ToolCallParams) (any, error) {
	if p.CallID == "" || p.Tool == "" {
		return nil, rerr(driver.CodeBadRequest, "callId and tool must be non-empty strings")
	}
	if p.TimeoutMs != nil && *p.TimeoutMs < 0 {
		return nil, rerr(driver.CodeBadRequest, "timeoutMs must be >= 0")
	}
	h.mu.Lock()
	if !h.sessions[p.Session] {
		h.mu.Unlock()
		return nil, rerr(driver.CodeUnknownSession, "no open session %q", p.Session)
	}
	if _, dup := h.calls[p.CallID]; dup {
		h.mu.Unlock()
		return nil, rerr(driver.CodeDuplicateID, "callId %q was used before", p.CallID)
	}
	ctx, cancel := context.WithCancel(h.base)
	c := &call{cancel: cancel, done: make(chan struct{})}
	h.calls[p.CallID] = c
	h.mu.Unlock()
	// The accepted response is written before the call starts: the goroutine
	// waits for it.
	accepted := make(chan struct{})
	go func() {
		defer close(c.done)
		defer cancel()
		<-accepted
		h.w.write(h.runCall(ctx, c, p))
	}()
	defer close(accepted)
	return driver.AcceptedResult{Accepted: true}, nil
}

// runCall calls the tool through mcp-go and builds its call_result line.
func (h *host) runCall(ctx context.Context, c *call, p *driver.ToolCallParams) driver.CallResultLine {
	line := driver.CallResultLine{Type: driver.TypeCallResult, CallID: p.CallID}
	out := &line.Result
	out.Tool, out.Signals = p.Tool, []string{}
	var t *driver.Tool
	for _, x := range h.exposedTools() {
		if x.Name == p.Tool {
			t = &x
			break
		}
	}
	fail := func(code driver.OutcomeCode, msg string) {
		out.IsError, out.Code, out.Text, out.OriginalChars = true, string(code), msg, len([]rune(msg))
		line.Error = &driver.RemoteError{Code: string(code), Message: msg}
	}
	if t == nil {
		fail(driver.OutcomeUnknownTool, fmt.Sprintf("no tool %q in session %q", p.Tool, p.Session))
		return line
	}
	h.mu.Lock()
	s := h.servers[t.Server]
	h.mu.Unlock()
	out.Server = s.def.Name
	cl := s.current()
	if cl == nil {
		fail(driver.OutcomeConnectionLost, "the server is not connected")
		return line
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
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeout)*time.Millisecond)
		defer cancel()
	}
	callName := p.Session + "-" + p.CallID
	h.w.event(event.ToolCallStarted, s.def.Name, p.Session, map[string]any{"call": callName, "tool": t.Name})
	finish := func(outcome string, code driver.OutcomeCode) {
		h.w.event(event.ToolCallFinished, s.def.Name, p.Session, map[string]any{"call": callName, "tool": t.Name, "outcome": outcome, "code": string(code)})
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = t.Tool
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		var args any
		if err := json.Unmarshal(p.Arguments, &args); err != nil {
			fail(driver.OutcomeFailed, fmt.Sprintf("arguments: %v", err))
			finish("error", "")
			return line
		}
		req.Params.Arguments = args
	}
	res, err := cl.CallTool(ctx, req)
	h.mu.Lock()
	aborted := c.aborted
	h.mu.Unlock()
	switch {
	case aborted:
		out.Text, out.IsError, out.Aborted, out.Code = "", true, true, string(driver.OutcomeAborted)
		line.Error = &driver.RemoteError{Code: string(driver.OutcomeAborted), Message: "cancelled by the caller"}
		finish("aborted", "")
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		h.w.event(event.ToolTimeout, s.def.Name, p.Session, map[string]any{"call": callName, "tool": t.Name, "timeout_ms": timeout})
		fail(driver.OutcomeToolTimeout, err.Error())
		finish("error", driver.OutcomeToolTimeout)
	case err != nil && errors.Is(err, transport.ErrTransportClosed):
		// The only sign mcp-go gives of a dead stdio connection.
		s.lost(err)
		fail(driver.OutcomeConnectionLost, err.Error())
		finish("error", driver.OutcomeConnectionLost)
	case err != nil:
		// What the agent sees is mcp-go's error message.
		fail(driver.OutcomeFailed, err.Error())
		finish("error", "")
	default:
		text := flatten(res)
		out.Text, out.IsError, out.OriginalChars = text, res.IsError, len([]rune(text))
		if res.IsError {
			finish("tool_error", "")
		} else {
			finish("ok", "")
		}
	}
	return line
}

func (h *host) toolCancel(p *driver.CancelParams) (any, error) {
	h.mu.Lock()
	c, ok := h.calls[p.CallID]
	if !ok {
		h.mu.Unlock()
		return nil, rerr(driver.CodeUnknownID, "no tool call %q", p.CallID)
	}
	running := false
	select {
	case <-c.done:
	default:
		running = true
		c.aborted = true
	}
	h.mu.Unlock()
	if running {
		c.cancel()
	}
	return driver.CancelResult{Running: running}, nil
}

// status lists every configured server by name.
func (h *host) status() driver.StatusResult {
	h.mu.Lock()
	servers := h.sortedServers()
	invalid := slices.Clone(h.invalid)
	refs := len(h.sessions)
	h.mu.Unlock()
	out := driver.StatusResult{Servers: []driver.ServerStatus{}}
	for _, s := range servers {
		out.Servers = append(out.Servers, s.status(refs))
	}
	for _, bad := range invalid {
		out.Servers = append(out.Servers, driver.ServerStatus{Name: bad.Name, State: "failed", Error: bad.Error, Source: bad.Source, Shared: true})
	}
	slices.SortFunc(out.Servers, func(a, b driver.ServerStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// shutdown aborts the calls in flight, closes the sessions and every
// client (mcp-go's Close), and writes runtime.closed. It runs once.
func (h *host) shutdown() {
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		return
	}
	h.closing = true
	var pending []*call
	for _, c := range h.calls {
		select {
		case <-c.done:
		default:
			c.aborted = true
			pending = append(pending, c)
		}
	}
	sessions := make([]string, 0, len(h.sessions))
	for s := range h.sessions {
		sessions = append(sessions, s)
	}
	h.sessions = map[string]bool{}
	servers := h.sortedServers()
	h.mu.Unlock()
	for _, c := range pending {
		c.cancel()
		<-c.done
	}
	sort.Strings(sessions)
	for _, s := range sessions {
		h.w.event(event.SessionClosed, "", s, nil)
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.close)
	}
	wg.Wait()
	h.cancel()
	h.w.event(event.RuntimeClosed, "", "", nil)
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
	s.h.w.event(event.ToolsRegistered, s.def.Name, session, map[string]any{"tools": int64(len(tools)), "deferred": false, "names": strings.Join(names, ",")})
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
	base := os.Environ()
	if s.h.env != nil {
		base = base[:0:0]
		for k, v := range s.h.env {
			base = append(base, k+"="+v)
		}
		sort.Strings(base)
	}
	cmdFunc := func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, command, args...)
		cmd.Env = append(base, env...)
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
	s.h.w.event(event.ServerConnecting, d.Name, "", map[string]any{"transport": d.Transport, "attempt": int64(0), "timeout_ms": d.TimeoutMs})
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
		s.h.w.event(event.ProcessStarted, d.Name, "", map[string]any{"pid": int64(pid), "command": d.Command})
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
		s.h.w.event(event.ServerFailed, d.Name, "", map[string]any{"transport": d.Transport, "error": msg, "stderr": stderr})
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
	s.state, s.tools, s.connectedAt = "connected", exposed, s.h.w.now()
	s.mu.Unlock()
	s.h.w.event(event.ServerConnected, d.Name, "", map[string]any{"transport": d.Transport, "attempt": int64(0), "tools": int64(len(exposed)), "protocol": cl.ProtocolVersion()})
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
	s.h.w.event(event.TransportClosed, s.def.Name, "", map[string]any{"transport": s.def.Transport, "error": err.Error()})
	s.h.mu.Lock()
	sessions := make([]string, 0, len(s.h.sessions))
	for name := range s.h.sessions {
		sessions = append(sessions, name)
	}
	s.h.mu.Unlock()
	sort.Strings(sessions)
	for _, name := range sessions {
		s.h.w.event(event.ToolsUnregistered, s.def.Name, name, map[string]any{"tools": int64(n), "reason": "connection lost"})
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
		s.h.w.event(event.ProcessSignaled, s.def.Name, "", map[string]any{"pid": int64(pid), "step": "stdin-closed"})
	}
	if err := cl.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "[%s] close: %v\n", s.def.Name, err)
	}
	if pid != 0 && cmd != nil {
		status := "running"
		if ps := cmd.ProcessState; ps != nil {
			status = exitStatus(ps)
		}
		s.h.w.event(event.ProcessExited, s.def.Name, "", map[string]any{"pid": int64(pid), "status": status, "planned": true})
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
