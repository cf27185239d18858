package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/fixturelink"
	"github.com/mcplife/mcplife/internal/shard"
	"github.com/mcplife/mcplife/runtime/event"
)

// ErrNoMatch is returned by RunCatalog when no scenario matches.
var ErrNoMatch = errors.New("no scenario matches")

// ErrEmptyShard is returned by RunCatalog when the shard asked for gets
// none of the selected scenarios (more shards than scenarios).
var ErrEmptyShard = errors.New("the shard has no scenario")

// DirError is returned by RunCatalog when RunOptions.Dir cannot be used:
// it does not exist, is not a directory, cannot be read, holds a file
// that is not a scenario, or holds no scenario at all. Err is the cause.
type DirError struct {
	Dir string
	Err error
}

func (e *DirError) Error() string { return fmt.Sprintf("scenario directory %s: %v", e.Dir, e.Err) }

func (e *DirError) Unwrap() error { return e.Err }

// readDir lists the scenarios of dir, naming the real cause when it
// cannot: "no such file or directory" for a missing dir, not "open .".
func readDir(dir string) ([]Scenario, error) {
	st, err := os.Stat(dir)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &DirError{Dir: dir, Err: err}
	}
	if !st.IsDir() {
		return nil, &DirError{Dir: dir, Err: errors.New("not a directory")}
	}
	list, err := ListFS(os.DirFS(dir))
	if err != nil {
		return nil, &DirError{Dir: dir, Err: err}
	}
	if len(list) == 0 {
		return nil, &DirError{Dir: dir, Err: errors.New("holds no scenario file (NNN-slug.txtar)")}
	}
	return list, nil
}

// RunOptions configures RunCatalog.
type RunOptions struct {
	Options
	// Dir, when not "", holds the scripts to run instead of the embedded
	// catalog (tests of the harness use it).
	Dir string
	// Run, when not nil, selects the scenarios whose name it matches.
	Run *regexp.Regexp
	// Shard, when enabled, runs only its share of the selected scenarios
	// (sorted by name, index modulo Total); see package internal/shard.
	Shard shard.Spec
	// Parallel is how many scenarios run at once; zero means twice
	// GOMAXPROCS (scenarios mostly wait on processes).
	Parallel int
	// Verbose keeps the whole log of every scenario, not only of failures.
	Verbose bool
	// FixtureExecutable, when not "", is a program that runs the fixture
	// MCP server when invoked under the name mcp-fixture: RunCatalog puts a
	// symlink mcp-fixture to it first on the PATH of the scripts and of an
	// external driver (the harness binary passes itself). This process's
	// own environment is not changed.
	FixtureExecutable string
	// Progress, when set, is called as each scenario ends, from one
	// goroutine at a time.
	Progress func(Result)
	// Eras are the protocol eras to run the catalog in, in order
	// (EraLegacy, EraModern): each era runs every selected scenario once
	// with its fixture servers in that era (Options.Era); a scenario whose
	// header declares another era is reported not applicable (StatusNA)
	// instead. Nil runs Options.Era only.
	Eras []string
}

// Statuses of a Result.
const (
	StatusPass = "pass"
	StatusFail = "fail"
	StatusSkip = "skip"
	// StatusNA is a scenario not run because its header declares another
	// protocol era (Scenario.NotApplicable gives the reason).
	StatusNA = "n/a"
)

// Result is the outcome of one scenario of a run.
type Result struct {
	Scenario
	// Era is the protocol era the scenario ran in (or was not applicable
	// in).
	Era string
	// Status is StatusPass, StatusFail, StatusSkip or StatusNA.
	Status string
	// Duration is the scenario's wall time.
	Duration time.Duration
	// Virtual is the virtual time the scenario covered.
	Virtual time.Duration
	// Clock is the clock the implementation ran on (ScriptResult.Clock).
	Clock string
	// Checks counts the checks that passed.
	Checks int
	// Reason is the skip reason or the first failure message.
	Reason string
	// Log is the scenario's log: the commands run, their output and, on
	// failure, the trace and journal tails.
	Log string
	// Events are the scenario's lifecycle events on its virtual time axis
	// (only with Options.KeepEvents).
	Events []event.Event
}

