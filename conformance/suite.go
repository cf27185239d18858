package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/mcplife/mcplife/internal/idle"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/mcplife/mcplife/conformance/driver"
)

// Clock modes of a run.
const (
	// ClockAuto uses the virtual clock when the driver announces
	// virtual-clock, real time otherwise.
	ClockAuto = "auto"
	// ClockVirtual requires the virtual clock: timing is checked exactly.
	ClockVirtual = driver.ClockVirtual
	// ClockReal runs in real time even when the driver has a virtual clock:
	// durations the suite configures are multiplied by TimeScale and timing
	// is checked within tolerance bands.
	ClockReal = driver.ClockReal
)

// Defaults of Config.
const (
	DefaultTimeScale       = 0.25
	DefaultAwaitTimeout    = 60 * time.Second
	DefaultShutdownTimeout = 30 * time.Second
)

// Target says how to start drivers of the implementation under test. Every
// spec starts its own driver.
type Target struct {
	// Name describes the target in reports ("reference (in-process)", the
	// command line, ...).
	Name string
	// Command, when not empty, is the command line of an external driver. It
	// runs in its own process group with environment Env (nil: inherit).
	Command []string
	Env     []string
	// InProcess, when Command is empty, serves the reference driver in this
	// process with these options.
	InProcess *driver.ServeOptions
	// Ahead is how many processes of an external driver the suite keeps
	// started ahead of the specs that will use them (0: none). A process
	// started ahead loads its language runtime and libraries while the
	// spec before it runs, and receives nothing until its spec's hello
	// (conformance/spare.go; docs/DRIVER.md section 4).
	Ahead int
}

// start starts one driver; an external driver's stderr goes to stderr.
func (t Target) start(ctx context.Context, stderr io.Writer) (*driver.Client, error) {
	if len(t.Command) > 0 {
		env := t.Env
		if env == nil {
			env = os.Environ()
		}
		env = append(slices.Clip(env), DriverEnvProbe+"=leaked-from-the-driver's-own-environment")
		return driver.StartCommand(ctx, t.Command, env, stderr)
	}
	opts := driver.ServeOptions{}
	if t.InProcess != nil {
		opts = *t.InProcess
	}
	return driver.StartInProcess(ctx, opts)
}

// DriverEnvProbe is a variable every external driver gets in its own
// environment: a server that sees it was given the driver's environment
// instead of start.env's allowlisted variables (SEC-ENV-001).
const DriverEnvProbe = "MCPLIFE_CONFORMANCE_DRIVER_ENV_PROBE"

// External reports whether drivers run as their own processes.
func (t Target) External() bool { return len(t.Command) > 0 }

// Fixture says how an implementation under test launches the fixture MCP
// server: the command and arguments written into server configurations,
// plus environment variables every fixture server gets (for example what
// makes a test binary play the fixture).
type Fixture struct {
	Command string
	Args    []string
	Env     map[string]string
}

// Config configures a run of the suite.
type Config struct {
	Target  Target
	Fixture Fixture
	// Clock is ClockAuto (""), ClockVirtual or ClockReal.
	Clock string
	// TimeScale multiplies the durations the suite configures in real-time
	// mode (0: DefaultTimeScale). The virtual clock ignores it.
	TimeScale float64
	// AwaitTimeout bounds, in real time, each wait for an event, a response
	// or a journal entry (0: DefaultAwaitTimeout).
	AwaitTimeout time.Duration
	// ShutdownTimeout bounds, in real time, a driver's shutdown at the end
	// of a spec (0: DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// Baseline lists the expected failures of the implementation; nil
	// expects none.
	Baseline *Baseline
	// Glue lists the requirements whose verdict the driver's own code
	// decides rather than the library it wraps (a restart policy, a naming
	// rule the library lacks), each with the reason, in the baseline's
	// format. The verdict stands; reports and the matrix credit it to the
	// driver ("pass (driver)"). nil credits every verdict to the library.
	Glue *Baseline
	// Profiles, when not empty, restricts the run to these profiles.
	Profiles []driver.Profile
	// IDs, when not empty, restricts the run to these requirements.
	IDs []string
	// Eras, when not empty, restricts the run to these MCP protocol eras
	// (harness conformance -era); the others are not selected.
	Eras []driver.Era
	// LabelFilter is an extra ginkgo label filter, and-ed with the above.
	LabelFilter string
	// JUnitReport and JSONReport are paths for ginkgo's reports ("": none).
	JUnitReport string
	JSONReport  string
	// Out receives the human summary (nil: os.Stdout).
	Out io.Writer
	// TempDir is where specs make their directories ("": os.TempDir()).
	TempDir string
	// Verbose makes ginkgo report every spec as it runs.
	Verbose bool
	// NoColor turns off colors in ginkgo's output.
	NoColor bool
	// FailFast stops the run at the first failing requirement (ginkgo's
	// fail-fast); the summary then counts the rest as not run.
	FailFast bool
}

