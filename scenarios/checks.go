package scenarios

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/mcplife/mcplife/runtime/event"
)

// knownKinds is the event vocabulary, to reject typos in matchers.
var knownKinds = func() map[event.Kind]bool {
	m := map[event.Kind]bool{}
	for _, k := range event.Kinds() {
		m[k.Kind] = true
	}
	return m
}()

// eventMatcher selects events: a kind and expectations on server,
// session and attributes (KEY=VALUE, KEY!=VALUE, KEY~REGEXP, KEY!~REGEXP).
type eventMatcher struct {
	kind event.Kind
	exps []expectation
}

func (m eventMatcher) match(e event.Event) bool {
	if e.Kind != m.kind {
		return false
	}
	for _, x := range m.exps {
		var got string
		switch x.key {
		case "server":
			got = e.Server
		case "session":
			got = e.Session
		default:
			v, ok := e.Attrs[x.key]
			if !ok && (x.op == "=" || x.op == "~") {
				return false
			}
			got = fieldString(v)
		}
		if !x.holds(got) {
			return false
		}
	}
	return true
}

func (m eventMatcher) String() string {
	var b strings.Builder
	b.WriteString(string(m.kind))
	for _, x := range m.exps {
		b.WriteString(" " + x.String())
	}
	return b.String()
}

// parseMatcher reads KIND [server=S] [session=S] [ATTR=VALUE|ATTR~REGEXP...].
func (s *state) parseMatcher(cmd string, args []string) eventMatcher {
	if len(args) < 1 {
		s.usageError(cmd)
	}
	m := eventMatcher{kind: event.Kind(args[0])}
	if !knownKinds[m.kind] {
		s.fatalf("%s: unknown event kind %q (docs/TESTING.md lists the vocabulary)", cmd, args[0])
	}
	m.exps = s.parseExpectations(cmd, args[1:])
	s.scaleExpectations(m.exps)
	return m
}

// awaitEvent returns the first event after seq that matches m: it checks
// the events received so far, then waits for more.
func (s *state) awaitEvent(ctx context.Context, seq uint64, m eventMatcher) (event.Event, error) {
	c := s.client
	for {
		evs := c.Events()
		for _, e := range evs {
			if e.Seq > seq && m.match(e) {
				return e, nil
			}
		}
		if len(evs) > 0 {
			seq = max(seq, evs[len(evs)-1].Seq)
		}
		// Wait for any newer event, then look again.
		if _, err := c.Await(ctx, seq, event.Matcher{}); err != nil {
			return event.Event{}, err
		}
	}
}

func (s *state) markSeq(cmd, name string) uint64 {
	if name == "" {
		return 0
	}
	seq, ok := s.marks[name]
	if !ok {
		s.fatalf("%s: no mark %q (set it with mark %s)", cmd, name, name)
	}
	return seq
}

func cmdAwait(s *state, _ bool, args []string) {
	var timeout time.Duration
	var after string
	n := 1
	args = s.parseFlags("await", args, func(fs *flag.FlagSet) {
		fs.DurationVar(&timeout, "timeout", 0, "")
		fs.StringVar(&after, "after", "", "")
		fs.IntVar(&n, "n", 1, "")
	})
	m := s.parseMatcher("await", args)
	if n < 1 {
		s.fatalf("await: -n must be at least 1")
	}
	s.requireClient("await")
	seq := s.markSeq("await", after)
	ctx, cancel := s.timeoutCtx(timeout)
	defer cancel()
	var e event.Event
	for i := range n {
		var err error
		e, err = s.awaitEvent(ctx, seq, m)
		if err != nil {
			what := m.String()
			if n > 1 {
				what = fmt.Sprintf("%s (occurrence %d of %d)", what, i+1, n)
			}
			if after != "" {
				what += " after mark " + after
			}
			cause := "nothing matched " + s.ended(ctx, timeout)
			if ctx.Err() == nil {
				cause = err.Error()
			}
			s.fatalWithTails("await: waited for %s: %s", what, cause)
		}
		seq = e.Seq
	}
	s.lastNow = max(s.lastNow, e.At)
	fmt.Fprintln(s.ts.Stdout(), NormalizeEvent(e, s.work))
	s.check()
}

// parseCount reads N, >=N or <=N.
func (s *state) parseCount(cmd, v string) (op string, n int) {
	op = "=="
	switch {
	case strings.HasPrefix(v, ">="):
		op, v = ">=", v[2:]
	case strings.HasPrefix(v, "<="):
		op, v = "<=", v[2:]
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		s.fatalf("%s: %q is not a count N, >=N or <=N\nusage: %s", cmd, v, usage(cmd))
	}
	return op, n
}

func countHolds(op string, want, got int) bool {
	switch op {
	case ">=":
		return got >= want
	case "<=":
		return got <= want
	}
	return got == want
}

