package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/mcplife/mcplife/internal/idle"
	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/mcplife/mcplife/runtime/event"
)

// stateKey is the key of a script's state in testscript's Values.
type stateKey struct{}

// state is what the commands of one script share.
type state struct {
	run  *runConfig
	ts   *testscript.TestScript
	work string
	env  *testscript.Env

	ctx    context.Context // ends when the script ends
	cancel context.CancelFunc

	// configured maps each kind of duration the scenario configured
	// (durationKind) and its value (ms) to what it became on the real clock
	// (scaleConfigured), so that expectations naming it are scaled alike.
	configured map[string]map[int64]int64

	client  *driver.Client
	hello   *driver.HelloResult
	stderr  *lockedBuffer // the external driver's stderr
	closed  bool          // shutdown ran
	lastNow time.Duration // the last virtual clock offset seen
	clock   string        // the clock mode of the running implementation
	// virtualDone sums the final clock offsets of earlier runs of the
	// implementation in this script.
	virtualDone time.Duration
	// earlier holds the events of earlier runs of the implementation in
	// this script, shifted by their virtualDone (Options.KeepEvents).
	earlier   []event.Event
	checks    int
	pending   map[string]*bgRequest
	marks     map[string]uint64
	updates   map[string]string // golden section -> new content
	served    map[string]*served
	printedAt int // the checks count when tails were last printed

	followersMu sync.Mutex
	followers   map[string]*journal.Follower // journal path -> its reader
}

// bgRequest is a request sent with "&" whose outcome is collected later.
type bgRequest struct {
	verb, arg string
	method    string
	result    any
	render    func(s *state, result any) map[string]string
	done      chan struct{} // closed when the answer (or an error) arrived
	err       error         // set before done is closed
}

// finished reports whether the answer arrived.
func (r *bgRequest) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// served is a fixture process the script started itself (fixture-serve).
type served struct {
	name    string
	addr    string
	url     string
	cmd     *exec.Cmd
	done    chan struct{}
	stderr  *lockedBuffer
	journal string
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func stateOf(ts *testscript.TestScript) *state {
	s, _ := ts.Value(stateKey{}).(*state)
	if s == nil {
		ts.Fatalf("scenario state missing: run scripts with the scenarios package's Params")
	}
	s.ts = ts
	return s
}

// fatalf fails the script.
func (s *state) fatalf(format string, args ...any) {
	s.ts.Fatalf(format, args...)
}

// fatalWithTails fails the script, printing the tails of the trace and of
// every fixture journal after the message.
func (s *state) fatalWithTails(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.printedAt = s.checks + 1
	s.ts.Fatalf("%s\n%s", msg, s.tails())
}

// check counts a successful check.
func (s *state) check() { s.checks++ }

// requireClient returns the driver client or fails: start must run first.
func (s *state) requireClient(cmd string) *driver.Client {
	if s.client == nil {
		s.fatalf("%s: no implementation is running: use start first", cmd)
	}
	if s.closed {
		s.fatalf("%s: the implementation was shut down", cmd)
	}
	return s.client
}

// timeoutCtx bounds one wait: by d in real time (0: the await timeout)
// and, with the virtual clock, by the implementation going idle
// (internal/idle), so a wait for what can no longer come fails at once.
func (s *state) timeoutCtx(d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		d = s.run.awaitTimeout
	}
	// On the real clock, a driver that lists its implementation's pending
	// timers (pending-timers) is judged idle the same way.
	realTimers := s.clock == driver.ClockReal && s.client != nil && s.client.HelloResult().Has(driver.CapPendingTimers)
	src := idle.Source{
		DecideIdle: (s.clock == driver.ClockVirtual || realTimers) && !s.closed,
		RealTimers: realTimers,
		Client:     s.client,
		Journals:   map[string]string{},
		HoldBound:  s.run.awaitTimeout,
		Pace:       &s.run.idle,
	}
	for _, j := range s.journals() {
		src.Journals[strings.TrimSuffix(filepath.Base(j), ".journal")] = j
	}
	return idle.Bound(s.ctx, d, src)
}

// ended says how a wait bounded by timeoutCtx(d) ended: the implementation
// went idle, or the real-time bound passed.
func (s *state) ended(ctx context.Context, d time.Duration) string {
	if err := context.Cause(ctx); idle.Decided(err) {
		return "before " + err.Error()
	}
	return fmt.Sprintf("within %v", timeoutOr(d, s.run.awaitTimeout))
}

// request sends a request and waits for its answer within the default
// real-time limit; a failure fails the script.
func (s *state) request(method string, params, result any) {
	c := s.requireClient(method)
	ctx, cancel := s.timeoutCtx(0)
	defer cancel()
	if err := c.Request(ctx, method, params, result); err != nil {
		s.requestFailed(method, err)
	}
}

