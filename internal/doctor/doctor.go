// Package doctor connects every configured MCP server through the reference
// runtime (runtime/host) and reports, per server, where its definition came
// from, what shadows it, what validation found (file:line and field), the
// trust decision, and how connecting went: transport, connect time, tool
// count, tool name collisions and the stderr tail of a failed server.
//
// One broken server never hides the others: invalid entries, failed
// connects and blocked servers are all listed, and every other server is
// still connected. Start connects and waits until every server settled;
// Report describes the result; Watch streams the lifecycle events that
// follow; Close stops every server and leaves no process behind.
package doctor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
)

// Schema names the version of the JSON report; it changes only when a field
// is renamed or removed.
const Schema = "mcplife-doctor/1"

// Options says which configs to check and how.
type Options struct {
	// Files are the config files to check (harness doctor -config); when
	// empty, the runtime's discovery rules apply from ProjectDir and
	// HomeDir. Files count as user-level config.
	Files []string
	// ProjectDir is the workspace whose project-level configs are
	// discovered; "" means none.
	ProjectDir string
	// HomeDir is where user-level configs are discovered; "" means the
	// user's home directory.
	HomeDir string
	// Env looks up environment variables; nil means os.LookupEnv.
	Env func(string) (string, bool)
	// Trusted marks the workspace trusted: project-level stdio servers run.
	Trusted bool
	// ConnectTimeout, when > 0, overrides every server's connect timeout
	// (as MCPLIFE_MCP_TIMEOUT_MS does).
	ConnectTimeout time.Duration
	// StderrLines is how many lines of a failed server's stderr the report
	// keeps (default 5).
	StderrLines int
	// Logger receives the runtime's logs; nil discards them.
	Logger *slog.Logger
	// IdleProbeInterval, when positive, health-probes every connected
	// server with no call in flight this often (host.Options), so that a
	// server wedged while idle shows up in Watch; harness doctor -watch
	// sets it. Zero probes only after a tool timeout.
	IdleProbeInterval time.Duration
	// ProbeTimeout bounds each step of a health probe; zero means the
	// runtime's default (3 s).
	ProbeTimeout time.Duration
}

// Report is what doctor found. Its JSON form is the -json output.
type Report struct {
	Schema string `json:"schema"`
	// Sources are the config files that defined servers or had problems,
	// in priority order.
	Sources []string `json:"sources"`
	// Servers are sorted by name.
	Servers []Server `json:"servers"`
	// Problems are the diagnostics that belong to no server: unreadable or
	// malformed files, a bad MCPLIFE_MCP_TIMEOUT_MS.
	Problems []Problem `json:"problems"`
	// Failed counts servers whose status is failed or invalid plus
	// file-level errors; a non-zero count makes harness doctor exit 1.
	Failed int `json:"failed"`
}

// The statuses of a Server.
const (
	StatusOK       = "ok"       // connected
	StatusFailed   = "failed"   // the connect failed; the runtime keeps retrying
	StatusInvalid  = "invalid"  // rejected by validation, never started
	StatusBlocked  = "blocked"  // stdio server from untrusted project config
	StatusDisabled = "disabled" // "enabled": false
	StatusPending  = "pending"  // still connecting when the report was taken
)

// Server describes one configured server.
type Server struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	File   string `json:"file"`
	// Line is where the definition's name is in File (0 when unknown).
	Line     int    `json:"line"`
	Level    string `json:"level"`
	Provider string `json:"provider"`
	// Transport is stdio, http or sse ("" for an invalid entry).
	Transport string `json:"transport"`
	// Trust is the trust decision: "user config", "inline", "project,
	// trusted workspace", "project, remote (no local code)" or "blocked:
	// untrusted workspace".
	Trust string `json:"trust"`
	// ConnectMillis is how long the first connect attempt took, -1 when
	// none finished.
	ConnectMillis int64 `json:"connectMillis"`
	// Protocol is the MCP protocol version the connection speaks
	// ("2025-11-25" for a handshake-era server, "2026-07-28" for a
	// stateless one); "" when the server never connected.
	Protocol string `json:"protocol"`
	Tools    int    `json:"tools"`
	// Shadowed lists the lower-priority definitions of this name that lost
	// to this one.
	Shadowed []Location `json:"shadowed"`
	// Problems are the diagnostics of this server, errors and warnings.
	Problems []Problem `json:"problems"`
	// Collisions are tool names this server shares with another server:
	// "exposed-name: winner server/tool, loser server/tool".
	Collisions []string `json:"collisions"`
	// Error is why the server failed or is blocked; for an ok server that
	// dropped after connecting, what state it is in now.
	Error string `json:"error,omitempty"`
	// Stderr holds the last lines of a failed stdio server's stderr.
	Stderr []string `json:"stderr"`
}