func cmdCount(s *state, _ bool, args []string) {
	var after string
	args = s.parseFlags("count", args, func(fs *flag.FlagSet) { fs.StringVar(&after, "after", "", "") })
	if len(args) < 2 {
		s.usageError("count")
	}
	op, want := s.parseCount("count", args[0])
	m := s.parseMatcher("count", args[1:])
	c := s.requireClient("count")
	got := len(matchEvents(c.Events(), s.markSeq("count", after), m))
	if !countHolds(op, want, got) {
		s.fatalWithTails("count: %d events match %s, want %s%d", got, m, strings.TrimPrefix(op, "=="), want)
	}
	fmt.Fprintf(s.ts.Stdout(), "%d %s\n", got, m)
	s.check()
}

// journalMatch reports whether a journal entry matches kind and fields.
func journalMatch(e journal.Entry, kind string, fields []expectation) bool {
	if e.Kind != kind {
		return false
	}
	for _, x := range fields {
		var got string
		switch x.key {
		case "launch":
			got = strconv.Itoa(e.Launch)
		default:
			v, ok := e.Fields[x.key]
			if !ok && (x.op == "=" || x.op == "~") {
				return false
			}
			got = fieldString(v)
		}
		if !x.holds(got) {
			return false
		}
	}
	return true
}

func (s *state) parseJournalMatch(cmd string, args []string) (string, []expectation) {
	if len(args) < 1 {
		s.usageError(cmd)
	}
	kind := args[0]
	known := false
	for _, k := range fixture.JournalKinds() {
		if k.Kind == kind {
			known = true
		}
	}
	if !known {
		s.fatalf("%s: unknown journal kind %q (docs/TESTING.md lists the fixture journal)", cmd, kind)
	}
	return kind, s.parseExpectations(cmd, args[1:])
}

func describeJournalMatch(kind string, fields []expectation) string {
	var b strings.Builder
	b.WriteString(kind)
	for _, x := range fields {
		b.WriteString(" " + x.String())
	}
	return b.String()
}

func (s *state) countJournal(file, kind string, fields []expectation) int {
	n := 0
	for _, e := range s.readJournal(file) {
		if journalMatch(e, kind, fields) {
			n++
		}
	}
	return n
}

func cmdAwaitJournal(s *state, _ bool, args []string) {
	var timeout time.Duration
	n := 1
	args = s.parseFlags("await-journal", args, func(fs *flag.FlagSet) {
		fs.DurationVar(&timeout, "timeout", 0, "")
		fs.IntVar(&n, "n", 1, "")
	})
	if len(args) < 2 {
		s.usageError("await-journal")
	}
	file := args[0]
	kind, fields := s.parseJournalMatch("await-journal", args[1:])
	ctx, cancel := s.timeoutCtx(timeout)
	defer cancel()
	// The fixture is another process: its journal is a file, so this polls
	// it on a short real ticker. Nothing waits for a fixed time.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		got := s.countJournal(file, kind, fields)
		if got >= n {
			fmt.Fprintf(s.ts.Stdout(), "%s: %d %s\n", file, got, describeJournalMatch(kind, fields))
			s.check()
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			s.fatalWithTails("await-journal: waited for %d %s entries in %s, have %d %s",
				n, describeJournalMatch(kind, fields), file, got, s.ended(ctx, timeout))
		}
	}
}

func cmdCountJournal(s *state, _ bool, args []string) {
	if len(args) < 3 {
		s.usageError("count-journal")
	}
	file := args[0]
	op, want := s.parseCount("count-journal", args[1])
	kind, fields := s.parseJournalMatch("count-journal", args[2:])
	got := s.countJournal(file, kind, fields)
	if !countHolds(op, want, got) {
		s.fatalWithTails("count-journal: %d %s entries in %s, want %s%d", got, describeJournalMatch(kind, fields), file, strings.TrimPrefix(op, "=="), want)
	}
	fmt.Fprintf(s.ts.Stdout(), "%s: %d %s\n", file, got, describeJournalMatch(kind, fields))
	s.check()
}

func cmdMark(s *state, _ bool, args []string) {
	if len(args) != 1 {
		s.usageError("mark")
	}
	c := s.requireClient("mark")
	s.marks[args[0]] = c.Last()
}

func (s *state) traceFilter(cmd string, args []string) (TraceFilter, []string) {
	var kinds, server, session, after, drop string
	rest := s.parseFlags(cmd, args, func(fs *flag.FlagSet) {
		fs.StringVar(&kinds, "kinds", "", "")
		fs.StringVar(&drop, "drop", "", "")
		fs.StringVar(&server, "server", "", "")
		fs.StringVar(&session, "session", "", "")
		fs.StringVar(&after, "after", "", "")
	})
	f := TraceFilter{Server: server, Session: session, After: s.markSeq(cmd, after)}
	if drop != "" {
		f.Drop = strings.Split(drop, ",")
	}
	if kinds != "" {
		for _, k := range strings.Split(kinds, ",") {
			k = strings.TrimSpace(k)
			if p, ok := strings.CutSuffix(k, "*"); ok {
				found := false
				for kk := range knownKinds {
					if strings.HasPrefix(string(kk), p) {
						found = true
					}
				}
				if !found {
					s.fatalf("%s: no event kind matches %q", cmd, k)
				}
			} else if !knownKinds[event.Kind(k)] {
				s.fatalf("%s: unknown event kind %q", cmd, k)
			}
			f.Kinds = append(f.Kinds, k)
		}
	}
	return f, rest
}

