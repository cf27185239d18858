package driver

// The start method: building the runtime's options from start's params.

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (d *driver) start(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p StartParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	var clk clock.Clock
	var fake *clocktest.Fake
	switch p.Clock {
	case ClockVirtual:
		if !d.caps[CapVirtualClock] {
			return nil, nil, rerr(CodeUnsupported, "clock %q needs capability %q", p.Clock, CapVirtualClock)
		}
		fake = clocktest.New()
		clk = fake
	case ClockReal:
		clk = clock.Real{}
	default:
		return nil, nil, rerr(CodeBadRequest, "clock must be %q or %q, not %q", ClockVirtual, ClockReal, p.Clock)
	}
	files := make([]config.File, 0, len(p.ConfigFiles))
	for i, f := range p.ConfigFiles {
		if f.Path == "" {
			return nil, nil, rerr(CodeBadRequest, "configFiles[%d]: path is required", i)
		}
		level := config.Level(f.Level)
		if level != config.LevelProject && level != config.LevelUser {
			return nil, nil, rerr(CodeBadRequest, "configFiles[%d]: level must be \"project\" or \"user\", not %q", i, f.Level)
		}
		files = append(files, config.File{Path: f.Path, Level: level, Provider: f.Provider})
	}
	for name, raw := range p.Inline {
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			return nil, nil, rerr(CodeBadRequest, "inline[%q]: a server must be a JSON object", name)
		}
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
	if err := applyOptions(p.Options, &hopts); err != nil {
		return nil, nil, err
	}

	d.mu.Lock()
	if d.rt != nil || d.starting {
		d.mu.Unlock()
		return nil, nil, rerr(CodeAlreadyStarted, "start was already called")
	}
	d.starting = true
	d.mu.Unlock()

	origin := clk.Now()
	rec := event.NewRecorder(event.RecorderOptions{Clock: clk, Logger: d.log})
	hopts.Events = rec
	fail := func(err error) (any, func(), error) {
		d.mu.Lock()
		d.starting = false
		f := d.fwd
		d.fwd = nil
		d.mu.Unlock()
		if f != nil {
			f.stop()
		}
		return nil, nil, err
	}
	if d.opts.Configure != nil {
		if err := d.opts.Configure(&p, &hopts); err != nil {
			return fail(rerr(CodeFailed, "configure: %v", err))
		}
	}
	if hopts.Events == nil {
		hopts.Events = rec
	}
	// Events emitted while the runtime is created (config diagnostics) are
	// written before the response.
	f := newForwarder(hopts.Events, d.out)
	d.mu.Lock()
	d.fwd = f
	d.mu.Unlock()
	rt, err := host.New(hopts)
	if err != nil {
		return fail(rerr(CodeFailed, "start: %v", err))
	}
	d.mu.Lock()
	d.starting = false
	d.rt, d.clk, d.fake, d.origin = rt, clk, fake, origin
	d.mu.Unlock()
	return Empty{}, nil, nil
}

func copyEnv(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// applyOptions maps start's options onto host.Options.
func applyOptions(o *StartOptions, h *host.Options) error {
	if o == nil {
		return nil
	}
	nonNeg := func(name string, v *int64) error {
		if v != nil && *v < 0 {
			return rerr(CodeBadRequest, "options.%s must be >= 0", name)
		}
		return nil
	}
	positive := func(name string, v *int64) error {
		if v != nil && *v <= 0 {
			return rerr(CodeBadRequest, "options.%s must be > 0", name)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		v    *int64
		pos  bool
	}{
		{"startupGateMs", o.StartupGateMs, false},
		{"toolTimeoutMs", o.ToolTimeoutMs, false},
		{"probeTimeoutMs", o.ProbeTimeoutMs, true},
		{"unregisterGraceMs", o.UnregisterGraceMs, false},
		{"stabilityWindowMs", o.StabilityWindowMs, true},
		{"acquireTimeoutMs", o.AcquireTimeoutMs, true},
		{"idleTimeoutMs", o.IdleTimeoutMs, false},
		{"restartWaitMs", o.RestartWaitMs, false},
	} {
		check := nonNeg
		if c.pos {
			check = positive
		}
		if err := check(c.name, c.v); err != nil {
			return err
		}
	}
	if o.ConnectConcurrency != nil && *o.ConnectConcurrency <= 0 {
		return rerr(CodeBadRequest, "options.connectConcurrency must be > 0")
	}
	if o.MaxResultChars != nil && *o.MaxResultChars <= 0 {
		return rerr(CodeBadRequest, "options.maxResultChars must be > 0")
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
	return nil
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
