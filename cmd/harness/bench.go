package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/mcplife/mcplife/bench"
	"github.com/mcplife/mcplife/bench/speed"
	"github.com/mcplife/mcplife/conformance"
)

const benchUsage = `usage: harness bench [-runs N] [-workload LIST] [-json FILE] [flags]
       harness bench -impl NAME=COMMAND [-impl NAME=COMMAND...] [-runs N] [-json FILE]
       harness bench -compare OLD.json NEW.json

Runs the scale workloads against the reference runtime with real stdio
fixture servers (this binary, as "harness fixture"): startup (500 servers
to ready, memory per server, stop with no process left), calls (1,000
concurrent calls over 50 servers), storm (100 servers SIGKILLed at once,
peak concurrent connects vs the cap) and cache (startup gate, cold vs warm
tool cache). Each workload repeats -runs times; the table shows the median
and the spread (min, max). Progress goes to stderr. -compare prints the
change of every metric between two -json reports. Exit status: 0, 1 when a
hard goal (0 failures, 0 processes left, peak within the cap) was missed,
2 for bad usage.

With -impl it measures MCP clients side by side instead, each through its
driver (docs/DRIVER.md; the reference runtime is "harness driver"): the
time from start to an open session of 1 and of -impl-servers servers, the
median latency of -impl-calls sequential stdio tool calls, and the driver
process's resident memory per server, -runs times with the clients
interleaved, all against the same fixture server. Exit status 1 when a
client completed no run.

flags:
`

// runBench implements `harness bench`.
func runBench(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", benchUsage, stdout, stderr)
	var cfg bench.Config
	fs.IntVar(&cfg.Runs, "runs", bench.DefaultRuns, "repetitions of every workload")
	fs.IntVar(&cfg.StartupServers, "servers", bench.DefaultStartupServers, "servers of the startup workload")
	fs.IntVar(&cfg.CallServers, "call-servers", bench.DefaultCallServers, "servers the calls workload spreads its calls over")
	fs.IntVar(&cfg.Calls, "calls", bench.DefaultCalls, "concurrent calls per burst of the calls workload")
	fs.IntVar(&cfg.StormServers, "storm-servers", bench.DefaultStormServers, "servers killed at once by the storm workload")
	fs.IntVar(&cfg.CacheServers, "cache-servers", bench.DefaultCacheServers, "servers of the cache workload")
	fs.IntVar(&cfg.CacheSlow, "cache-slow", bench.DefaultCacheSlow, "servers of the cache workload that are slow to initialize")
	fs.DurationVar(&cfg.SlowInit, "slow-init", bench.DefaultSlowInit, "how long the slow servers of the cache workload take to answer initialize")
	fs.IntVar(&cfg.ConnectConcurrency, "concurrency", 0, "the runtime's connect concurrency cap (default: the runtime's default, 8)")
	workloads := fs.String("workload", "", "comma-separated workloads to run: startup, calls, storm, cache (default: all)")
	jsonFile := fs.String("json", "", "write the report as JSON to `FILE`")
	compare := fs.Bool("compare", false, "compare two JSON reports given as arguments: OLD NEW")
	quiet := fs.Bool("q", false, "no progress lines")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run (this process, not the fixtures) to `FILE`")
	fixtureCmd := fs.String("fixture", "", "command line that starts the fixture MCP server (default: this binary, \"harness fixture\")")
	var impls multiFlag
	fs.Var(&impls, "impl", "a client to measure through its driver, as `NAME=COMMAND` (repeatable; selects the side-by-side measurement)")
	implServers := fs.Int("impl-servers", speed.DefaultServers, "with -impl: servers of the many-server session")
	implCalls := fs.Int("impl-calls", speed.DefaultCalls, "with -impl: timed sequential tool calls per run")
	implEra := fs.String("impl-era", string(speed.DefaultEra), "with -impl: the protocol eras the fixture servers speak (legacy, modern or both)")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if len(impls) > 0 {
		if fs.NArg() > 0 {
			return fs.unexpected("")
		}
		cfg := speed.Config{Runs: cfg.Runs, Servers: *implServers, Calls: *implCalls, Era: *implEra}
		return runSpeed(cfg, impls, *fixtureCmd, *jsonFile, *quiet, stdout, stderr)
	}
	if *compare {
		if fs.NArg() != 2 {
			fmt.Fprintln(stderr, "harness bench: -compare wants two reports: OLD.json NEW.json")
			return 2
		}
		old, err := bench.ReadJSON(fs.Arg(0))
		if err != nil {
			fmt.Fprintf(stderr, "harness bench: %v\n", err)
			return 2
		}
		cur, err := bench.ReadJSON(fs.Arg(1))
		if err != nil {
			fmt.Fprintf(stderr, "harness bench: %v\n", err)
			return 2
		}
		bench.WriteCompare(stdout, old, cur)
		return 0
	}
	if fs.NArg() > 0 {
		return fs.unexpected("")
	}
	cfg.Workloads = confSplitList(*workloads)
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "harness bench: %v\n", err)
		return 1
	}
	cfg.Fixture = []string{exe, "fixture"}
	if *fixtureCmd != "" {
		argv, err := conformance.SplitCommand(*fixtureCmd)
		if err != nil || len(argv) == 0 {
			fmt.Fprintf(stderr, "harness bench: -fixture: bad command line %q: %v\n", *fixtureCmd, err)
			return 2
		}
		cfg.Fixture = argv
	}
	if !*quiet {
		cfg.Progress = stderr
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "harness %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "harness bench: -cpuprofile: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "harness bench: -cpuprofile: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "harness %v\n", err)
		return 1
	}
	bench.WriteTable(stdout, rep)
	if *jsonFile != "" {
		if err := bench.WriteJSON(*jsonFile, rep); err != nil {
			fmt.Fprintf(stderr, "harness bench: -json: %v\n", err)
			return 1
		}
	}
	if !rep.OK {
		return 1
	}
	return 0
}