func (s *state) requestFailed(method string, err error) {
	var re *driver.RemoteError
	if errors.As(err, &re) && re.Code == string(driver.CodeUnsupported) {
		s.fatalf("%s: the driver answered unsupported (%s): guard the scenario with the capability it needs, e.g. [!cap:NAME] skip", method, re.Message)
	}
	s.fatalWithTails("%s: %v", method, err)
}

// now returns the implementation's clock offset.
func (s *state) now() time.Duration {
	c := s.requireClient("now")
	ctx, cancel := s.timeoutCtx(0)
	defer cancel()
	d, err := c.Now(ctx)
	if err != nil {
		s.requestFailed("clock.now", err)
	}
	s.lastNow = d
	return d
}

// journalPath resolves a journal (or state) file named by the script.
func (s *state) path(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(s.work, name)
}

// journals returns every *.journal file under $WORK (two levels deep).
func (s *state) journals() []string {
	var out []string
	for _, pat := range []string{"*.journal", "*/*.journal"} {
		m, _ := filepath.Glob(filepath.Join(s.work, pat))
		out = append(out, m...)
	}
	sort.Strings(out)
	return out
}

// readJournal reads a journal, failing the script on a broken file.
// await-journal polls it every few milliseconds: a follower per file
// parses only what was appended since the last read.
func (s *state) readJournal(file string) []journal.Entry {
	p := s.path(file)
	s.followersMu.Lock()
	f, ok := s.followers[p]
	if !ok {
		if s.followers == nil {
			s.followers = map[string]*journal.Follower{}
		}
		f = journal.NewFollower(p)
		s.followers[p] = f
	}
	s.followersMu.Unlock()
	es, err := f.Read()
	if err != nil {
		s.fatalf("%v", err)
	}
	return es
}

const tailEvents = 25
const tailJournal = 12