// Report is the outcome of a run.
type Report struct {
	Hello   *driver.HelloResult
	Results []Result
	// Eras are the protocol eras the catalog ran in, in order.
	Eras    []string
	Passed  int
	Failed  int
	Skipped int
	// NotApplicable counts the scenarios not run in an era because they
	// declare the other one.
	NotApplicable int
	// Wall is the run's wall time; Virtual sums the virtual time every
	// scenario covered.
	Wall    time.Duration
	Virtual time.Duration
}

// RunCatalog runs the scenarios against the implementation of ro.Options:
// it probes the driver (hello), extracts the selected scripts into a
// temporary directory and runs them in parallel, once per era of ro.Eras
// (the eras share the parallel slots). It returns an error only when the
// run cannot start: no scenario matches (ErrNoMatch), an unknown era, or
// the driver cannot be started, does not answer hello or speaks another
// protocol version. Scenario failures are in the Report.
func RunCatalog(ctx context.Context, ro RunOptions) (*Report, error) {
	start := time.Now()
	eras := ro.Eras
	if len(eras) == 0 {
		eras = []string{ro.Era}
		if ro.Era == "" {
			eras = []string{EraLegacy}
		}
	}
	for _, e := range eras {
		if e != EraLegacy && e != EraModern {
			return nil, fmt.Errorf("unknown protocol era %q (want %s or %s)", e, EraLegacy, EraModern)
		}
	}
	var catalog fs.FS = Catalog
	var list []Scenario
	var err error
	if ro.Dir != "" {
		catalog = os.DirFS(ro.Dir)
		list, err = readDir(ro.Dir)
	} else {
		list, err = ListFS(catalog)
	}
	if err != nil {
		return nil, err
	}
	var selected []Scenario
	for _, sc := range list {
		if ro.Run == nil || ro.Run.MatchString(sc.Name) {
			selected = append(selected, sc)
		}
	}
	if len(selected) == 0 {
		return nil, ErrNoMatch
	}
	selected = shard.Take(ro.Shard, selected)
	if len(selected) == 0 {
		// More shards than scenarios: this one has nothing to do.
		return nil, ErrEmptyShard
	}
	tmp, err := os.MkdirTemp("", "mcplife-scenarios-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if ro.FixtureExecutable != "" {
		bin, err := fixtureBin(tmp, ro.FixtureExecutable)
		if err != nil {
			return nil, err
		}
		ro.fixtureBin = bin
	}
	hello, err := Probe(ctx, ro.Options)
	if err != nil {
		return nil, err
	}
	parallel := ro.Parallel
	if parallel <= 0 {
		parallel = 2 * runtime.GOMAXPROCS(0)
	}
	sem := make(chan struct{}, parallel)
	progressMu := &sync.Mutex{}
	var runners []*runner
	for _, era := range eras {
		r, err := startEra(ro, era, catalog, selected, hello, tmp, sem, progressMu)
		if err != nil {
			return nil, err
		}
		runners = append(runners, r)
	}

	rep := &Report{Hello: hello, Eras: eras}
	for _, r := range runners {
		r.wg.Wait()
		sort.Slice(r.results, func(i, j int) bool { return r.results[i].Name < r.results[j].Name })
		rep.Results = append(rep.Results, r.results...)
	}
	rep.Wall = time.Since(start)
	for _, res := range rep.Results {
		switch res.Status {
		case StatusPass:
			rep.Passed++
		case StatusFail:
			rep.Failed++
		case StatusNA:
			rep.NotApplicable++
		default:
			rep.Skipped++
		}
		rep.Virtual += res.Virtual
	}
	return rep, nil
}