func (c Config) withDefaults() Config {
	if c.Clock == "" {
		c.Clock = ClockAuto
	}
	if c.TimeScale <= 0 {
		c.TimeScale = DefaultTimeScale
	}
	if c.AwaitTimeout <= 0 {
		c.AwaitTimeout = DefaultAwaitTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Out == nil {
		c.Out = os.Stdout
	}
	if c.TempDir == "" {
		c.TempDir = os.TempDir()
	}
	if c.Target.Name == "" {
		if c.Target.External() {
			c.Target.Name = strings.Join(c.Target.Command, " ")
		} else {
			c.Target.Name = "reference runtime (in-process driver)"
		}
	}
	return c
}

func (c Config) check() error {
	switch c.Clock {
	case ClockAuto, ClockVirtual, ClockReal:
	default:
		return fmt.Errorf("clock must be %q, %q or %q, not %q", ClockAuto, ClockVirtual, ClockReal, c.Clock)
	}
	if c.Fixture.Command == "" {
		return errors.New("no fixture command")
	}
	known := map[driver.Profile]bool{}
	for _, p := range Profiles() {
		known[p.Name] = true
	}
	for _, p := range c.Profiles {
		if !known[p] {
			return fmt.Errorf("unknown profile %q", p)
		}
	}
	for _, id := range c.IDs {
		if _, ok := Lookup(id); !ok {
			return fmt.Errorf("unknown requirement %q", id)
		}
	}
	for _, e := range c.Eras {
		if !slices.ContainsFunc(driver.Eras(), func(i driver.EraInfo) bool { return i.Name == e }) {
			return fmt.Errorf("unknown era %q (legacy or modern)", e)
		}
	}
	if c.Baseline != nil {
		if err := c.Baseline.check(); err != nil {
			return err
		}
	}
	if c.Glue != nil {
		if err := c.Glue.check(); err != nil {
			return err
		}
	}
	return nil
}

// labelFilter combines the profile, id and extra filters.
func (c Config) labelFilter() string {
	var parts []string
	or := func(vals []string) string {
		return "(" + strings.Join(vals, " || ") + ")"
	}
	if len(c.Profiles) > 0 {
		vals := make([]string, len(c.Profiles))
		for i, p := range c.Profiles {
			vals[i] = string(p)
		}
		parts = append(parts, or(vals))
	}
	if len(c.IDs) > 0 {
		parts = append(parts, or(c.IDs))
	}
	if len(c.Eras) > 0 {
		vals := make([]string, len(c.Eras))
		for i, e := range c.Eras {
			vals[i] = string(e)
		}
		parts = append(parts, or(vals))
	}
	if c.LabelFilter != "" {
		parts = append(parts, "("+c.LabelFilter+")")
	}
	return strings.Join(parts, " && ")
}

// state is the suite's state during a run; specs are registered at package
// initialisation, so they reach their configuration through it.
type state struct {
	cfg       Config
	hello     *driver.HelloResult
	mode      string // ClockVirtual or ClockReal
	validator *driver.Validator
	result    *Result
	setupErr  error
	// applied counts the specs that applied to the driver and ran their
	// body; specs run one at a time.
	applied int
	// idle paces the idle detector (idle.go) for the whole run.
	idle idle.Pace
	// drivers starts the drivers, Target.Ahead of them ahead (spare.go).
	drivers drivers
}

var suite *state

// fakeT collects ginkgo's verdict when the suite does not run under go test.
type fakeT struct{ failed bool }

func (t *fakeT) Fail() { t.failed = true }

// Run runs the suite once with cfg and returns the verdicts. t receives
// ginkgo's own verdict (nil: ignored); the run's verdict, which applies the
// baseline, is Result.OK. Ginkgo allows one run per process.
func Run(t ginkgo.GinkgoTestingT, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	validator, err := driver.NewValidator()
	if err != nil {
		return nil, err
	}
	suite = &state{cfg: cfg, validator: validator, drivers: drivers{target: cfg.Target}}
	defer func() {
		suite.drivers.close()
		suite = nil
	}()

	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	if f := cfg.labelFilter(); f != "" {
		if suiteConfig.LabelFilter != "" {
			f = "(" + suiteConfig.LabelFilter + ") && " + f
		}
		suiteConfig.LabelFilter = f
	}
	if err := selectsSome(suiteConfig.LabelFilter); err != nil {
		return nil, err
	}
	if cfg.JUnitReport != "" {
		reporterConfig.JUnitReport = cfg.JUnitReport
	}
	if cfg.JSONReport != "" {
		reporterConfig.JSONReport = cfg.JSONReport
	}
	if cfg.Verbose {
		reporterConfig.Verbose = true
	}
	if cfg.NoColor {
		reporterConfig.NoColor = true
	}
	if cfg.FailFast {
		suiteConfig.FailFast = true
	}
	if t == nil {
		t = &fakeT{}
	}
	declareSpecs()
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "mcplife conformance", suiteConfig, reporterConfig)
	if suite.setupErr != nil {
		return suite.result, suite.setupErr
	}
	if suite.result == nil {
		return nil, errors.New("the suite produced no result")
	}
	return suite.result, nil
}

