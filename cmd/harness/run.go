package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/conformance"
	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/shard"
	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/scenarios"
)

const runUsage = `usage: harness run [-era legacy|modern|both] [-run REGEX] [-shard I/N] [-dir DIR] [-impl 'CMD'] [-json FILE] [-junit FILE] [-timeline DIR] [-stress N] [-v] [flags]

Runs the scenario catalog (embedded in this binary; see harness list)
against the reference runtime in this process, or against the
implementation behind the driver command given with -impl (docs/DRIVER.md),
in each protocol era -era names (every fixture server speaks that era;
both, the default, runs the catalog in legacy, then modern), and prints
one line per scenario and era and a summary. A scenario whose header
declares one era is reported n/a (not applicable) in the other. Against a
driver without the virtual-clock capability, every scenario that needs no
exact virtual instant runs on the real clock, time-scaled as the
conformance suite's real-time mode (-time-scale: advance waits its
duration times the scale, and the durations the scenario configures are
scaled alike); the others (those that use now, pending, await-timer or
cmp-trace, or check a snapshot right after advance) are skipped with the
command they need it for. Exit status: 0 when no scenario failed and
at least one ran, 1 when one failed or none ran (every selected scenario
skipped or not applicable), 2 for bad input (an unknown flag, a -run
pattern that matches nothing, a driver that cannot be started or speaks
another protocol version).

flags:
`

