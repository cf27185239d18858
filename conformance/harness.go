package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/runtime/driver"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proctest"
)

// H is what a spec body works with: one implementation under test behind
// its driver, fixture servers with their journals, and the evidence the
// spec has proven. Every wait is bounded by Config.AwaitTimeout in real
// time; a wait that runs out fails the spec.
type H struct {
	ctx context.Context
	req Requirement
	s   *state
	dir string

	c          *driver.Client
	lastClient *driver.Client // the previous driver, for diagnostics
	stderr     *syncBuffer

	journals map[string]string // journal key -> file
	procs    []*exec.Cmd       // processes the harness itself started
	calls    int
	acquires int

	claims   []*Claim
	observed []observation
	errs     []string // teardown failures
}

func newH(ctx context.Context, r Requirement, s *state) *H {
	dir, err := os.MkdirTemp(s.cfg.TempDir, "mcplife-conformance-"+r.ID+"-")
	if err != nil {
		ginkgo.Fail("making the spec's directory: " + err.Error())
	}
	h := &H{ctx: ctx, req: r, s: s, dir: dir, journals: map[string]string{}}
	for _, d := range []string{"workspace", "home", "journal", "cache"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			ginkgo.Fail(err.Error())
		}
	}
	return h
}

// fail fails the spec.
func (h *H) fail(format string, args ...any) {
	ginkgo.GinkgoHelper()
	ginkgo.Fail(fmt.Sprintf(format, args...))
}

// must fails the spec on an unexpected error.
func (h *H) must(err error, what string) {
	ginkgo.GinkgoHelper()
	if err != nil {
		h.fail("%s: %v", what, err)
	}
}

// awaitCtx bounds one wait.
func (h *H) awaitCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(h.ctx, h.s.cfg.AwaitTimeout)
}

// Virtual reports whether the run uses the virtual clock.
func (h *H) Virtual() bool { return h.s.mode == ClockVirtual }

// Dir returns the spec's own directory; Workspace, Home and CacheDir are
// inside it.
func (h *H) Dir() string       { return h.dir }
func (h *H) Workspace() string { return filepath.Join(h.dir, "workspace") }
func (h *H) Home() string      { return filepath.Join(h.dir, "home") }
func (h *H) CacheDir() string  { return filepath.Join(h.dir, "cache") }

// Path returns a path inside the spec's directory.
func (h *H) Path(name string) string { return filepath.Join(h.dir, name) }

// ---- servers ----

// Knobs are fixture environment variables (MCP_FIXTURE_*).
type Knobs map[string]string

// Server is one server object of a configuration, as in a config file.
type Server map[string]any

// With returns a copy of s with field k set to v.
func (s Server) With(k string, v any) Server {
	out := maps.Clone(s)
	out[k] = v
	return out
}

// WithEnv returns a copy of s with more env entries.
func (s Server) WithEnv(env map[string]string) Server {
	out := maps.Clone(s)
	e := maps.Clone(out["env"].(map[string]string))
	maps.Copy(e, env)
	out["env"] = e
	return out
}

// Fixture returns a stdio server object that launches the fixture with
// knobs, journaling to the journal named key.
func (h *H) Fixture(key string, knobs Knobs) Server {
	env := map[string]string{}
	maps.Copy(env, h.s.cfg.Fixture.Env)
	maps.Copy(env, knobs)
	env["MCP_FIXTURE_JOURNAL"] = h.journalPath(key)
	s := Server{"command": h.s.cfg.Fixture.Command, "env": env}
	if len(h.s.cfg.Fixture.Args) > 0 {
		s["args"] = h.s.cfg.Fixture.Args
	}
	return s
}

func (h *H) journalPath(key string) string {
	p, ok := h.journals[key]
	if !ok {
		p = filepath.Join(h.dir, "journal", key+".jsonl")
		h.journals[key] = p
	}
	return p
}

