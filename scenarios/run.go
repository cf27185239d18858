package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/idle"
	"github.com/mcplife/mcplife/runtime/event"
)

// UpdateEnv is the environment variable that, set to a non-empty value, makes
// cmp-trace rewrite the golden sections of the scenario files instead of
// failing (as -update does).
const UpdateEnv = "MCPLIFE_UPDATE_GOLDEN"

// StrictEnv is the environment variable that, set to a non-empty value,
// makes the [strict] condition true (as Options.Strict does).
const StrictEnv = "MCPLIFE_STRICT"

// Defaults of Options.
const (
	DefaultAwaitTimeout    = 60 * time.Second
	DefaultShutdownTimeout = 2 * time.Second
	// DefaultTimeScale is the time scale of a real-clock run, the
	// conformance suite's (conformance.DefaultTimeScale).
	DefaultTimeScale = 0.25
)

// Options configures a run of scenarios.
type Options struct {
	// Driver is the command line of an external driver (docs/DRIVER.md);
	// empty runs the reference driver (runtime/host) in this process.
	Driver []string
	// DriverEnv is the environment of an external driver; nil inherits
	// this process's.
	DriverEnv []string
	// Capabilities, when not nil, restricts what the in-process reference
	// driver announces (tests of the harness use it).
	Capabilities []driver.Capability
	// Update makes cmp-trace rewrite golden sections of the script files in
	// place instead of failing. Only useful when the scripts are the
	// source files.
	Update bool
	// AwaitTimeout is the default real-time limit of every wait (await,
	// result, collect, ...); zero means DefaultAwaitTimeout.
	AwaitTimeout time.Duration
	// ShutdownTimeout bounds, in real time, the graceful part of the
	// in-process driver's shutdown; zero means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Strict makes the [strict] condition true: checks of known defects of
	// the reference runtime run too (MCPLIFE_STRICT=1 sets it as well).
	Strict bool
	// OnScript, when set, is called at the end of every script with what
	// it covered.
	OnScript func(ScriptResult)
	// Era is the protocol era every fixture server of the scripts speaks
	// (EraLegacy or EraModern): mcp-fixture on the scripts' PATH runs with
	// that MCP_FIXTURE_ERA unless a server sets MCP_FIXTURE_ERA or
	// MCP_FIXTURE_PROTOCOL_VERSIONS itself, and [era:NAME] is true for it.
	// "" means EraLegacy.
	Era string
	// TimeScale multiplies, on the real clock, the durations a scenario
	// configures and the time each advance waits (see the advance
	// command); 0 means DefaultTimeScale. The virtual clock ignores it.
	TimeScale float64
	// KeepEvents hands every script's lifecycle events to OnScript
	// (ScriptResult.Events) and RunCatalog's results, for timelines.
	KeepEvents bool

	// fixtureBin, when not "", is a directory holding mcp-fixture that
	// RunCatalog puts first on the scripts' PATH (RunOptions.FixtureExecutable).
	fixtureBin string
}

// scriptPath is path with the run's fixture directory, if any, first.
func (o Options) scriptPath(path string) string {
	if o.fixtureBin == "" {
		return path
	}
	if path == "" {
		return o.fixtureBin
	}
	return o.fixtureBin + string(os.PathListSeparator) + path
}

// ScriptResult is what one script covered.
type ScriptResult struct {
	Name string
	// Virtual is the implementation's clock offset when the script ended:
	// the virtual time it covered.
	Virtual time.Duration
	// Checks counts the checks that passed.
	Checks int
	// External tells that the implementation ran behind a separate driver
	// process.
	External bool
	// Clock is the clock the implementation ran on (driver.ClockVirtual or
	// driver.ClockReal; "" when the script started none): a scenario that
	// uses no virtual-time command runs on the real clock of a driver
	// without virtual-clock, and then covers no virtual time.
	Clock string
	// Events are the lifecycle events of every run of the implementation
	// in the script, on one virtual time axis; only with
	// Options.KeepEvents.
	Events []event.Event
}

// runConfig is the shared configuration of one run.
type runConfig struct {
	dir          string
	opts         Options
	hello        *driver.HelloResult
	awaitTimeout time.Duration
	closeTimeout time.Duration
	goneTimeout  time.Duration
	updateMu     sync.Mutex
	// idle paces the idle detector of every script's waits.
	idle idle.Pace
}

