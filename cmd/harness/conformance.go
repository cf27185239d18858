package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/conformance"
	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/fixturebuild"
	"github.com/mcplife/mcplife/internal/shard"
)

const conformanceUsage = `usage: harness conformance [flags]

Runs the conformance suite against an implementation behind a driver
(protocol ` + driver.ProtocolVersion + `); see docs/CONFORMANCE.md.

`

// runConformance implements `harness conformance`: it runs the conformance
// suite (docs/CONFORMANCE.md) against the reference runtime, in-process, or
// against the driver -impl starts, and prints a summary grouped by profile.
// The fixture servers the suite configures run this binary as the fixture.
// Exit status: 0 when every applicable requirement passed (or failed as the
// baseline expects), 1 otherwise, 2 for bad usage.
func runConformance(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("conformance", conformanceUsage, stdout, stderr)
	impl := fs.String("impl", "", "command line of the driver under test, e.g. 'node my-driver.js' (default: the reference runtime, in-process)")
	profiles := fs.String("profile", "", "comma-separated profiles to run (default: every profile)")
	reqs := fs.String("req", "", "comma-separated requirement ids to run (default: all)")
	labels := fs.String("label-filter", "", "extra ginkgo label filter, e.g. 'restart || probe'")
	clockMode := fs.String("clock", conformance.ClockAuto, "clock mode: auto (virtual when the driver has it), virtual or real")
	timeScale := fs.Float64("time-scale", conformance.DefaultTimeScale, "real-time mode: factor applied to the durations the suite configures")
	baseline := fs.String("baseline", "", "file of expected failures: a requirement id and the reason per line")
	glue := fs.String("glue", "", "file of the requirements whose verdict the driver's own code decides, not the library it wraps: a requirement id and the reason per line, as in a baseline; reports and the matrix credit them to the driver")
	junit := fs.String("junit", "", "write a JUnit XML report to this file")
	jsonReport := fs.String("json", "", "write a JSON report (ginkgo's format) to this file")
	awaitTimeout := fs.Duration("await-timeout", conformance.DefaultAwaitTimeout, "real-time bound of each wait for an event, response or journal entry")
	shutdownTimeout := fs.Duration("shutdown-timeout", conformance.DefaultShutdownTimeout, "real-time bound of a driver's shutdown at the end of each spec; then it is killed (after a failed spec a driver of another process gets at most 500ms)")
	ahead := fs.Int("drivers-ahead", 2, "with -impl: how many driver processes to keep started ahead of the specs that will use them, so that each loads its runtime and libraries while earlier specs run (0: start each driver when its spec begins)")
	verdicts := fs.String("verdicts", "", "write the compact verdict report (conformance/drivers/*/report.json) to this file")
	expectVerdicts := fs.String("expect-verdicts", "", "fail unless the run's verdicts equal this stored verdict report")
	verbose := fs.Bool("v", false, "report every spec as it runs")
	noColor := fs.Bool("no-color", false, "no colors in ginkgo's output")
	list := fs.Bool("list", false, "list the requirements and exit")
	fixtureBin := fs.String("fixture", "", "run this mcp-fixture `binary` (go build ./fixtures/mcp-fixture) as the fixture server (default: the fixture built from the checkout here when it is the one this harness links, same module, versions and knobs; otherwise this harness binary); .ci/stress passes a build without -race, so the race detector watches the runtime, not the test double")
	var sf stressFlags
	sf.register(fs.FlagSet)
	eraFlag := fs.String("era", "both", "the MCP protocol eras to run: legacy, modern or both (requirements of both eras run once per era the driver speaks)")
	shardFlag := fs.String("shard", "", "run only shard `I/N` of the selected requirements (sorted by id, index modulo N); merge the -json reports with harness merge-reports")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return fs.badUsage()
	}
	if *list {
		for _, r := range conformance.Requirements() {
			fmt.Fprintf(stdout, "%-22s %-6s %-17s %-14s %s\n", r.ID, r.Level, r.Profile, r.EraString(), r.Statement)
		}
		return 0
	}
	if sf.runs > 0 {
		var b *conformance.Baseline
		if *baseline != "" {
			var err error
			if b, err = conformance.ReadBaseline(*baseline); err != nil {
				fmt.Fprintf(stderr, "harness conformance: %v\n", err)
				return 2
			}
		}
		return runStress("conformance", args, sf, conformanceVerdicts(b), stdout, stderr)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "harness conformance: %v\n", err)
		return 1
	}
	fixture := conformance.Fixture{Command: exe, Args: []string{"fixture"}}
	if *fixtureBin == "" {
		if bin, remove, ok := matchingFixture(); ok {
			defer remove()
			fixture = conformance.Fixture{Command: bin}
		}
	}
	if *fixtureBin != "" {
		if fixture.Command, err = fixtureBinary(*fixtureBin); err != nil {
			fmt.Fprintf(stderr, "harness conformance: -fixture: %v\n", err)
			return 2
		}
		fixture.Args = nil
	}
	cfg := conformance.Config{
		Fixture:         fixture,
		Clock:           *clockMode,
		TimeScale:       *timeScale,
		AwaitTimeout:    *awaitTimeout,
		ShutdownTimeout: *shutdownTimeout,
		IDs:             confSplitList(*reqs),
		LabelFilter:     *labels,
		JUnitReport:     *junit,
		JSONReport:      *jsonReport,
		Out:             stdout,
		Verbose:         *verbose,
		NoColor:         *noColor,
	}
	for _, p := range confSplitList(*profiles) {
		cfg.Profiles = append(cfg.Profiles, driver.Profile(p))
	}
	switch *eraFlag {
	case "both":
	case string(driver.EraLegacy), string(driver.EraModern):
		cfg.Eras = []driver.Era{driver.Era(*eraFlag)}
	default:
		fmt.Fprintf(stderr, "harness conformance: -era must be legacy, modern or both, not %q\n", *eraFlag)
		return 2
	}
	sh, err := shard.Parse(*shardFlag)
	if err != nil {
		fmt.Fprintf(stderr, "harness conformance: -shard: %v\n", err)
		return 2
	}
	if sh.Enabled() {
		cfg.IDs = shardRequirements(sh, cfg.Profiles, cfg.IDs)
		if len(cfg.IDs) == 0 {
			fmt.Fprintf(stdout, "shard %s has no requirement (more shards than requirements)\n", sh)
			return 0
		}
		fmt.Fprintf(stdout, "shard %s: %d requirements\n", sh, len(cfg.IDs))
	}
	if *impl != "" {
		argv, err := conformance.SplitCommand(*impl)
		if err != nil {
			fmt.Fprintf(stderr, "harness conformance: -impl: %v\n", err)
			return 2
		}
		if *ahead < 0 {
			fmt.Fprintf(stderr, "harness conformance: -drivers-ahead must be 0 or more, not %d\n", *ahead)
			return 2
		}
		cfg.Target = conformance.Target{Command: argv, Ahead: *ahead}
	}
	if *baseline != "" {
		b, err := conformance.ReadBaseline(*baseline)
		if err != nil {
			fmt.Fprintf(stderr, "harness conformance: %v\n", err)
			return 2
		}
		cfg.Baseline = b
	}
	if *glue != "" {
		g, err := conformance.ReadBaseline(*glue)
		if err != nil {
			fmt.Fprintf(stderr, "harness conformance: -glue: %v\n", err)
			return 2
		}
		cfg.Glue = g
	}
	start := time.Now()
	res, err := conformance.Run(nil, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "harness conformance: %v\n", err)
		if res == nil {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stdout, "conformance run took %v\n", time.Since(start).Round(time.Millisecond))
	code := 0
	if !res.OK {
		code = 1
	}
	if *verdicts != "" {
		if err := res.WriteVerdicts(*verdicts); err != nil {
			fmt.Fprintf(stderr, "harness conformance: %v\n", err)
			code = 1
		}
	}
	if *expectVerdicts != "" {
		want, err := conformance.ReadVerdicts(*expectVerdicts)
		if err != nil {
			fmt.Fprintf(stderr, "harness conformance: %v\n", err)
			return 1
		}
		if diffs := conformance.SameVerdicts(want, res.Verdicts()); len(diffs) > 0 {
			fmt.Fprintf(stdout, "verdicts differ from %s (regenerate it with -verdicts and rerun harness matrix):\n  %s\n",
				*expectVerdicts, strings.Join(diffs, "\n  "))
			code = 1
		} else {
			fmt.Fprintf(stdout, "verdicts match %s\n", *expectVerdicts)
		}
	}
	return code
}

