package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
)

// H is what a spec body works with: one implementation under test behind
// its driver, fixture servers with their journals, and the evidence the
// spec has proven. Every wait is bounded by Config.AwaitTimeout in real
// time; a wait that runs out fails the spec.
type H struct {
	ctx context.Context
	req Requirement
	era driver.Era
	s   *state
	dir string
	// mode is the clock the spec runs the implementation on: the run's,
	// except that field specs always run on the real clock.
	mode string

	c          *driver.Client
	lastClient *driver.Client // the previous driver, for diagnostics
	stderr     *syncBuffer

	journals  map[string]string            // journal key -> file
	followers map[string]*journal.Follower // journal key -> its reader
	knobs     map[string]map[string]string // journal key -> the fixture's environment
	procs     []*exec.Cmd                  // processes the harness itself started
	calls     int
	acquires  int

	// contradictions end every wait at once when one returns a reason
	// (Unless).
	contradictions []func() string

	claims   []*Claim
	observed []observation
	measured []string // what the spec measured (Measure)
	// failedChecks are the failed Checks, each "[source] expected: claim"
	// and what was observed.
	failedChecks []string
	errs         []string // teardown failures
}

func newH(ctx context.Context, r Requirement, era driver.Era, s *state) *H {
	dir, err := os.MkdirTemp(s.cfg.TempDir, "mcplife-conformance-"+r.ID+"-"+string(era)+"-")
	if err != nil {
		ginkgo.Fail("making the spec's directory: " + err.Error())
	}
	mode := s.mode
	if r.Profile == ProfileField {
		mode = ClockReal
	}
	h := &H{ctx: ctx, req: r, era: era, s: s, dir: dir, mode: mode, journals: map[string]string{}, followers: map[string]*journal.Follower{}, knobs: map[string]map[string]string{}}
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
	msg := fmt.Sprintf(format, args...)
	if len(h.failedChecks) > 0 {
		msg = strings.Join(h.failedChecks, "\n") + "\n" + msg
		h.failedChecks = nil
	}
	ginkgo.Fail(msg + h.recentContext())
}

// must fails the spec on an unexpected error.
func (h *H) must(err error, what string) {
	ginkgo.GinkgoHelper()
	if err != nil {
		h.fail("%s: %v", what, err)
	}
}

// HeldToConventions reports whether the driver under test is held to
// mcplife's host conventions (driver.ProfileConventions) where a
// requirement of another profile touches them: it claims the profile, or
// its protocol version predates it, so its profiles still hold the
// requirements that moved there.
func (h *H) HeldToConventions() bool {
	hello := h.s.hello
	return hello.Claims(driver.ProfileConventions) || !hello.Knows(driver.ProfileConventions)
}

// Era returns the MCP protocol era the spec runs in: the era every fixture
// server it configures speaks, unless its knobs say otherwise.
func (h *H) Era() driver.Era { return h.era }

// Modern reports whether the spec runs in the modern (stateless) era.
func (h *H) Modern() bool { return h.era == driver.EraModern }

// Virtual reports whether the run uses the virtual clock.
func (h *H) Virtual() bool { return h.mode == ClockVirtual }

// Dir returns the spec's own directory; Workspace, Home and CacheDir are
// inside it.
func (h *H) Dir() string       { return h.dir }
func (h *H) Workspace() string { return filepath.Join(h.dir, "workspace") }
func (h *H) Home() string      { return filepath.Join(h.dir, "home") }
func (h *H) CacheDir() string  { return filepath.Join(h.dir, "cache") }

// Path returns a path inside the spec's directory.
func (h *H) Path(name string) string { return filepath.Join(h.dir, name) }

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
