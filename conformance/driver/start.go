package driver

// The start method: building the runtime's options from start's params.

import (
	"context"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// start creates the runtime. Conn has checked the params against the
// schema (the clock, configFiles, inline servers, option ranges), that a
// virtual clock is announced, and that no start succeeded before.
func (d *driver) start(ctx context.Context, p *StartParams) error {
	// On the real clock the runtime's timers are tracked, so that the
	// driver can list them (timers.pending): every duration the runtime
	// waits on goes through its clock.
	var clk clock.Clock
	var fake *clocktest.Fake
	var tracked *clocktest.Tracked
	if p.Clock == ClockVirtual {
		fake = clocktest.New()
		clk = fake
	} else {
		tracked = clocktest.NewTracked()
		clk = tracked
	}
	files := make([]config.File, 0, len(p.ConfigFiles))
	for _, f := range p.ConfigFiles {
		files = append(files, config.File{Path: f.Path, Level: config.Level(f.Level), Provider: f.Provider})
	}
	hopts := host.Options{
		Clock:  clk,
		Logger: d.log,
		Discovery: config.Options{
			ProjectDir:        p.Workspace,
			HomeDir:           p.Home,
			SkipProjectConfig: p.SkipProjectConfig,
			Files:             files,
			Inline:            p.Inline,
		},
		Trusted:  p.Trusted,
		CacheDir: p.CacheDir,
		Sampling: driverSampling,
	}
	if p.CredentialsFile != "" {
		hopts.Credentials = config.FileCredentials{Path: p.CredentialsFile}
	}
	if p.Env != nil {
		env := copyEnv(p.Env)
		hopts.Discovery.Env = func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		}
	}
	applyOptions(p.Options, &hopts)

	origin := clk.Now()
	rec := event.NewRecorder(event.RecorderOptions{Clock: clk, Logger: d.log})
	hopts.Events = rec
	fail := func(err error) error {
		d.mu.Lock()
		f := d.fwd
		d.fwd = nil
		d.mu.Unlock()
		if f != nil {
			f.stop()
		}
		return err
	}
	if d.opts.Configure != nil {
		if err := d.opts.Configure(p, &hopts); err != nil {
			return fail(rerr(CodeFailed, "configure: %v", err))
		}
	}
	if hopts.Events == nil {
		hopts.Events = rec
	}
	// Events emitted while the runtime is created (config diagnostics) are
	// written before the response.
	f := newForwarder(hopts.Events, d.conn.out)
	d.mu.Lock()
	d.fwd = f
	d.mu.Unlock()
	rt, err := host.New(hopts)
	if err != nil {
		return fail(rerr(CodeFailed, "start: %v", err))
	}
	d.mu.Lock()
	d.rt, d.clk, d.fake, d.tracked, d.origin = rt, clk, fake, tracked, origin
	d.mu.Unlock()
	return nil
}

func copyEnv(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// applyOptions maps start's options onto host.Options; their ranges were
// checked against the schema.
func applyOptions(o *StartOptions, h *host.Options) {
	if o == nil {
		return
	}
	// The host treats zero as "default" and a negative value as "none" for
	// these; the protocol's 0 means "none".
	zeroMeansNone := func(v int64) time.Duration {
		if v == 0 {
			return -1
		}
		return ms(v)
	}
	if o.StartupGateMs != nil {
		h.StartupGate = zeroMeansNone(*o.StartupGateMs)
	}
	if o.LateRegistration != nil {
		h.LateRegistration = *o.LateRegistration
	}
	if o.ToolTimeoutMs != nil {
		h.ToolTimeout = zeroMeansNone(*o.ToolTimeoutMs)
	}
	if o.ProbeTimeoutMs != nil {
		h.ProbeTimeout = ms(*o.ProbeTimeoutMs)
	}
	if o.UnregisterGraceMs != nil {
		h.UnregisterGrace = zeroMeansNone(*o.UnregisterGraceMs)
	}
	if o.StabilityWindowMs != nil {
		h.StabilityWindow = ms(*o.StabilityWindowMs)
	}
	if o.AcquireTimeoutMs != nil {
		h.AcquireTimeout = ms(*o.AcquireTimeoutMs)
	}
	if o.IdleTimeoutMs != nil {
		h.IdleTimeout = ms(*o.IdleTimeoutMs)
	}
	if o.RestartWaitMs != nil {
		h.RestartWait = ms(*o.RestartWaitMs)
	}
	if o.ConnectConcurrency != nil {
		h.ConnectConcurrency = *o.ConnectConcurrency
	}
	if o.NoRetryAfterRestart != nil {
		h.NoRetryAfterRestart = *o.NoRetryAfterRestart
	}
	if o.MaxResultChars != nil {
		h.MaxResultChars = *o.MaxResultChars
	}
}

// driverSampling is the reference driver's sampling callback (capability
// host-handlers): a deterministic model that answers with the text of the
// request's last message.
func driverSampling(_ context.Context, _ string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	text := ""
	if n := len(p.Messages); n > 0 {
		if tc, ok := p.Messages[n-1].Content.(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return &mcp.CreateMessageResult{Model: "mcplife-driver", Role: "assistant", Content: &mcp.TextContent{Text: "echo: " + text}}, nil
}