// Location is a definition in a config file.
type Location struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Level string `json:"level"`
}

// Problem is one diagnostic of the config package, with its position.
type Problem struct {
	Severity string `json:"severity"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Server   string `json:"server,omitempty"`
	Field    string `json:"field"`
	Message  string `json:"message"`
}

// String formats the problem as "file:line:col: field: message".
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
		}
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Doctor holds the runtime that connected the servers.
type Doctor struct {
	opts  Options
	rt    *host.Runtime
	sess  *host.Session
	sub   <-chan event.Event
	unsub func()
	last  uint64 // the last event the report covers
}

// Start discovers the configs, connects every enabled server and returns
// once each has settled (connected, failed, or blocked) or ctx is done. It
// fails only when the runtime cannot start; server problems go in Report.
func Start(ctx context.Context, opts Options) (*Doctor, error) {
	if opts.StderrLines <= 0 {
		opts.StderrLines = 5
	}
	env := opts.Env
	if env == nil {
		env = os.LookupEnv
	}
	if opts.ConnectTimeout > 0 {
		ms := fmt.Sprint(opts.ConnectTimeout.Milliseconds())
		base := env
		env = func(k string) (string, bool) {
			if k == config.TimeoutEnvVar {
				return ms, true
			}
			return base(k)
		}
	}
	disc := config.Options{ProjectDir: opts.ProjectDir, HomeDir: opts.HomeDir, Env: env}
	if len(opts.Files) > 0 {
		disc = config.Options{Env: env, OnlyFiles: true}
		for _, f := range opts.Files {
			disc.Files = append(disc.Files, config.File{Path: f, Level: config.LevelUser})
		}
	}
	rec := event.NewRecorder(event.RecorderOptions{Logger: opts.Logger})
	sub, unsub := rec.Subscribe(4096)
	rt, err := host.New(host.Options{
		Discovery:  disc,
		Trusted:    opts.Trusted,
		Events:     rec,
		Logger:     opts.Logger,
		ClientName: "mcplife-doctor",
		// Wait for every server: no cache, no late registration.
		StartupGate:       -1,
		IdleProbeInterval: opts.IdleProbeInterval,
		ProbeTimeout:      opts.ProbeTimeout,
	})
	if err != nil {
		unsub()
		return nil, fmt.Errorf("starting the runtime: %w", err)
	}
	d := &Doctor{opts: opts, rt: rt, sub: sub, unsub: unsub}
	sess, err := rt.OpenSession(ctx, host.SessionOptions{Name: "doctor"})
	if err != nil {
		d.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("connecting the servers: %w", err)
	}
	d.sess = sess
	return d, nil
}

// Report describes every configured server as it stands now.
func (d *Doctor) Report() *Report {
	evs := d.rt.Events().Events()
	if len(evs) > 0 {
		d.last = evs[len(evs)-1].Seq
	}
	return build(d.rt.Config(), d.rt.Status(), evs, d.opts)
}

// Watch calls f with every lifecycle event that follows the last Report,
// as it happens, until ctx is done. Idle health probes that find a server
// healthy are left out (they come every IdleProbeInterval); a failed one
// is streamed with what follows it.
func (d *Doctor) Watch(ctx context.Context, f func(event.Event)) {
	idle := map[string]bool{} // servers whose idle probe runs
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-d.sub:
			if !ok {
				return
			}
			// The idle probes are followed from the first event on, the
			// report's included, so one that began before it stays quiet.
			show := e.Seq > d.last && Watched(e.Kind)
			switch e.Kind {
			case event.ProbeIdleScheduled:
				show = false
			case event.ProbeIdleStarted:
				idle[e.Server] = true
				show = false
			case event.ProbeStarted:
				show = show && !idle[e.Server]
			case event.ProbeFinished:
				if idle[e.Server] {
					h, _ := e.Get("healthy")
					m, _ := e.Get("method")
					if h == "true" || m == "tools/list" {
						delete(idle, e.Server)
					}
					show = show && h != "true"
				}
			}
			if show {
				f(e)
			}
		}
	}
}

// RetryFailed ends the backoff wait of every server that is waiting to
// retry (host.Runtime.RetryNow), so it reconnects now: the user knows the
// server is back. It returns the servers it retried, sorted.
func (d *Doctor) RetryFailed() []string {
	var out []string
	for _, st := range d.rt.Status() {
		switch st.State {
		case host.StateConnected, host.StateDisabled, host.StateBlocked:
			continue
		}
		if d.rt.RetryNow(st.Name) == nil {
			out = append(out, st.Name)
		}
	}
	return out
}

// Watched reports whether Watch streams events of kind k: server,
// process, transport, restart, probe, pool idle stops and tool list
// changes.
func Watched(k event.Kind) bool {
	switch k {
	case event.ToolsChanged, event.ToolsRegistered, event.ToolsUnregistered, event.PoolIdleStop, event.TransportClosed:
		return true
	}
	s := string(k)
	for _, p := range []string{"server.", "process.", "restart.", "probe."} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Events returns every lifecycle event recorded so far (at most the
// runtime's event limit, the latest ones), on the real clock from Start.
func (d *Doctor) Events() []event.Event { return d.rt.Events().Events() }

// Close stops every server and waits until nothing is left running.
func (d *Doctor) Close(ctx context.Context) error {
	if d.sess != nil {
		d.sess.Close(ctx)
	}
	err := d.rt.Close(ctx)
	d.unsub()
	return err
}

// build assembles the report.
func build(cfg *config.Result, statuses []host.ServerStatus, evs []event.Event, opts Options) *Report {
	rep := &Report{Schema: Schema, Sources: []string{}, Servers: []Server{}, Problems: []Problem{}}
	byName := map[string]*Server{}
	srcSeen := map[string]bool{}
	addSource := func(f string) {
		if f != "" && !srcSeen[f] {
			srcSeen[f] = true
			rep.Sources = append(rep.Sources, f)
		}
	}
	get := func(name string) *Server {
		if s, ok := byName[name]; ok {
			return s
		}
		s := &Server{Name: name, ConnectMillis: -1, Shadowed: []Location{}, Problems: []Problem{}, Collisions: []string{}, Stderr: []string{}}
		byName[name] = s
		return s
	}
	describe := func(cs *config.Server, status string) {
		s := get(cs.Name)
		s.Status = status
		s.File, s.Level, s.Provider = cs.Source.File, string(cs.Source.Level), cs.Source.Provider
		s.Transport = string(cs.EffectiveType())
		s.Trust = trustDecision(cs, opts.Trusted)
		addSource(cs.Source.File)
	}
	for _, cs := range cfg.Servers {
		describe(cs, StatusPending)
	}
	for _, cs := range cfg.Disabled {
		describe(cs, StatusDisabled)
	}
	for _, dg := range cfg.Diagnostics {
		p := Problem{Severity: string(dg.Severity), File: dg.File, Line: dg.Line, Column: dg.Column, Server: dg.Server, Field: dg.Field, Message: dg.Message}
		addSource(dg.File)
		if dg.Server == "" {
			rep.Problems = append(rep.Problems, p)
			if dg.Severity == config.SeverityError {
				rep.Failed++
			}
			continue
		}
		s := get(dg.Server)
		s.Problems = append(s.Problems, p)
		if s.Status == "" && dg.Severity == config.SeverityError {
			// The invalid winning definition: it claims the name.
			s.Status = StatusInvalid
			s.File, s.Level = dg.File, string(levelOf(cfg, dg.File))
			s.Error = "rejected by validation; not started"
		}
	}
	for _, sh := range cfg.Shadowed {
		s := get(sh.Name)
		s.Shadowed = append(s.Shadowed, Location{File: sh.Shadowed.File, Level: string(sh.Shadowed.Level)})
		if s.File == "" {
			s.File, s.Level, s.Provider = sh.Winner.File, string(sh.Winner.Level), sh.Winner.Provider
		}
		addSource(sh.Shadowed.File)
	}
	first := firstOutcomes(evs, byName)
	for _, st := range statuses {
		s, ok := byName[st.Name]
		if !ok || s.Status == StatusDisabled || s.Status == StatusInvalid {
			continue
		}
		fo := first[st.Name]
		switch {
		case st.State == host.StateConnected:
			s.Status = StatusOK
			s.Tools = st.Tools
			s.Protocol = st.Protocol
		case fo.done && !fo.failed:
			// Connected, then dropped before the report was taken (a
			// server that exits after the handshake): the connect worked;
			// -watch shows what follows.
			s.Status = StatusOK
			s.Tools = fo.tools
			s.Protocol = fo.protocol
			s.Error = fmt.Sprintf("connected, then %s", st.State)
			if st.Error != "" {
				s.Error += ": " + firstLine(st.Error)
			}
		case st.State == host.StateBlocked:
			s.Status = StatusBlocked
			s.Error = st.Error
		case fo.failed || st.State == host.StateFailed:
			s.Status = StatusFailed
			msg, stderr := fo.err, fo.stderr
			if msg == "" {
				msg = st.Error
			}
			if stderr == "" {
				stderr = st.Stderr
			}
			s.Error = firstLine(msg)
			s.Stderr = tailLines(stderr, opts.StderrLines)
			if len(s.Stderr) == 0 {
				s.Stderr = stderrFromError(msg, opts.StderrLines)
			}
		}
		if fo.done {
			s.ConnectMillis = fo.millis
		}
	}
	for _, e := range evs {
		if e.Kind != event.ToolsCollision {
			continue
		}
		name, _ := e.Get("name")
		winner, _ := e.Get("winner")
		loser, _ := e.Get("loser")
		c := fmt.Sprintf("%s: %s wins over %s", name, winner, loser)
		for _, srv := range []string{serverOf(winner), serverOf(loser)} {
			if s, ok := byName[srv]; ok && !contains(s.Collisions, c) {
				s.Collisions = append(s.Collisions, c)
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	lines := newLocator(openConfig)
	for _, n := range names {
		s := byName[n]
		s.Line = lines.find(s.File, n)
		for i := range s.Shadowed {
			s.Shadowed[i].Line = lines.find(s.Shadowed[i].File, n)
		}
	}
	for _, n := range names {
		s := byName[n]
		if s.Status == StatusFailed || s.Status == StatusInvalid || s.Status == StatusPending {
			rep.Failed++
		}
		rep.Servers = append(rep.Servers, *s)
	}
	return rep
}

// outcome is how the first connect attempt of a server ended.
type outcome struct {
	done        bool
	failed      bool
	millis      int64
	tools       int
	protocol    string
	err, stderr string
}

// firstOutcomes finds the first connect attempt of each server:
// server.connecting to server.connected or server.failed.
func firstOutcomes(evs []event.Event, byName map[string]*Server) map[string]outcome {
	started := map[string]time.Duration{}
	out := map[string]outcome{}
	for _, e := range evs {
		if _, ok := byName[e.Server]; !ok || out[e.Server].done {
			continue
		}
		switch e.Kind {
		case event.ServerConnecting:
			if _, ok := started[e.Server]; !ok {
				started[e.Server] = e.At
			}
		case event.ServerConnected, event.ServerFailed:
			if at, ok := started[e.Server]; ok {
				o := outcome{done: true, failed: e.Kind == event.ServerFailed, millis: (e.At - at).Milliseconds()}
				if n, ok := e.Attrs["tools"].(int64); ok {
					o.tools = int(n)
				}
				o.protocol, _ = e.Get("protocol")
				o.err, _ = e.Get("error")
				o.stderr, _ = e.Get("stderr")
				out[e.Server] = o
			}
		}
	}
	return out
}

func trustDecision(s *config.Server, trusted bool) string {
	switch s.Source.Level {
	case config.LevelInline:
		return "inline"
	case config.LevelUser:
		return "user config"
	}
	switch {
	case s.EffectiveType() != config.Stdio:
		return "project, remote"
	case trusted:
		return "project, trusted"
	default:
		return "blocked: untrusted"
	}
}

// levelOf finds the level of a file among the discovered servers.
func levelOf(cfg *config.Result, file string) config.Level {
	for _, list := range [][]*config.Server{cfg.Servers, cfg.Disabled} {
		for _, s := range list {
			if s.Source.File == file {
				return s.Source.Level
			}
		}
	}
	for _, sh := range cfg.Shadowed {
		if sh.Winner.File == file {
			return sh.Winner.Level
		}
		if sh.Shadowed.File == file {
			return sh.Shadowed.Level
		}
	}
	return ""
}

func serverOf(qualified string) string {
	s, _, _ := strings.Cut(qualified, "/")
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// errorLine matches the stderr line that usually says what went wrong.
var errorLine = regexp.MustCompile(`(?i)error|exception|fatal|cannot|failed|not found|denied`)

// tailLines returns the last n non-empty lines of s. When the tail has no
// line that looks like an error and an earlier line does (a stack trace
// after "Error: Cannot find module ..."), the last such line comes first,
// in place of the oldest tail line.
func tailLines(s string, n int) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimRight(l, "\r"))
		}
	}
	if len(lines) <= n {
		if lines == nil {
			return []string{}
		}
		return lines
	}
	tail := lines[len(lines)-n:]
	for _, l := range tail {
		if errorLine.MatchString(l) {
			return tail
		}
	}
	for i := len(lines) - n - 1; i >= 0; i-- {
		if errorLine.MatchString(lines[i]) {
			return append([]string{lines[i]}, tail[1:]...)
		}
	}
	return tail
}

// stderrFromError extracts the "stderr:" section the runtime appends to a
// stdio server's connect error.
func stderrFromError(err string, n int) []string {
	_, tail, ok := strings.Cut(err, "\nstderr:\n")
	if !ok {
		return []string{}
	}
	return tailLines(tail, n)
}