// startEra starts the scripts of the selected scenarios that apply to era
// (extracted under tmp) and reports the others not applicable at once (all
// of them when the driver does not speak era); the
// returned runner's wait group ends when every script of the era has.
func startEra(ro RunOptions, era string, catalog fs.FS, selected []Scenario, hello *driver.HelloResult, tmp string, sem chan struct{}, progressMu *sync.Mutex) (*runner, error) {
	dir := filepath.Join(tmp, "scripts-"+era)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	r := &runner{
		dir:        dir,
		era:        era,
		verbose:    ro.Verbose,
		progress:   ro.Progress,
		progressMu: progressMu,
		scenario:   map[string]Scenario{},
		covered:    map[string]ScriptResult{},
		sem:        sem,
	}
	// A driver that does not speak the era gets none of its scenarios:
	// its servers speak that era only, so every one would fail on the
	// first connect (the conformance suite's rule for requirements).
	unspoken := UnspokenEra(hello, era)
	var files []string
	for _, sc := range selected {
		if unspoken != "" {
			r.record(Result{Scenario: sc, Era: era, Status: StatusNA, Reason: unspoken})
			continue
		}
		if !sc.AppliesTo(era) {
			r.record(Result{Scenario: sc, Era: era, Status: StatusNA, Reason: sc.NotApplicable(era)})
			continue
		}
		data, err := fs.ReadFile(catalog, sc.File)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, sc.File)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, err
		}
		files = append(files, p)
		r.scenario[sc.Name] = sc
	}
	if len(files) == 0 {
		return r, nil
	}
	opts := ro.Options
	opts.Era = era
	if len(opts.Driver) > 0 {
		// A driver may look commands up on its own PATH (docs/DRIVER.md,
		// start): give it the era's mcp-fixture first too.
		env := opts.DriverEnv
		if env == nil {
			env = os.Environ()
		}
		path, err := eraPath(filepath.Join(tmp, "bin-"+era), era, opts.scriptPath(os.Getenv("PATH")))
		if err != nil {
			return nil, err
		}
		opts.DriverEnv = append(slices.Clone(env), "PATH="+path)
	}
	prev := opts.OnScript
	opts.OnScript = func(sr ScriptResult) {
		r.mu.Lock()
		r.covered[sr.Name] = sr
		r.mu.Unlock()
		if prev != nil {
			prev(sr)
		}
	}
	opts.Update = false // the scripts are temporary copies
	p := Params(dir, opts, hello)
	p.Dir = ""
	p.Files = files
	top := &runT{r: r, top: true}
	if err := top.runTop(func() { testscript.RunT(top, p) }); err != nil {
		return nil, err
	}
	return r, nil
}

// fixtureBin makes a bin directory under tmp with mcp-fixture linked to
// exe, for the scripts' and the driver's PATH (Options.fixtureBin); this
// process's environment is left alone, so that runs can go side by side.
func fixtureBin(tmp, exe string) (string, error) {
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return "", err
	}
	if _, err := fixturelink.Make(bin, exe); err != nil {
		return "", err
	}
	return bin, nil
}

// UnspokenEra is the reason every scenario of era is not applicable to a
// driver whose hello does not announce that era, or "" when it speaks it.
func UnspokenEra(hello *driver.HelloResult, era string) string {
	if hello == nil || hello.Speaks(driver.Era(era)) {
		return ""
	}
	if hello.Protocol == driver.ProtocolVersion1 {
		return fmt.Sprintf("not applicable in %s: the driver speaks %s, which announces no eras: legacy only", era, driver.ProtocolVersion1)
	}
	return fmt.Sprintf("not applicable in %s: the driver does not speak the %s era", era, era)
}

// runner collects the results of one RunCatalog.
type runner struct {
	dir        string // where the scripts were extracted
	era        string // the protocol era of the scripts
	verbose    bool
	progress   func(Result)
	progressMu *sync.Mutex // serialises progress calls, across eras
	scenario   map[string]Scenario
	sem        chan struct{}
	wg         sync.WaitGroup

	mu      sync.Mutex
	results []Result
	covered map[string]ScriptResult
}