// tails renders the end of the trace and of every journal, for failure
// messages.
func (s *state) tails() string {
	var b strings.Builder
	if s.client != nil {
		evs := s.client.Events()
		start := max(len(evs)-tailEvents, 0)
		fmt.Fprintf(&b, "--- trace: last %d of %d events ---\n", len(evs)-start, len(evs))
		for _, e := range evs[start:] {
			b.WriteString(s.sanitize(e.String()) + "\n")
		}
		if p := s.client.Problems(); len(p) > 0 {
			fmt.Fprintf(&b, "--- driver protocol problems ---\n")
			for _, err := range p {
				fmt.Fprintf(&b, "%v\n", err)
			}
		}
	} else {
		b.WriteString("--- trace: no implementation was started ---\n")
	}
	for _, j := range s.journals() {
		es, err := journal.Read(j)
		rel, _ := filepath.Rel(s.work, j)
		if err != nil {
			fmt.Fprintf(&b, "--- journal %s: %v ---\n", rel, err)
			continue
		}
		start := max(len(es)-tailJournal, 0)
		fmt.Fprintf(&b, "--- journal %s: last %d of %d entries ---\n", rel, len(es)-start, len(es))
		for _, e := range es[start:] {
			b.WriteString(s.sanitize(journalLine(e)) + "\n")
		}
	}
	if s.stderr != nil {
		if t := tailLines(s.stderr.String(), 10); t != "" {
			fmt.Fprintf(&b, "--- driver stderr (tail) ---\n%s\n", t)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// sanitize replaces the work directory with $WORK.
func (s *state) sanitize(v string) string {
	if s.work == "" {
		return v
	}
	return strings.ReplaceAll(v, s.work, "$WORK")
}

// journalLine renders a journal entry without pid and time.
func journalLine(e journal.Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d launch=%d %s", e.Seq, e.Launch, e.Kind)
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fieldString(e.Fields[k])
		if strings.ContainsAny(v, " \t\n\"") || v == "" {
			v = fmt.Sprintf("%q", v)
		}
		fmt.Fprintf(&b, " %s=%s", k, v)
	}
	return b.String()
}

// processes returns the pids every journal recorded (launches and spawned
// children), and apart from them the children that left their server's
// process group (MCP_FIXTURE_ESCAPED_CHILD), which no implementation can
// be asked to find.
func (s *state) processes() (pids map[int]string, escaped []int) {
	pids = map[int]string{}
	for _, j := range s.journals() {
		es, _ := journal.Read(j)
		rel, _ := filepath.Rel(s.work, j)
		for _, e := range es {
			switch e.Kind {
			case "launch":
				pids[e.PID] = fmt.Sprintf("fixture launch %d of %s", e.Launch, rel)
			case "child-started":
				c := e.Int("childPid")
				switch {
				case c > 0 && e.Bool("escaped"):
					escaped = append(escaped, c)
				case c > 0:
					pids[c] = fmt.Sprintf("child of fixture launch %d of %s", e.Launch, rel)
				}
			}
		}
	}
	return pids, escaped
}

// shutdown closes the driver (every server with it) and reports the
// processes from the journals that are still alive, killing them.
func (s *state) shutdown() (left []string, err error) {
	// An escaped child is the harness's to end, first, so that the pipes
	// it holds cannot keep an implementation's shutdown waiting.
	_, escaped := s.processes()
	for _, pid := range escaped {
		_ = proctest.Kill(pid, syscall.SIGKILL)
	}
	if s.client != nil && !s.closed {
		s.closed = true
		ctx, cancel := context.WithTimeout(context.Background(), s.run.closeTimeout)
		if d, nerr := s.client.Now(ctx); nerr == nil {
			s.lastNow = d
		}
		err = s.client.Close(ctx)
		cancel()
	}
	for _, sv := range s.served {
		sv.stop()
	}
	pids, _ := s.processes()
	ctx, cancel := context.WithTimeout(context.Background(), s.run.goneTimeout)
	defer cancel()
	keys := make([]int, 0, len(pids))
	for pid := range pids {
		keys = append(keys, pid)
	}
	sort.Ints(keys)
	for _, pid := range keys {
		if pid <= 0 || pid == os.Getpid() {
			continue
		}
		if werr := proctest.WaitGone(ctx, pid); werr != nil {
			left = append(left, fmt.Sprintf("pid %d (%s)", pid, pids[pid]))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return left, err
}

// allEvents returns the events of every run of the implementation in this
// script, each run's offsets shifted by the virtual time of the runs
// before it, renumbered from 1.
func (s *state) allEvents() []event.Event {
	out := slices.Clone(s.earlier)
	if s.client != nil {
		for _, e := range s.client.Events() {
			e.At += s.virtualDone
			out = append(out, e)
		}
	}
	for i := range out {
		out[i].Seq = uint64(i + 1)
	}
	return out
}

// stop kills a served fixture and waits for it.
func (sv *served) stop() {
	select {
	case <-sv.done:
		return
	default:
	}
	_ = sv.cmd.Process.Signal(syscall.SIGKILL)
	<-sv.done
}

// matchEvents returns the events after after that match m.
func matchEvents(evs []event.Event, after uint64, m eventMatcher) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Seq > after && m.match(e) {
			out = append(out, e)
		}
	}
	return out
}

// timeScale is the factor applied to the durations a scenario configures:
// 1 on the virtual clock, the run's TimeScale on the real one.
func (s *state) timeScale() float64 {
	if s.clock != driver.ClockReal {
		return 1
	}
	if s.run.opts.TimeScale > 0 {
		return s.run.opts.TimeScale
	}
	return DefaultTimeScale
}

// scaleMs scales a duration in milliseconds the scenario configures (see
// timeScale): 0 stays 0 (it means "none" or "at once" wherever durations
// are configured), any other value stays at least 1.
func (s *state) scaleMs(ms int64) int64 {
	f := s.timeScale()
	if ms <= 0 || f == 1 {
		return ms
	}
	return max(1, int64(float64(ms)*f))
}

// The kinds of durations a scenario configures, as event attributes name
// them (scaleExpectations).
const (
	durDelay   = "delay"   // restartDelays: delay_ms, next_delay_ms
	durTimeout = "timeout" // connect, tool, probe and acquire timeouts: timeout_ms
	durGrace   = "grace"   // unregisterGraceMs: grace_ms
	durIdle    = "idle"    // idleTimeoutMs: idle_ms
	durOther   = "other"   // named by no event attribute
)

// attrKinds maps the event attributes ending in _ms to the kind of
// configured duration they report.
var attrKinds = map[string]string{
	"delay_ms": durDelay, "next_delay_ms": durDelay, "timeout_ms": durTimeout,
	"grace_ms": durGrace, "idle_ms": durIdle,
}

// scaleConfigured scales a duration of kind the scenario configures
// (scaleMs) and remembers it: an expectation on an event attribute that
// reports that kind and names it (e.g. restart.scheduled delay_ms=1000 for
// restartDelays [1000]) then expects the scaled value. The kind keeps a
// runtime default that happens to equal a configured duration of another
// kind (a default 1 s restart delay beside a 1 s tool timeout) unscaled.
func (s *state) scaleConfigured(kind string, ms int64) int64 {
	v := s.scaleMs(ms)
	if v != ms {
		if s.configured == nil {
			s.configured = map[string]map[int64]int64{}
		}
		if s.configured[kind] == nil {
			s.configured[kind] = map[int64]int64{}
		}
		s.configured[kind][ms] = v
	}
	return v
}

// scaleExpectations rewrites, on the real clock, the event attribute
// expectations ATTR_ms=N whose N is a duration of the attribute's kind the
// scenario configured.
func (s *state) scaleExpectations(exps []expectation) {
	for i, e := range exps {
		kind, ok := attrKinds[e.key]
		if e.op != "=" || !ok {
			continue
		}
		if n, err := strconv.ParseInt(e.want, 10, 64); err == nil {
			if v, ok := s.configured[kind][n]; ok {
				exps[i].want = strconv.FormatInt(v, 10)
			}
		}
	}
}