// VersionError is returned by Probe for a driver that speaks another
// protocol version.
type VersionError = driver.VersionError

// Probe starts the implementation's driver once, says hello and shuts it
// down, returning what it announced. It fails when the driver cannot be
// started, does not answer, or speaks another protocol version
// (*driver.VersionError) or an unknown vocabulary.
func Probe(ctx context.Context, opts Options) (*driver.HelloResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var stderr lockedBuffer
	c, err := startDriver(ctx, opts, &stderr)
	if err != nil {
		return nil, err
	}
	h, herr := c.Hello(ctx)
	cerr := c.Close(ctx)
	if herr != nil {
		if t := tailLines(stderr.String(), 5); t != "" && !errors.As(herr, new(*driver.VersionError)) {
			herr = fmt.Errorf("%w\ndriver stderr:\n%s", herr, t)
		}
		return nil, herr
	}
	_ = cerr
	return h, nil
}

// startDriver starts the driver of opts: in process or the external command.
func startDriver(ctx context.Context, opts Options, stderr io.Writer) (*driver.Client, error) {
	if len(opts.Driver) == 0 {
		st := opts.ShutdownTimeout
		if st <= 0 {
			st = DefaultShutdownTimeout
		}
		so := driver.ServeOptions{Capabilities: opts.Capabilities, ShutdownTimeout: st}
		if opts.Capabilities != nil {
			// Claim only the profiles the capabilities allow.
			so.Profiles = []driver.Profile{}
			for _, p := range driver.Profiles() {
				ok := true
				for _, c := range p.Requires {
					ok = ok && slices.Contains(opts.Capabilities, c)
				}
				if ok {
					so.Profiles = append(so.Profiles, p.Name)
				}
			}
		}
		return driver.StartInProcess(ctx, so)
	}
	return driver.StartCommand(ctx, opts.Driver, opts.DriverEnv, stderr)
}

// Params returns the testscript parameters that run scripts against the
// implementation whose hello is given (from Probe): the commands, the
// conditions and a Setup that prepares each script and checks it when it
// ends. dir is the directory of the scripts.
func Params(dir string, opts Options, hello *driver.HelloResult) testscript.Params {
	rc := &runConfig{
		dir:          dir,
		opts:         opts,
		hello:        hello,
		awaitTimeout: opts.AwaitTimeout,
		closeTimeout: 15 * time.Second,
		goneTimeout:  5 * time.Second,
	}
	if rc.awaitTimeout <= 0 {
		rc.awaitTimeout = DefaultAwaitTimeout
	}
	if os.Getenv(UpdateEnv) != "" {
		rc.opts.Update = true
	}
	if os.Getenv(StrictEnv) != "" {
		rc.opts.Strict = true
	}
	cmds := map[string]func(*testscript.TestScript, bool, []string){}
	for _, c := range registry() {
		cmds[c.Name] = func(ts *testscript.TestScript, neg bool, args []string) {
			s := stateOf(ts)
			if neg && !c.negatable {
				s.fatalf("unsupported: ! %s (use count 0 ... to check that something did not happen)", c.Name)
			}
			c.run(s, neg, args)
		}
	}
	return testscript.Params{
		Dir:                 dir,
		Cmds:                cmds,
		Condition:           rc.condition,
		Setup:               rc.setup,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	}
}

// setup prepares one script: its state, an empty home directory, and the
// checks that run when it ends.
func (rc *runConfig) setup(env *testscript.Env) error {
	ctx, cancel := context.WithCancel(context.Background())
	s := &state{
		run:     rc,
		work:    env.WorkDir,
		env:     env,
		ctx:     ctx,
		cancel:  cancel,
		pending: map[string]*bgRequest{},
		marks:   map[string]uint64{},
		updates: map[string]string{},
		served:  map[string]*served{},
	}
	env.Values[stateKey{}] = s
	if err := os.MkdirAll(filepath.Join(env.WorkDir, ".home"), 0o755); err != nil {
		return err
	}
	// Every mcp-fixture the script launches speaks the run's era.
	path, err := eraPath(filepath.Join(env.WorkDir, ".era"), rc.era(), rc.opts.scriptPath(env.Getenv("PATH")))
	if err != nil {
		return err
	}
	env.Setenv("PATH", path)
	name := filepath.Base(env.WorkDir)
	name = strings.TrimPrefix(name, "script-")
	t := env.T()
	env.Defer(func() { rc.finish(s, t, name) })
	return nil
}