// selectsSome reports an error when the label filter selects no
// requirement: ginkgo would then run no suite node at all and end in
// "SUCCESS!" although nothing was checked.
func selectsSome(filter string) error {
	if filter == "" {
		return nil
	}
	match, err := types.ParseLabelFilter(filter)
	if err != nil {
		return fmt.Errorf("label filter %q: %w", filter, err)
	}
	for _, r := range Requirements() {
		for _, e := range r.Eras {
			if match(r.Labels(e)) {
				return nil
			}
		}
	}
	return fmt.Errorf("the selection (label filter %q) matches no requirement", filter)
}

// The suite-level nodes.
var _ = ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
	if suite == nil {
		ginkgo.AbortSuite("the conformance suite must be started with conformance.Run")
	}
	// One driver answers hello for the whole run: its capabilities and
	// profiles decide which requirements apply.
	var stderr strings.Builder
	hctx, cancel := context.WithTimeout(ctx, suite.cfg.AwaitTimeout)
	defer cancel()
	c, err := suite.cfg.Target.start(hctx, &stderr)
	if err == nil {
		var h *driver.HelloResult
		h, err = c.Hello(hctx)
		cerr := c.Close(hctx)
		if err == nil && cerr != nil {
			err = fmt.Errorf("closing the driver after hello: %w", cerr)
		}
		suite.hello = h
	}
	if err == nil {
		suite.drivers.prepare(ctx)
	}
	if err != nil {
		suite.setupErr = fmt.Errorf("hello: %w (driver stderr: %q)", err, stderr.String())
		ginkgo.AbortSuite(suite.setupErr.Error())
	}
	hasVirtual := suite.hello.Has(driver.CapVirtualClock)
	switch suite.cfg.Clock {
	case ClockVirtual:
		if !hasVirtual {
			suite.setupErr = errors.New("clock virtual: the driver does not announce virtual-clock")
			ginkgo.AbortSuite(suite.setupErr.Error())
		}
		suite.mode = ClockVirtual
	case ClockReal:
		suite.mode = ClockReal
	default:
		suite.mode = ClockReal
		if hasVirtual {
			suite.mode = ClockVirtual
		}
	}
	ginkgo.GinkgoWriter.Printf("conformance: %s %s via %s; clock %s\n", suite.hello.Implementation.Name,
		suite.hello.Implementation.Version, suite.cfg.Target.Name, suite.modeString())
})

// nothingApplied is the failure of a run in which no selected requirement
// applied to the driver. It fails ginkgo's verdict too, so its output does
// not end in "SUCCESS!" after the summary's FAIL; the summary reports it in
// its verdict line, with the counts, instead of as a suite failure.
const (
	nothingApplied = nothingRan + ": " + nothingRanWhy
	nothingRan     = "no requirement ran"
	nothingRanWhy  = "the driver claims none of the selected profiles, or lacks the capabilities they need; a run that checks nothing proves nothing"
)

var _ = ginkgo.AfterSuite(func() {
	if suite != nil && suite.setupErr == nil && suite.applied == 0 {
		ginkgo.Fail(nothingApplied)
	}
})

var _ = ginkgo.ReportAfterSuite("conformance summary", func(r ginkgo.Report) {
	if suite == nil {
		return
	}
	res := summarize(suite, r)
	suite.result = res
	res.WriteSummary(suite.cfg.Out)
})

// modeString describes the clock mode for reports.
func (s *state) modeString() string {
	if s.mode == ClockVirtual {
		return "virtual (timing checked exactly)"
	}
	return fmt.Sprintf("real (time scale %g; timing checked within -%v/+%v+%d%%)",
		s.cfg.TimeScale, earlyTolerance, lateTolerance, int(lateFactor*100))
}

// notApplicable reports why r does not apply, in era, to the driver under
// test, or "".
func (s *state) notApplicable(r Requirement, era driver.Era) string {
	h := s.hello
	if h == nil {
		return "no hello"
	}
	if !h.Speaks(era) {
		if h.Protocol == driver.ProtocolVersion1 {
			return fmt.Sprintf("not applicable: the driver speaks %s, which announces no eras: legacy only", driver.ProtocolVersion1)
		}
		return fmt.Sprintf("not applicable: the driver does not speak the %s era", era)
	}
	if p := r.ClaimedAs(h); !claimed(h, p) {
		return fmt.Sprintf("not applicable: the driver does not claim profile %s", p)
	}
	var missing []string
	for _, c := range r.Capabilities() {
		if !h.Has(c) {
			missing = append(missing, string(c))
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("not applicable: the driver does not announce %s", strings.Join(missing, ", "))
	}
	if s.mode == ClockReal && slices.Contains(r.Capabilities(), driver.CapVirtualClock) {
		return "not applicable: needs the virtual clock and the run uses real time"
	}
	return ""
}

// reqOf finds the requirement of a spec report and its era by their
// labels.
func reqOf(sr types.SpecReport) (Requirement, driver.Era, bool) {
	var (
		req   Requirement
		found bool
		era   driver.Era
	)
	for _, l := range sr.Labels() {
		if r, ok := Lookup(l); ok {
			req, found = r, true
		}
		for _, e := range driver.Eras() {
			if l == string(e.Name) {
				era = e.Name
			}
		}
	}
	return req, era, found && era != ""
}