// runScenarios implements `harness run`.
func runScenarios(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", runUsage, stdout, stderr)
	runPattern := fs.String("run", "", "run only the scenarios whose name (NNN-slug) matches this regular expression")
	eraFlag := fs.String("era", eraBoth, "protocol `era` of every fixture server: legacy (the initialize handshake), modern (2026-07-28, stateless) or both (the catalog runs in each)")
	impl := fs.String("impl", "", "driver command line of the implementation under test, e.g. 'node my-driver.js' (default: the reference runtime, in process)")
	jsonFile := fs.String("json", "", "write the results as JSON to `FILE`")
	junitFile := fs.String("junit", "", "write the results as JUnit XML to `FILE`")
	verbose := fs.Bool("v", false, "print the log of every scenario, not only of failures")
	strict := fs.Bool("strict", false, "also run the checks guarded by [strict]: known defects of the reference runtime")
	parallel := fs.Int("parallel", 0, "how many scenarios run at once (default: twice the number of CPUs)")
	timeout := fs.Duration("timeout", scenarios.DefaultAwaitTimeout, "real-time limit of every wait in a scenario (await, result, ...)")
	timeScale := fs.Float64("time-scale", scenarios.DefaultTimeScale, "real-clock runs: factor applied to the durations a scenario configures and to the time each advance waits (as conformance -time-scale)")
	var sf stressFlags
	sf.register(fs.FlagSet)
	timelineDir := fs.String("timeline", "", "write a timeline of every scenario to `DIR`: NNN-slug.svg, .html and the events as .jsonl")
	dir := fs.String("dir", "", "run the scenario files (NNN-slug.txtar) of `DIR` instead of the embedded catalog, e.g. one written by harness repro")
	shardFlag := fs.String("shard", "", "run only shard `I/N` of the selected scenarios (sorted by name, index modulo N); merge the -json reports with harness merge-reports")
	fixtureBin := fs.String("fixture", "", "run this mcp-fixture `binary` (go build ./fixtures/mcp-fixture) as the scenarios' mcp-fixture (default: the fixture built from the checkout here when it is the one this harness links, same module, versions and knobs; otherwise this harness binary); .ci/stress passes a build without -race")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return fs.unexpected("select scenarios with -run REGEX")
	}
	if sf.runs > 0 {
		return runStress("run", args, sf, scenarioVerdicts, stdout, stderr)
	}
	eras, err := parseEras(*eraFlag)
	if err != nil {
		fmt.Fprintf(stderr, "harness run: -era: %v\n", err)
		return 2
	}
	if !(*timeScale > 0) {
		fmt.Fprintf(stderr, "harness run: -time-scale %v: want a factor above 0\n", *timeScale)
		return 2
	}
	ro := scenarios.RunOptions{
		Eras: eras,
		Options: scenarios.Options{
			AwaitTimeout: *timeout,
			Strict:       *strict,
			TimeScale:    *timeScale,
		},
		Parallel: *parallel,
		Verbose:  *verbose,
		Dir:      *dir,
	}
	if *timelineDir != "" {
		if err := os.MkdirAll(*timelineDir, 0o755); err != nil {
			fmt.Fprintf(stderr, "harness run: -timeline: %v\n", err)
			return 2
		}
		ro.KeepEvents = true
	}
	sh, err := shard.Parse(*shardFlag)
	if err != nil {
		fmt.Fprintf(stderr, "harness run: -shard: %v\n", err)
		return 2
	}
	ro.Shard = sh
	if *runPattern != "" {
		re, err := regexp.Compile(*runPattern)
		if err != nil {
			fmt.Fprintf(stderr, "harness run: -run: %v\n", err)
			return 2
		}
		ro.Run = re
	}
	if *impl != "" {
		argv, err := conformance.SplitCommand(*impl)
		if err != nil {
			fmt.Fprintf(stderr, "harness run: -impl: %v\n", err)
			return 2
		}
		ro.Driver = argv
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "harness run: %v\n", err)
		return 1
	}
	ro.FixtureExecutable = exe
	if *fixtureBin == "" {
		if bin, remove, ok := matchingFixture(); ok {
			defer remove()
			ro.FixtureExecutable = bin
		}
	}
	if *fixtureBin != "" {
		if ro.FixtureExecutable, err = fixtureBinary(*fixtureBin); err != nil {
			fmt.Fprintf(stderr, "harness run: -fixture: %v\n", err)
			return 2
		}
	}

	var mu sync.Mutex
	ro.Progress = func(r scenarios.Result) {
		mu.Lock()
		defer mu.Unlock()
		printResult(stdout, r, *verbose)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := scenarios.RunCatalog(ctx, ro)
	if err != nil {
		var ve *driver.VersionError
		var de *scenarios.DirError
		switch {
		case errors.Is(err, scenarios.ErrEmptyShard):
			fmt.Fprintf(stdout, "shard %s has no scenario (more shards than scenarios)\n", sh)
			if *jsonFile != "" {
				if err := writeJSONReport(*jsonFile, &scenarios.Report{Hello: &driver.HelloResult{}}); err != nil {
					fmt.Fprintf(stderr, "harness run: -json: %v\n", err)
					return 1
				}
			}
			return 0
		case errors.As(err, &de):
			fmt.Fprintf(stderr, "harness run: -dir: %s\n", oneLine(err))
		case errors.Is(err, scenarios.ErrNoMatch):
			fmt.Fprintf(stderr, "harness run: no scenario matches -run %q (harness list shows them)\n", *runPattern)
		case errors.As(err, &ve):
			fmt.Fprintf(stderr, "harness run: %s: %s\n", describeImpl(*impl), textsafe.Line(err.Error()))
		default:
			fmt.Fprintf(stderr, "harness run: cannot use %s: %v\n", describeImpl(*impl), oneLine(err))
		}
		return 2
	}
	printSummary(stdout, rep)
	if *jsonFile != "" {
		if err := writeJSONReport(*jsonFile, rep); err != nil {
			fmt.Fprintf(stderr, "harness run: -json: %v\n", err)
			return 1
		}
	}
	if *timelineDir != "" {
		if err := writeTimelines(*timelineDir, rep); err != nil {
			fmt.Fprintf(stderr, "harness run: -timeline: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "timelines: %s\n", *timelineDir)
	}
	if *junitFile != "" {
		if err := writeJUnitReport(*junitFile, rep); err != nil {
			fmt.Fprintf(stderr, "harness run: -junit: %v\n", err)
			return 1
		}
	}
	if rep.Failed > 0 {
		return 1
	}
	if rep.Passed == 0 {
		// As harness conformance: a run that checks nothing proves
		// nothing.
		fmt.Fprintf(stdout, "FAIL: no scenario ran (%d skipped, %d not applicable): %s\n", rep.Skipped, rep.NotApplicable, nothingRanWhy(rep))
		return 1
	}
	return 0
}

// nothingRanWhy says why no scenario of rep ran: the skip reasons, most
// frequent first (e.g. "needs virtual-clock (uses now)" when the driver
// has only the real clock), and the not-applicable ones.
func nothingRanWhy(rep *scenarios.Report) string {
	counts := map[string]int{}
	var order []string
	for _, r := range rep.Results {
		why := r.Reason
		if r.Status == scenarios.StatusNA && r.Reason != scenarios.UnspokenEra(rep.Hello, r.Era) {
			why = "not applicable in " + r.Era
		}
		if counts[why] == 0 {
			order = append(order, why)
		}
		counts[why]++
	}
	sort.SliceStable(order, func(i, j int) bool { return counts[order[i]] > counts[order[j]] })
	var parts []string
	for i, why := range order {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("%d other reasons", len(order)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", counts[why], textsafe.Line(why)))
	}
	return "every selected scenario was skipped for a capability the driver does not announce, or does not apply to the era (" + strings.Join(parts, "; ") + "); a run that checks nothing proves nothing"
}

// eraBoth is the -era value that runs the catalog in every era.
const eraBoth = "both"

// parseEras reads -era: legacy, modern or both.
func parseEras(v string) ([]string, error) {
	switch v {
	case scenarios.EraLegacy, scenarios.EraModern:
		return []string{v}, nil
	case eraBoth:
		return scenarios.Eras(), nil
	}
	return nil, fmt.Errorf("%q is not an era (want legacy, modern or both)", v)
}

// eraCounts counts the results of one era (all eras when era is "").
type eraCounts struct{ passed, failed, skipped, na int }

func countEra(rep *scenarios.Report, era string) eraCounts {
	var c eraCounts
	for _, r := range rep.Results {
		if era != "" && r.Era != era {
			continue
		}
		switch r.Status {
		case scenarios.StatusPass:
			c.passed++
		case scenarios.StatusFail:
			c.failed++
		case scenarios.StatusNA:
			c.na++
		default:
			c.skipped++
		}
	}
	return c
}

// printSummary prints a line per era when the run had more than one, then
// the totals: passed, failed, skipped and not applicable are counted
// apart.
func printSummary(w io.Writer, rep *scenarios.Report) {
	if len(rep.Eras) > 1 {
		for _, era := range rep.Eras {
			c := countEra(rep, era)
			fmt.Fprintf(w, "%s: %d passed, %d failed, %d skipped, %d not applicable\n", era, c.passed, c.failed, c.skipped, c.na)
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped, %d not applicable (era %s; implementation %s %s; wall %.2fs, virtual time covered %.3fs)\n",
		rep.Passed, rep.Failed, rep.Skipped, rep.NotApplicable, strings.Join(rep.Eras, " and "),
		textsafe.Line(rep.Hello.Implementation.Name), textsafe.Line(rep.Hello.Implementation.Version),
		rep.Wall.Seconds(), rep.Virtual.Seconds())
}

func describeImpl(impl string) string {
	if impl == "" {
		return "the reference driver"
	}
	return "driver " + textsafe.Line(strconv.Quote(impl))
}

// oneLine returns err's message on one line, safe for a terminal
// (textsafe.Line).
func oneLine(err error) string {
	return textsafe.Line(strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
}

// printResult prints the progress line of one scenario and, for failures
// (or with -v), its log indented. The name, the reason and the log may
// quote a server or a driver: they are shown through textsafe.
func printResult(w io.Writer, r scenarios.Result, verbose bool) {
	name, reason := textsafe.Line(r.Name), textsafe.Line(r.Reason)
	switch r.Status {
	case scenarios.StatusPass:
		if r.Clock == driver.ClockReal {
			fmt.Fprintf(w, "ok    %-6s %-45s %6.2fs  real clock\n", r.Era, name, r.Duration.Seconds())
			break
		}
		fmt.Fprintf(w, "ok    %-6s %-45s %6.2fs  virtual %s\n", r.Era, name, r.Duration.Seconds(), fmtVirtual(r.Virtual))
	case scenarios.StatusFail:
		fmt.Fprintf(w, "FAIL  %-6s %-45s %6.2fs  %s\n", r.Era, name, r.Duration.Seconds(), reason)
	case scenarios.StatusNA:
		fmt.Fprintf(w, "n/a   %-6s %-45s %6s   %s\n", r.Era, name, "-", reason)
	default:
		fmt.Fprintf(w, "skip  %-6s %-45s %6.2fs  %s\n", r.Era, name, r.Duration.Seconds(), reason)
	}
	if r.Status == "fail" || verbose {
		for _, line := range strings.Split(strings.TrimRight(r.Log, "\n"), "\n") {
			fmt.Fprintf(w, "      %s\n", textsafe.Block(line))
		}
	}
}

func fmtVirtual(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%d.%03ds", ms/1000, ms%1000)
}

// jsonReport is the -json output.
type jsonReport struct {
	Protocol       string                `json:"protocol"`
	Implementation driver.Implementation `json:"implementation"`
	Capabilities   []driver.Capability   `json:"capabilities"`
	Eras           []string              `json:"eras"`
	Passed         int                   `json:"passed"`
	Failed         int                   `json:"failed"`
	Skipped        int                   `json:"skipped"`
	NotApplicable  int                   `json:"notApplicable"`
	WallSeconds    float64               `json:"wallSeconds"`
	VirtualSeconds float64               `json:"virtualSeconds"`
	Scenarios      []jsonScenario        `json:"scenarios"`
}

type jsonScenario struct {
	Number         string  `json:"number"`
	Name           string  `json:"name"`
	Description    string  `json:"description"`
	Guards         string  `json:"guards"`
	Era            string  `json:"era"`
	Status         string  `json:"status"`
	Seconds        float64 `json:"seconds"`
	VirtualSeconds float64 `json:"virtualSeconds"`
	Checks         int     `json:"checks"`
	Reason         string  `json:"reason,omitempty"`
	Log            string  `json:"log,omitempty"`
}

func writeJSONReport(file string, rep *scenarios.Report) error {
	out := jsonReport{
		Protocol:       rep.Hello.Protocol,
		Implementation: rep.Hello.Implementation,
		Capabilities:   rep.Hello.Capabilities,
		Eras:           rep.Eras,
		Passed:         rep.Passed,
		Failed:         rep.Failed,
		Skipped:        rep.Skipped,
		NotApplicable:  rep.NotApplicable,
		WallSeconds:    rep.Wall.Seconds(),
		VirtualSeconds: rep.Virtual.Seconds(),
		Scenarios:      []jsonScenario{},
	}
	for _, r := range rep.Results {
		js := jsonScenario{
			Number: r.Number, Name: r.Name, Description: r.Description, Guards: r.Guards,
			Era: r.Era, Status: r.Status, Seconds: r.Duration.Seconds(), VirtualSeconds: r.Virtual.Seconds(),
			Checks: r.Checks, Reason: r.Reason,
		}
		if r.Status == scenarios.StatusFail {
			js.Log = r.Log
		}
		out.Scenarios = append(out.Scenarios, js)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return writeFileDirs(file, append(b, '\n'))
}

// JUnit XML, as read by CI systems.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnitReport(file string, rep *scenarios.Report) error {
	secs := func(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
	out := junitSuites{Name: "mcplife", Time: secs(rep.Wall)}
	// One suite per era; its cases are named NNN-slug [era], and a
	// scenario not applicable in the era is a skipped case saying so.
	for _, era := range rep.Eras {
		c := countEra(rep, era)
		suite := junitSuite{
			Name:     "mcplife scenarios (" + era + ")",
			Failures: c.failed,
			Skipped:  c.skipped + c.na,
			Time:     secs(rep.Wall),
			Properties: []junitProperty{
				{"implementation", rep.Hello.Implementation.Name + " " + rep.Hello.Implementation.Version},
				{"protocol", rep.Hello.Protocol},
				{"era", era},
				{"notApplicable", strconv.Itoa(c.na)},
				{"virtualSeconds", fmt.Sprintf("%.3f", rep.Virtual.Seconds())},
			},
		}
		for _, r := range rep.Results {
			if r.Era != era {
				continue
			}
			tc := junitCase{ClassName: "scenarios." + era, Name: r.Name + " [" + era + "]", Time: secs(r.Duration)}
			switch r.Status {
			case scenarios.StatusFail:
				tc.Failure = &junitMessage{Message: r.Reason, Text: r.Log}
			case scenarios.StatusSkip, scenarios.StatusNA:
				tc.Skipped = &junitMessage{Message: r.Reason}
			}
			suite.Cases = append(suite.Cases, tc)
		}
		suite.Tests = len(suite.Cases)
		out.Tests += suite.Tests
		out.Failures += suite.Failures
		out.Skipped += suite.Skipped
		out.Suites = append(out.Suites, suite)
	}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return writeFileDirs(file, append([]byte(xml.Header), append(b, '\n')...))
}
