package mcpproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/mcplife/mcplife/runtime/proc"
)

// DefaultStopGrace is how long the proxy waits for the upstream server at
// each step of stopping it (stdin closed, SIGTERM, SIGKILL).
const DefaultStopGrace = 2 * time.Second

// maxLine bounds one JSON-RPC line; longer lines are forwarded in pieces
// without inspection.
const maxLine = 64 << 20

// StdioOptions configures a proxy in front of a stdio server.
type StdioOptions struct {
	// Command is the upstream server's command line.
	Command []string
	// Env is the upstream's environment; nil inherits this process's.
	Env []string
	// Dir is the upstream's working directory; "" inherits.
	Dir string
	// Rules are installed at start.
	Rules []Rule
	// Journal is the journal file ("" for none), in the fixture's format.
	Journal string
	// Control, when not "", is the loopback address of the control endpoint
	// (port 0 picks one); see NewControl.
	Control string
	// ControlFile, when not "", receives the control endpoint's URL and
	// token, a line each, once it listens (mode 0600, rewritten atomically
	// at every launch; ReadControlFile reads it).
	ControlFile string
	// ControlTokenFile, when not "", receives the control endpoint's token
	// and a newline (mode 0600, rewritten atomically at every launch).
	ControlTokenFile string
	// Stderr receives the upstream's stderr and the proxy's own messages;
	// nil discards them.
	Stderr io.Writer
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
	// StopGrace bounds each step of stopping the upstream (default 2 s).
	StopGrace time.Duration
	// Signals, when not nil, delivers the signals that end the proxy
	// (SIGTERM, SIGINT, SIGHUP): the upstream is stopped and the exit code
	// is 128 plus the signal number. The caller should also catch SIGPIPE
	// (signal.Notify), so that a client that went away makes writes fail
	// instead of killing the proxy before it stopped the upstream.
	Signals <-chan os.Signal
	// Ready, when not nil, is called with the control endpoint's URL and
	// token once it listens.
	Ready func(ctl ControlEndpoint)
}

// stdioProxy is one run of RunStdio.
type stdioProxy struct {
	opts StdioOptions
	eng  *engine
	up   *upstream

	outMu   sync.Mutex
	out     io.Writer
	dropped bool

	upMu sync.Mutex // serialises writes to the upstream's stdin

	pmu      sync.Mutex
	pending  map[string]*pending
	npending atomic.Int64 // len(pending), read without the lock
}

// RunStdio proxies the line-delimited JSON-RPC stream between a client (in,
// out) and the upstream server it starts, applying the rules, until the
// client closes in, the upstream exits, a rule ends the proxy or a signal
// arrives. It returns the exit code the proxy process should exit with: the
// upstream's when it exited on its own, 0 after stdin EOF, the rule's code,
// or 128 plus the signal number. It does not close in or out (except to drop
// the stream, when out is an io.Closer); the goroutine reading in ends when
// in does.
func RunStdio(ctx context.Context, in io.Reader, out io.Writer, opts StdioOptions) (int, error) {
	if len(opts.Command) == 0 {
		return 2, errors.New("no upstream command")
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	jw, err := journal.NewWriter(opts.Journal, os.Getpid(), opts.Logger)
	if err != nil {
		return 2, err
	}
	eng := newEngine(jw, opts.Logger)
	defer eng.close()
	jw.Begin(0, map[string]any{"transport": "stdio", "mode": "proxy", "upstream": strings.Join(opts.Command, " ")})

	var ctl *Control
	if opts.Control != "" {
		ctl, err = NewControl(opts.Control, eng)
		if err != nil {
			eng.journal("exit", map[string]any{"code": 2, "reason": "error", "error": err.Error()})
			return 2, err
		}
		defer ctl.Close()
		if err := errors.Join(ctl.WriteFile(opts.ControlFile), ctl.WriteTokenFile(opts.ControlTokenFile)); err != nil {
			eng.journal("exit", map[string]any{"code": 2, "reason": "error", "error": err.Error()})
			return 2, err
		}
		if opts.Ready != nil {
			opts.Ready(ctl.Endpoint())
		}
	}
	eng.setRules(opts.Rules, false)

	up, err := startUpstream(opts.Command, opts.Env, opts.Dir, opts.Stderr)
	if err != nil {
		eng.journal("exit", map[string]any{"code": 1, "reason": "error", "error": err.Error()})
		return 1, err
	}
	eng.journal("upstream-started", map[string]any{"upstreamPid": up.pid()})
	p := &stdioProxy{opts: opts, eng: eng, up: up, out: out, pending: map[string]*pending{}}

	clientEOF := make(chan struct{})
	go func() {
		p.clientLoop(in)
		close(clientEOF)
	}()
	upstreamEOF := make(chan struct{})
	go func() {
		p.upstreamLoop()
		close(upstreamEOF)
	}()

	var code int
	var reason string
	extra := map[string]any{}
	select {
	case <-clientEOF:
		eng.journal("stdin-eof", map[string]any{"ignored": false})
		code, reason = 0, "stdin-eof"
	case <-upstreamEOF:
		<-up.done
		c, sig := up.exitCode()
		eng.journal("upstream-exit", map[string]any{"code": c, "signal": sig})
		code, reason = c, "upstream-exit"
	case x := <-eng.exitCh:
		code, reason = x.code, x.reason
	case s := <-opts.Signals:
		sig, _ := s.(syscall.Signal)
		eng.journal("signal", map[string]any{"signal": proc.SignalName(sig), "ignored": false})
		code, reason = 128+int(sig), "signal"
		// Pass the signal on, as the group kill of a directly run server
		// would have delivered it.
		up.signal(sig)
	case <-ctx.Done():
		code, reason = 1, "cancelled"
	}
	up.stop(opts.StopGrace, opts.Signals)
	<-upstreamEOF
	extra["code"], extra["reason"] = code, reason
	eng.journal("exit", extra)
	return code, nil
}

// clientLoop forwards the client's messages until in ends.
func (p *stdioProxy) clientLoop(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if len(line) > 0 {
			p.fromClient(line)
		}
		if err != nil {
			return
		}
	}
}