func cmdTrace(s *state, _ bool, args []string) {
	f, rest := s.traceFilter("trace", args)
	if len(rest) != 0 {
		s.usageError("trace")
	}
	c := s.requireClient("trace")
	fmt.Fprint(s.ts.Stdout(), NormalizeTrace(c.Events(), f, s.work))
}

func cmdCmpTrace(s *state, _ bool, args []string) {
	f, rest := s.traceFilter("cmp-trace", args)
	if len(rest) != 1 {
		s.usageError("cmp-trace")
	}
	section := rest[0]
	if s.client == nil {
		s.fatalf("cmp-trace: no implementation was started")
	}
	got := NormalizeTrace(s.client.Events(), f, s.work)
	if _, ok := s.archiveFile(section); !ok {
		if !s.run.opts.Update {
			s.fatalf("cmp-trace: the archive has no section %q (run with -update or %s=1 to create it)", section, UpdateEnv)
		}
	}
	want, _ := s.archiveFile(section)
	if got == want {
		s.check()
		return
	}
	if s.run.opts.Update {
		s.updates[section] = got
		s.check()
		return
	}
	s.printedAt = s.checks + 1
	s.ts.Fatalf("cmp-trace %s: the normalized trace differs from the golden section (- golden, + actual); run with -update or %s=1 to accept it\n%s",
		section, UpdateEnv, lineDiff(want, got))
}

// archiveFile reads a file of the script's archive as extracted into $WORK.
func (s *state) archiveFile(name string) (string, bool) {
	b, err := os.ReadFile(s.path(name))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// lineDiff renders a minimal line diff of want and got.
func lineDiff(want, got string) string {
	a := splitLines(want)
	b := splitLines(got)
	// Longest common subsequence, small inputs.
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("+ " + b[j] + "\n")
			j++
		default:
			out.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return out.String()
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// ---- served fixtures ----

func readState(path string) (fixture.State, bool, error) { return fixture.ReadState(path) }
func writeState(path string, st fixture.State) error     { return fixture.WriteState(path, st) }

// startServed starts mcp-fixture as a remote server and waits for its
// address.
func startServed(s *state, name string, knobs map[string]string) (*served, error) {
	path := s.ts.Getenv("PATH")
	exe, err := lookPathIn("mcp-fixture", path)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Dir = s.work
	cmd.Env = []string{"PATH=" + path, "HOME=" + s.ts.Getenv("HOME"), "TMPDIR=" + s.ts.Getenv("TMPDIR")}
	if g := os.Getenv("GORACE"); g != "" {
		cmd.Env = append(cmd.Env, "GORACE="+g)
	}
	for k, v := range knobs {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sv := &served{name: name, cmd: cmd, done: make(chan struct{}), stderr: stderr}
	go func() {
		_ = cmd.Wait()
		close(sv.done)
	}()
	ctx, cancel := context.WithTimeout(s.ctx, s.run.awaitTimeout)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	portFile := knobs["MCP_FIXTURE_PORT_FILE"]
	for {
		if b, err := os.ReadFile(portFile); err == nil && strings.HasSuffix(string(b), "\n") {
			sv.addr = strings.TrimSpace(string(b))
			return sv, nil
		}
		select {
		case <-tick.C:
		case <-sv.done:
			return nil, fmt.Errorf("%w: the fixture exited (%v): %s", errNoAddr, cmd.ProcessState, strings.TrimSpace(stderr.String()))
		case <-ctx.Done():
			sv.stop()
			return nil, fmt.Errorf("%w within %v", errNoAddr, s.run.awaitTimeout)
		}
	}
}

// lookPathIn finds an executable in a PATH list.
func lookPathIn(name, pathList string) (string, error) {
	for _, dir := range strings.Split(pathList, ":") {
		if dir == "" {
			continue
		}
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH", name)
}

// ---- holds ----

func cmdHold(s *state, _ bool, args []string) {
	if len(args) != 1 {
		s.usageError("hold")
	}
	p := s.path(args[0] + ".hold")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		s.fatalf("hold: %v", err)
	}
}

func cmdReleaseHold(s *state, _ bool, args []string) {
	if len(args) != 1 {
		s.usageError("release-hold")
	}
	p := s.path(args[0] + ".hold")
	ctx, cancel := s.timeoutCtx(0)
	defer cancel()
	// Opening a FIFO for writing without blocking fails with ENXIO until a
	// reader has it open: poll for the waiting wrapper on a short ticker.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			_ = os.Remove(p)
			_, werr := f.Write([]byte("go\n"))
			f.Close()
			if werr != nil {
				s.fatalf("release-hold: %v", werr)
			}
			return
		}
		if !errors.Is(err, syscall.ENXIO) {
			s.fatalf("release-hold: %v", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			s.fatalWithTails("release-hold %s: no server waited on %s within %v", args[0], p, s.run.awaitTimeout)
		}
	}
}