// shardRequirements returns the ids of shard sh's requirements among those
// selected by profiles and ids (all when empty), sorted by id.
func shardRequirements(sh shard.Spec, profiles []driver.Profile, ids []string) []string {
	var all []string
	for _, r := range conformance.Requirements() {
		if len(profiles) > 0 && !slices.ContainsFunc(profiles, r.In) {
			continue
		}
		if len(ids) > 0 && !slices.Contains(ids, r.ID) {
			continue
		}
		all = append(all, r.ID)
	}
	slices.Sort(all)
	return shard.Take(sh, all)
}

func confSplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// matchingFixture builds the fixture program from the checkout the
// harness runs in and returns it when it is the fixture this harness links
// (fixturebuild.Matching), with a function that removes it; otherwise ok is
// false and the harness plays the fixture itself, as it always can. The
// build is bounded: a go command that does not finish in time is not
// waited for.
func matchingFixture() (bin string, remove func(), ok bool) {
	dir, err := os.MkdirTemp("", "mcplife-fixture-")
	if err != nil {
		return "", nil, false
	}
	remove = func() { os.RemoveAll(dir) }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if bin, err = fixturebuild.Matching(ctx, dir); err != nil {
		remove()
		return "", nil, false
	}
	return bin, remove, true
}

// fixtureBinary checks the -fixture flag: an executable file, returned as
// an absolute path (the fixture runs in other working directories).
func fixtureBinary(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", abs)
	}
	return abs, nil
}