// readLine returns the next line with its newline (a last line may lack
// it); a line over maxLine is returned in pieces.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return append([]byte(nil), line...), err
	}
	buf := append([]byte(nil), line...)
	for len(buf) < maxLine {
		line, err = r.ReadSlice('\n')
		buf = append(buf, line...)
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
	return buf, nil
}

// fromClient handles one line from the client.
func (p *stdioProxy) fromClient(line []byte) {
	m, ok := parseMessage(line)
	if !ok || m.isResponse() {
		p.toUpstream(line)
		return
	}
	if m.Method == "notifications/cancelled" {
		if p.eng.cancel(m.cancelledID()) {
			return
		}
		p.pmu.Lock()
		if req := p.pending[m.cancelledID()]; req != nil {
			req.cancelled = true
		}
		p.pmu.Unlock()
	}
	rule, faulted := p.eng.inbound(&m)
	if !faulted {
		p.forward(&m, line, nil)
		return
	}
	switch rule.Action {
	case Hang:
		if m.isRequest() {
			p.eng.hold(&m, func(cancelled bool) {
				if !cancelled {
					p.forward(&m, line, nil)
				}
			})
		}
	case Delay:
		time.AfterFunc(time.Duration(rule.MS)*time.Millisecond, func() { p.forward(&m, line, nil) })
	case Error:
		if m.isRequest() {
			p.toClient(errorLine(m.ID, rule.Code, rule.Message))
		}
	case ToolError:
		if m.isRequest() {
			p.toClient(toolErrorLine(m.ID, rule.Message))
		}
	case Exit:
		if rule.OnReply && m.isRequest() {
			p.forward(&m, line, &rule)
			return
		}
		p.eng.exit(rule.Code, "fault")
	case Drop:
		p.drop()
	}
}

// forward sends a client message to the upstream, remembering requests so
// that their responses can be journaled.
func (p *stdioProxy) forward(m *message, line []byte, exitOnReply *Rule) {
	if m.isRequest() && (p.eng.jw != nil || exitOnReply != nil) {
		req := &pending{method: m.Method, tool: m.tool(), exitOnReply: exitOnReply}
		switch m.Method {
		case "tools/list":
			req.cursor = strings.Contains(string(m.Params), `"cursor"`)
		case "server/discover":
			req.version = m.protocolVersion()
		}
		p.pmu.Lock()
		p.pending[m.key()] = req
		p.npending.Store(int64(len(p.pending)))
		p.pmu.Unlock()
	}
	p.toUpstream(line)
}

func (p *stdioProxy) toUpstream(line []byte) {
	p.upMu.Lock()
	defer p.upMu.Unlock()
	_, _ = p.up.stdin.Write(line)
}

// upstreamLoop forwards the server's messages until its stdout ends.
func (p *stdioProxy) upstreamLoop() {
	defer p.up.stdout.Close()
	r := bufio.NewReaderSize(p.up.stdout, 64<<10)
	for {
		line, err := readLine(r)
		if len(line) > 0 {
			p.fromUpstream(line)
		}
		if err != nil {
			return
		}
	}
}

// fromUpstream handles one line from the server.
func (p *stdioProxy) fromUpstream(line []byte) {
	var req *pending
	var m message
	if p.npending.Load() > 0 || p.eng.jw != nil {
		var ok bool
		m, ok = parseMessage(line)
		if ok && m.isResponse() {
			p.pmu.Lock()
			req = p.pending[m.key()]
			delete(p.pending, m.key())
			p.npending.Store(int64(len(p.pending)))
			p.pmu.Unlock()
		}
	}
	p.toClient(line)
	if req == nil {
		return
	}
	p.eng.outbound(*req, &m)
	if req.exitOnReply != nil {
		p.eng.exit(req.exitOnReply.Code, "fault")
	}
}

func (p *stdioProxy) toClient(line []byte) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	if p.dropped {
		return
	}
	_, _ = p.out.Write(line)
}

// drop closes the stream towards the client.
func (p *stdioProxy) drop() {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	if p.dropped {
		return
	}
	p.dropped = true
	if c, ok := p.out.(io.Closer); ok {
		_ = c.Close()
	}
	p.eng.journal("drop", map[string]any{"stream": "stdout"})
}