// StateFile returns the path of a fixture state file named key.
func (h *H) StateFile(key string) string { return filepath.Join(h.dir, "journal", key+".state.json") }

// WriteConfig writes a config file with servers under "mcpServers".
func (h *H) WriteConfig(path string, servers map[string]Server) {
	ginkgo.GinkgoHelper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	h.must(err, "encoding a config file")
	h.must(os.MkdirAll(filepath.Dir(path), 0o755), "config dir")
	h.must(os.WriteFile(path, b, 0o644), "writing a config file")
}

// HTTPFixture starts, from the harness itself, a fixture serving streamable
// HTTP and returns its host:port. It is stopped at the end of the spec.
func (h *H) HTTPFixture(key string, knobs Knobs) string {
	ginkgo.GinkgoHelper()
	portFile := filepath.Join(h.dir, "journal", key+".port")
	cmd := exec.Command(h.s.cfg.Fixture.Command, h.s.cfg.Fixture.Args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_FIXTURE_") {
			env = append(env, kv)
		}
	}
	for k, v := range h.s.cfg.Fixture.Env {
		env = append(env, k+"="+v)
	}
	for k, v := range knobs {
		env = append(env, k+"="+v)
	}
	env = append(env, "MCP_FIXTURE_TRANSPORT=http", "MCP_FIXTURE_PORT_FILE="+portFile, "MCP_FIXTURE_JOURNAL="+h.journalPath(key))
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	h.must(cmd.Start(), "starting an HTTP fixture")
	h.procs = append(h.procs, cmd)
	var addr string
	h.Eventually("the HTTP fixture writes its port file", func() bool {
		b, err := os.ReadFile(portFile)
		addr = strings.TrimSpace(string(b))
		return err == nil && addr != ""
	})
	return addr
}

// ---- drivers ----

// Setup is the configuration of one driver's start.
type Setup struct {
	// Servers are inline servers by name.
	Servers map[string]Server
	// Options are the runtime options; nil leaves every default.
	Options *driver.StartOptions
	// Env is the whole environment of the implementation's config layer;
	// nil means an empty one (hermetic).
	Env map[string]string
	// Trusted marks the workspace trusted.
	Trusted bool
	// Cache enables the tool cache in the spec's cache directory.
	Cache bool
	// SkipProjectConfig ignores project-level definitions.
	SkipProjectConfig bool
	// ConfigFiles are explicit config files.
	ConfigFiles []driver.ConfigFile
	// CredentialsFile is the credential provider's file (start.credentialsFile).
	CredentialsFile string
}

// Start starts a new driver (closing the previous one, if any), says hello
// and starts its runtime with s.
func (h *H) Start(s Setup) {
	ginkgo.GinkgoHelper()
	if h.c != nil {
		h.StopDriver()
	}
	ctx, cancel := h.awaitCtx()
	defer cancel()
	h.stderr = &syncBuffer{}
	// The driver outlives the spec body (teardown shuts it down), so it does
	// not run on the spec's context.
	c, err := h.s.cfg.Target.start(context.WithoutCancel(h.ctx), h.stderr)
	h.must(err, "starting the driver")
	h.c = c
	_, err = c.Hello(ctx)
	h.must(err, "hello")
	p := driver.StartParams{
		Clock:             h.s.mode,
		Home:              h.Home(),
		Workspace:         h.Workspace(),
		Trusted:           s.Trusted,
		SkipProjectConfig: s.SkipProjectConfig,
		ConfigFiles:       s.ConfigFiles,
		Env:               s.Env,
		Options:           s.Options,
		CredentialsFile:   s.CredentialsFile,
	}
	if p.Env == nil {
		p.Env = map[string]string{}
	}
	if s.Cache {
		p.CacheDir = h.CacheDir()
	}
	if len(s.Servers) > 0 {
		p.Inline = map[string]json.RawMessage{}
		for name, srv := range s.Servers {
			b, err := json.Marshal(srv)
			h.must(err, "encoding server "+name)
			p.Inline[name] = b
		}
	}
	h.must(c.Start(ctx, p), "start")
}