// runT implements testscript.T for RunCatalog: each script runs in its own
// goroutine, at most Parallel at once; Fatal, FailNow and Skip end that
// goroutine (runtime.Goexit) as they end a test.
type runT struct {
	r    *runner
	top  bool
	name string

	mu      sync.Mutex
	log     strings.Builder
	failed  bool
	skipped bool
	reason  string
	start   time.Time
	holding bool
}

// topFatal carries a Fatal of the top-level T out of testscript.RunT.
type topFatal struct{ msg string }

func (t *runT) runTop(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			tf, ok := r.(topFatal)
			if !ok {
				panic(r)
			}
			err = errors.New(tf.msg)
		}
	}()
	f()
	return nil
}

func (t *runT) Skip(args ...any) {
	t.mu.Lock()
	t.skipped = true
	t.reason = strings.TrimSpace(fmt.Sprint(args...))
	t.mu.Unlock()
	t.Log(args...)
	runtime.Goexit()
}

func (t *runT) Fatal(args ...any) {
	if t.top {
		panic(topFatal{fmt.Sprint(args...)})
	}
	t.Log(args...)
	t.FailNow()
}

func (t *runT) FailNow() {
	if t.top {
		panic(topFatal{"failed"})
	}
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	runtime.Goexit()
}

func (t *runT) Log(args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := fmt.Sprint(args...)
	t.log.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		t.log.WriteByte('\n')
	}
}

func (t *runT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *runT) Skipped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.skipped
}

func (t *runT) Verbose() bool { return t.r.verbose }

// Parallel waits for a free slot: the script runs once it returns.
func (t *runT) Parallel() {
	if t.top {
		return
	}
	t.r.sem <- struct{}{}
	t.mu.Lock()
	t.holding = true
	t.start = time.Now()
	t.mu.Unlock()
}

func (t *runT) Run(name string, f func(testscript.T)) {
	child := &runT{r: t.r, name: name, start: time.Now()}
	t.r.wg.Add(1)
	go func() {
		defer t.r.wg.Done()
		defer child.done()
		defer func() {
			if r := recover(); r != nil {
				child.mu.Lock()
				child.failed = true
				fmt.Fprintf(&child.log, "panic: %v\n", r)
				child.mu.Unlock()
			}
		}()
		f(child)
	}()
}

// done records the result of a finished script.
func (t *runT) done() {
	t.mu.Lock()
	holding := t.holding
	res := Result{
		Scenario: t.r.scenario[t.name],
		Duration: time.Since(t.start),
		// Name scripts by file name, not by their temporary path.
		Log: strings.ReplaceAll(t.log.String(), t.r.dir+string(filepath.Separator), ""),
	}
	switch {
	case t.failed:
		res.Status = StatusFail
		res.Reason = failureReason(res.Log)
	case t.skipped:
		res.Status = StatusSkip
		res.Reason = t.reason
	default:
		res.Status = StatusPass
	}
	t.mu.Unlock()
	if res.Name == "" {
		res.Name = t.name
	}
	res.Era = t.r.era
	t.r.mu.Lock()
	if c, ok := t.r.covered[t.name]; ok {
		res.Virtual, res.Checks, res.Events, res.Clock = c.Virtual, c.Checks, c.Events, c.Clock
	}
	t.r.mu.Unlock()
	if holding {
		<-t.r.sem
	}
	t.r.record(res)
}

// record adds a result and reports it to the progress callback.
func (r *runner) record(res Result) {
	r.mu.Lock()
	r.results = append(r.results, res)
	r.mu.Unlock()
	if r.progress != nil {
		r.progressMu.Lock()
		r.progress(res)
		r.progressMu.Unlock()
	}
}

// failureReason picks the first failure message of a log.
func failureReason(log string) string {
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimSpace(line)
		if _, msg, ok := strings.Cut(line, "FAIL: "); ok {
			return msg
		}
	}
	return "failed"
}