type failedT interface{ Failed() bool }
type skippedT interface{ Skipped() bool }

// finish runs when a script ends (passed, failed or skipped): it shuts the
// implementation down, reports processes left behind, enforces that the
// script checked something, and writes golden updates.
func (rc *runConfig) finish(s *state, t testscript.T, name string) {
	defer s.cancel()
	failed := false
	if f, ok := t.(failedT); ok {
		failed = f.Failed()
	}
	skipped := false
	if sk, ok := t.(skippedT); ok {
		skipped = sk.Skipped()
	}
	var problems []string
	if failed && s.printedAt == 0 && s.client != nil {
		t.Log("state of the implementation when the script failed:\n" + s.tails())
	}
	left, err := s.shutdown()
	if err != nil && !failed {
		problems = append(problems, fmt.Sprintf("shutting the implementation down: %v", err))
	}
	if len(left) > 0 {
		problems = append(problems, "processes left behind after shutdown (killed now): "+strings.Join(left, ", "))
	}
	if !failed && !skipped && s.checks == 0 {
		problems = append(problems, "the scenario ended without checking anything: use await, count, result ... key=value, status ... key=value, cmp-trace or shutdown (builtin stdout/cmp do not count)")
	}
	if !failed && len(s.updates) > 0 {
		if err := rc.writeUpdates(name, s.updates); err != nil {
			problems = append(problems, err.Error())
		} else {
			t.Log(fmt.Sprintf("golden sections rewritten: %s", strings.Join(sortedKeys(s.updates), ", ")))
		}
	}
	if rc.opts.OnScript != nil {
		sr := ScriptResult{Name: name, Virtual: s.virtualDone + s.lastNow, Checks: s.checks, External: len(rc.opts.Driver) > 0, Clock: s.clock}
		if s.clock == driver.ClockReal {
			// Real time passed, not virtual time.
			sr.Virtual = 0
		}
		if rc.opts.KeepEvents {
			sr.Events = s.allEvents()
		}
		rc.opts.OnScript(sr)
	}
	if len(problems) > 0 && !failed {
		t.Log("FAIL: " + strings.Join(problems, "\nFAIL: "))
		t.FailNow()
	} else if len(problems) > 0 {
		t.Log(strings.Join(problems, "\n"))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := mapKeys(m)
	sort.Strings(out)
	return out
}

// era is the protocol era of the run's fixture servers.
func (rc *runConfig) era() string {
	if rc.opts.Era == "" {
		return EraLegacy
	}
	return rc.opts.Era
}

// condition evaluates the scenario conditions.
func (rc *runConfig) condition(cond string) (bool, error) {
	name, arg, _ := strings.Cut(cond, ":")
	switch name {
	case "cap":
		for _, c := range driver.Capabilities() {
			if string(c.Name) == arg {
				return rc.hello.Has(c.Name), nil
			}
		}
		return false, fmt.Errorf("unknown capability %q (the vocabulary of %s is listed in docs/DRIVER.md)", arg, driver.ProtocolVersion)
	case "profile":
		for _, p := range driver.Profiles() {
			if string(p.Name) == arg {
				return rc.hello.Claims(p.Name), nil
			}
		}
		return false, fmt.Errorf("unknown profile %q", arg)
	case "impl":
		return rc.hello.Implementation.Name == arg, nil
	case "strict":
		if arg != "" {
			return false, fmt.Errorf("condition strict takes no argument")
		}
		return rc.opts.Strict, nil
	case "external":
		if arg != "" {
			return false, fmt.Errorf("condition external takes no argument")
		}
		return len(rc.opts.Driver) > 0, nil
	case "era":
		if arg != EraLegacy && arg != EraModern {
			return false, fmt.Errorf("unknown era %q (want %s or %s)", arg, EraLegacy, EraModern)
		}
		return rc.era() == arg, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}