// Client returns the current driver's client.
func (h *H) Client() *driver.Client {
	ginkgo.GinkgoHelper()
	if h.c == nil {
		h.fail("no driver started")
	}
	return h.c
}

// StopDriver shuts the current driver down and checks its exchange. Every
// process its servers started must be gone afterwards.
func (h *H) StopDriver() {
	ginkgo.GinkgoHelper()
	errs := h.closeDriver()
	if len(errs) > 0 {
		h.fail("%s", strings.Join(errs, "\n"))
	}
}

// closeDriver shuts the driver down and validates its transcript; it
// returns the problems instead of failing.
func (h *H) closeDriver() []string {
	if h.c == nil {
		return nil
	}
	c := h.c
	var errs []string
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), h.s.cfg.ShutdownTimeout)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		errs = append(errs, fmt.Sprintf("the driver did not shut down cleanly: %v", err))
	}
	for _, err := range h.s.validator.ValidateTranscript(c.Transcript()) {
		errs = append(errs, fmt.Sprintf("protocol: schema: %v", err))
	}
	for _, err := range c.Problems() {
		errs = append(errs, fmt.Sprintf("protocol: %v", err))
	}
	h.lastClient = c
	h.c = nil
	return errs
}

// ---- teardown ----

// teardown ends the spec: it shuts the driver down, checks that no server
// process survived, validates the exchange and the evidence, and removes the
// spec's directory. Problems are collected and reported together, after
// everything is cleaned up.
func (h *H) teardown() {
	failedBefore := ginkgo.CurrentSpecReport().Failed()
	errs := h.closeDriver()
	for _, cmd := range h.procs {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	errs = append(errs, h.checkProcessesGone()...)
	if !failedBefore && len(errs) == 0 {
		errs = append(errs, h.evidenceProblems()...)
	}
	lines := make([]string, len(h.observed))
	for i, o := range h.observed {
		lines[i] = o.String()
	}
	ginkgo.AddReportEntry("evidence", ginkgo.ReportEntryVisibilityNever, strings.Join(lines, "\n"))
	if failedBefore || len(errs) > 0 {
		h.attachDiagnostics()
	}
	_ = os.RemoveAll(h.dir)
	if len(errs) > 0 {
		ginkgo.Fail(strings.Join(errs, "\n"))
	}
}

// checkProcessesGone waits until every process any journal recorded (the
// servers and the children they spawned) is gone, and kills survivors.
func (h *H) checkProcessesGone() []string {
	var errs []string
	for _, key := range slices.Sorted(maps.Keys(h.journals)) {
		j := h.readJournal(key)
		for _, pid := range j.AllPIDs() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := proctest.WaitGone(ctx, pid)
			cancel()
			if err != nil {
				errs = append(errs, fmt.Sprintf("process: server %s: pid %d is still running after the driver shut down", key, pid))
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return errs
}

// attachDiagnostics adds what a reader of a failure needs to the report.
func (h *H) attachDiagnostics() {
	c := h.c
	if c == nil {
		c = h.lastClient
	}
	if c != nil {
		var b strings.Builder
		for _, e := range c.Events() {
			b.WriteString(e.String() + "\n")
		}
		ginkgo.AddReportEntry("events", ginkgo.ReportEntryVisibilityFailureOrVerbose, b.String())
		tr := c.Transcript()
		if len(tr) > 300 {
			tr = tr[len(tr)-300:]
		}
		b.Reset()
		for _, l := range tr {
			line := string(l.Line)
			if len(line) > 2000 {
				line = line[:2000] + "..."
			}
			fmt.Fprintf(&b, "%s %s\n", l.Dir, line)
		}
		ginkgo.AddReportEntry("transcript (tail)", ginkgo.ReportEntryVisibilityFailureOrVerbose, b.String())
	}
	for _, key := range slices.Sorted(maps.Keys(h.journals)) {
		var b strings.Builder
		for _, e := range h.readJournal(key) {
			fields, _ := json.Marshal(e.Fields)
			fmt.Fprintf(&b, "%d %s pid=%d launch=%d %s\n", e.Seq, e.Kind, e.PID, e.Launch, fields)
		}
		ginkgo.AddReportEntry("journal "+key, ginkgo.ReportEntryVisibilityFailureOrVerbose, b.String())
	}
	if h.stderr != nil && h.stderr.Len() > 0 {
		ginkgo.AddReportEntry("driver stderr", ginkgo.ReportEntryVisibilityFailureOrVerbose, h.stderr.String())
	}
}

// ---- journals ----

// JournalEntries is a fixture journal.
type JournalEntries []fixture.Entry

// Of returns the entries of kind.
func (j JournalEntries) Of(kind string) JournalEntries {
	var out JournalEntries
	for _, e := range j {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// Count returns how many entries are of kind.
func (j JournalEntries) Count(kind string) int { return len(j.Of(kind)) }

// Where returns the entries of kind whose field key formats as val.
func (j JournalEntries) Where(kind, key, val string) JournalEntries {
	var out JournalEntries
	for _, e := range j.Of(kind) {
		if fmt.Sprint(e.Fields[key]) == val {
			out = append(out, e)
		}
	}
	return out
}

// Launches returns the launch entries.
func (j JournalEntries) Launches() JournalEntries { return j.Of("launch") }

// PIDs returns the pids of the launches, in order.
func (j JournalEntries) PIDs() []int {
	var out []int
	for _, e := range j.Launches() {
		out = append(out, e.PID)
	}
	return out
}

// AllPIDs returns every process the journal knows of: launches and spawned
// children.
func (j JournalEntries) AllPIDs() []int {
	seen := map[int]bool{}
	var out []int
	add := func(p int) {
		if p > 0 && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, e := range j {
		add(e.PID)
		if e.Kind == "child-started" {
			add(e.Int("childPid"))
		}
	}
	return out
}

// Last returns the last entry of kind, or a zero entry.
func (j JournalEntries) Last(kind string) fixture.Entry {
	es := j.Of(kind)
	if len(es) == 0 {
		return fixture.Entry{}
	}
	return es[len(es)-1]
}

func (h *H) readJournal(key string) JournalEntries {
	p, ok := h.journals[key]
	if !ok {
		return nil
	}
	es, err := fixture.ReadJournal(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return es
}

// Journal reads the fixture journal named key.
func (h *H) Journal(key string) JournalEntries {
	ginkgo.GinkgoHelper()
	if _, ok := h.journals[key]; !ok {
		h.fail("no fixture journal %q", key)
	}
	return h.readJournal(key)
}

// AwaitJournal waits until the journal named key has at least n entries of
// kind: the server's own evidence that it got that far.
func (h *H) AwaitJournal(key, kind string, n int) JournalEntries {
	ginkgo.GinkgoHelper()
	return h.AwaitJournalFunc(key, fmt.Sprintf("%d %q entries", n, kind), func(j JournalEntries) bool { return j.Count(kind) >= n })
}

// AwaitJournalFunc waits until cond holds for the journal named key.
func (h *H) AwaitJournalFunc(key, what string, cond func(JournalEntries) bool) JournalEntries {
	ginkgo.GinkgoHelper()
	var j JournalEntries
	h.Eventually("journal "+key+": "+what, func() bool {
		j = h.Journal(key)
		return cond(j)
	})
	return j
}

// Eventually polls cond on a short real-time ticker until it holds, and
// fails the spec when the await timeout passes first.
func (h *H) Eventually(what string, cond func() bool) {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	tick := time.NewTicker(3 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			h.fail("waited %v for %s", h.s.cfg.AwaitTimeout, what)
		}
	}
}

// Settle gives asynchronous work of the implementation a moment of real
// time, before checking that something did not happen.
func (h *H) Settle() { time.Sleep(50 * time.Millisecond) }

// ---- events ----

// Ev returns a matcher: kind, server ("" any) and attribute pairs.
func Ev(kind event.Kind, server string, attrs ...string) event.Matcher {
	m := event.Matcher{Kind: kind, Server: server}
	if len(attrs) > 0 {
		m.Attrs = map[string]string{}
		for i := 0; i+1 < len(attrs); i += 2 {
			m.Attrs[attrs[i]] = attrs[i+1]
		}
	}
	return m
}

// Await waits for the first event matching m.
func (h *H) Await(m event.Matcher) event.Event {
	ginkgo.GinkgoHelper()
	return h.AwaitAfter(0, m)
}

// AwaitAfter waits for the first event after seq matching m.
func (h *H) AwaitAfter(seq uint64, m event.Matcher) event.Event {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	e, err := h.Client().Await(ctx, seq, m)
	if err != nil {
		h.fail("awaiting event %s: %v", m, err)
	}
	return e
}

// Count returns how many events match m.
func (h *H) Count(m event.Matcher) int { return h.Client().Count(m) }

// Last returns the seq of the latest event.
func (h *H) Last() uint64 { return h.Client().Last() }

// Find returns the events matching m.
func (h *H) Find(m event.Matcher) []event.Event {
	var out []event.Event
	for _, e := range h.Client().Events() {
		if m.Match(e) {
			out = append(out, e)
		}
	}
	return out
}

// ---- clock ----

// D scales a duration in milliseconds the suite configures: unchanged with
// the virtual clock, multiplied by the time scale in real time.
func (h *H) D(ms int64) int64 {
	if h.Virtual() {
		return ms
	}
	return max(1, int64(float64(ms)*h.s.cfg.TimeScale))
}

// Pass lets ms of the implementation's time pass: the virtual clock is
// advanced, or the harness sleeps in real time.
func (h *H) Pass(ms int64) {
	ginkgo.GinkgoHelper()
	if h.Virtual() {
		h.Advance(ms)
		return
	}
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
	case <-h.ctx.Done():
		h.fail("interrupted")
	}
}

// Advance advances the virtual clock by ms.
func (h *H) Advance(ms int64) {
	ginkgo.GinkgoHelper()
	if !h.Virtual() {
		h.fail("Advance needs the virtual clock")
	}
	ctx, cancel := h.awaitCtx()
	defer cancel()
	_, err := h.Client().Advance(ctx, time.Duration(ms)*time.Millisecond)
	h.must(err, "clock.advance")
}

// Pending returns the pending timers of the virtual clock, soonest first.
func (h *H) Pending() []time.Duration {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	p, err := h.Client().Pending(ctx)
	h.must(err, "clock.pending")
	return p
}

// AdvanceToNext advances the virtual clock to its next pending timer.
func (h *H) AdvanceToNext() {
	ginkgo.GinkgoHelper()
	var p []time.Duration
	h.Eventually("a pending timer", func() bool { p = h.Pending(); return len(p) > 0 })
	h.Advance(max(p[0].Milliseconds(), 1))
}

// Now returns the implementation's clock offset.
func (h *H) Now() time.Duration {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	d, err := h.Client().Now(ctx)
	h.must(err, "clock.now")
	return d
}

// AwaitStopped waits until process pid of server key is gone while the
// implementation stops it. Each step of a stop announces its wait
// (process.signaled, the armed-timer rule): with the virtual clock the
// harness advances to the next pending timer after each announcement, so
// the stop's grace periods pass however long the implementation makes them.
func (h *H) AwaitStopped(key string, pid int) {
	ginkgo.GinkgoHelper()
	var after uint64
	for h.Alive(pid) {
		var step event.Event
		h.Eventually(fmt.Sprintf("pid %d to be stopped, or the next stop step", pid), func() bool {
			if !h.Alive(pid) {
				return true
			}
			for _, e := range h.Find(Ev(event.ProcessSignaled, key)) {
				if e.Seq > after {
					step = e
					return true
				}
			}
			return false
		})
		if step.Kind == "" || !h.Alive(pid) {
			return
		}
		after = step.Seq
		if h.Virtual() {
			// Give the step's signal a moment to end the process before
			// the next grace passes.
			if h.AwaitGoneWithin(pid, 100*time.Millisecond) {
				return
			}
			h.AdvanceToNext()
		}
	}
}

// The tolerance bands of real-time timing checks.
const (
	earlyTolerance = 50 * time.Millisecond
	lateTolerance  = 1500 * time.Millisecond
	lateFactor     = 0.5
)

// VerifyElapsed checks a duration measured on the implementation's clock:
// exactly with the virtual clock, within the tolerance band in real time.
func (h *H) VerifyElapsed(src Evidence, claim string, got, want time.Duration) {
	ginkgo.GinkgoHelper()
	if h.Virtual() {
		h.Verify(src, got == want, claim, "%v (virtual clock: exactly %v)", got, want)
		return
	}
	lo := want - earlyTolerance
	hi := want + lateTolerance + time.Duration(float64(want)*lateFactor)
	h.Verify(src, got >= lo && got <= hi, claim, "%v (real time: want %v within [%v, %v])", got, want, lo, hi)
}

// ---- sessions, tools, calls ----

// Open opens a session and waits for its start report.
func (h *H) Open(session string) *driver.StartReport {
	ginkgo.GinkgoHelper()
	return h.OpenAsync(session).Report()
}

// PendingOpen is a session.open whose response may not have come yet.
type PendingOpen struct {
	h    *H
	done chan struct{}
	rep  driver.SessionOpenResult
	err  error
}

// OpenAsync sends session.open without waiting.
func (h *H) OpenAsync(session string) *PendingOpen {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	p, err := h.Client().Send(ctx, driver.MethodSessionOpen, driver.SessionParams{Session: session})
	h.must(err, "session.open")
	o := &PendingOpen{h: h, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		o.err = p.Wait(h.ctx, &o.rep)
	}()
	return o
}

// Report waits for the start report.
func (o *PendingOpen) Report() *driver.StartReport {
	ginkgo.GinkgoHelper()
	ctx, cancel := o.h.awaitCtx()
	defer cancel()
	select {
	case <-o.done:
	case <-ctx.Done():
		o.h.fail("waited %v for the response to session.open", o.h.s.cfg.AwaitTimeout)
	}
	o.h.must(o.err, "session.open")
	return &o.rep.Report
}

// Answered reports whether the response has arrived.
func (o *PendingOpen) Answered() bool {
	select {
	case <-o.done:
		return true
	default:
		return false
	}
}

// CloseSession closes a session.
func (h *H) CloseSession(session string) {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	h.must(h.Client().CloseSession(ctx, session), "session.close")
}

// Tools lists a session's tools.
func (h *H) Tools(session string) []driver.Tool {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	t, err := h.Client().Tools(ctx, session)
	h.must(err, "tools.list")
	return t
}

// ToolNames returns the exposed names of a session's tools of server ("":
// all).
func (h *H) ToolNames(session, server string) []string {
	ginkgo.GinkgoHelper()
	var out []string
	for _, t := range h.Tools(session) {
		if server == "" || t.Server == server {
			out = append(out, t.Name)
		}
	}
	return out
}

// Call starts a tool call and returns its call id.
func (h *H) Call(session, tool string, args any) string {
	ginkgo.GinkgoHelper()
	return h.CallTimeout(session, tool, args, nil)
}

// CallTimeout starts a tool call with a per-call timeout (nil: none given).
func (h *H) CallTimeout(session, tool string, args any, timeoutMs *int64) string {
	ginkgo.GinkgoHelper()
	h.calls++
	id := "call-" + strconv.Itoa(h.calls)
	var raw json.RawMessage
	if args != nil {
		b, err := json.Marshal(args)
		h.must(err, "encoding arguments")
		raw = b
	}
	ctx, cancel := h.awaitCtx()
	defer cancel()
	h.must(h.Client().CallTool(ctx, driver.ToolCallParams{Session: session, CallID: id, Tool: tool, Arguments: raw, TimeoutMs: timeoutMs}), "tool.call")
	return id
}

// Result waits for the outcome of a call.
func (h *H) Result(id string) driver.CallResult {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	r, err := h.Client().AwaitCall(ctx, id)
	h.must(err, "awaiting call_result "+id)
	return r
}

// ResultWithin waits at most d of real time for the outcome of a call and
// reports whether it came.
func (h *H) ResultWithin(id string, d time.Duration) (driver.CallResult, bool) {
	ctx, cancel := context.WithTimeout(h.ctx, d)
	defer cancel()
	r, err := h.Client().AwaitCall(ctx, id)
	return r, err == nil
}

// HasResult reports whether the outcome of a call has arrived.
func (h *H) HasResult(id string) bool {
	_, ok := h.Client().CallResult(id)
	return ok
}

// CallNow calls a tool and waits for the outcome.
func (h *H) CallNow(session, tool string, args any) driver.CallResult {
	ginkgo.GinkgoHelper()
	return h.Result(h.Call(session, tool, args))
}

// Cancel cancels a call.
func (h *H) Cancel(id string) bool {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	running, err := h.Client().Cancel(ctx, id)
	h.must(err, "tool.cancel")
	return running
}

// Acquire starts acquiring a shared server and returns the acquire id.
func (h *H) Acquire(server string) string {
	ginkgo.GinkgoHelper()
	h.acquires++
	id := "acq-" + strconv.Itoa(h.acquires)
	ctx, cancel := h.awaitCtx()
	defer cancel()
	h.must(h.Client().Acquire(ctx, id, server), "acquire")
	return id
}

// AcquireResult waits for the outcome of an acquire.
func (h *H) AcquireResult(id string) driver.AcquireResult {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	r, err := h.Client().AwaitAcquire(ctx, id)
	h.must(err, "awaiting acquire_result "+id)
	return r
}

// Status returns the status of server name.
func (h *H) Status(name string) driver.ServerStatus {
	ginkgo.GinkgoHelper()
	ctx, cancel := h.awaitCtx()
	defer cancel()
	list, err := h.Client().Status(ctx)
	h.must(err, "status")
	for _, s := range list {
		if s.Name == name {
			return s
		}
	}
	h.fail("status lists no server %q", name)
	return driver.ServerStatus{}
}

// ---- processes ----

// Alive reports whether pid is a running process.
func (h *H) Alive(pid int) bool { return proctest.Alive(pid) }

// AwaitGone waits until pid is gone.
func (h *H) AwaitGone(pid int) bool {
	ctx, cancel := h.awaitCtx()
	defer cancel()
	return proctest.WaitGone(ctx, pid) == nil
}

// Kill sends sig to pid, as something outside the implementation would.
func (h *H) Kill(pid int, sig syscall.Signal) {
	ginkgo.GinkgoHelper()
	h.must(syscall.Kill(pid, sig), "kill")
}

// ---- small helpers ----

// ms converts milliseconds to a duration.
func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// Ms returns a pointer to v, for StartOptions fields.
func Ms(v int64) *int64 { return &v }

// Int returns a pointer to v.
func Int(v int) *int { return &v }

// Bool returns a pointer to v.
func Bool(v bool) *bool { return &v }

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 {
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
