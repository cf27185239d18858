package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/host"
)

// Defaults of Config. Each applies when the field is zero.
const (
	DefaultRuns           = 5
	DefaultStartupServers = 500
	DefaultCallServers    = 50
	DefaultCalls          = 1000
	DefaultStormServers   = 100
	DefaultCacheServers   = 50
	DefaultCacheSlow      = 10
	DefaultSlowInit       = time.Second
	// DefaultStopTimeout bounds each runtime's Close.
	DefaultStopTimeout = 60 * time.Second
	// DefaultWaitTimeout bounds each wait for servers to come back.
	DefaultWaitTimeout = 120 * time.Second
)

// Workload names, in the order they run.
const (
	Startup = "startup"
	Calls   = "calls"
	Storm   = "storm"
	Cache   = "cache"
)

// Names lists the workloads in the order they run.
func Names() []string { return []string{Startup, Calls, Storm, Cache} }

// Config says what to run.
type Config struct {
	// Fixture is the command line that starts the fixture MCP server, e.g.
	// the harness binary and "fixture".
	Fixture []string `json:"fixture"`
	// Runs is how many times each workload repeats (default 5).
	Runs int `json:"runs"`
	// StartupServers is the session size of the startup workload (500); it
	// also starts a fifth of that to show memory grows linearly.
	StartupServers int `json:"startup_servers"`
	// CallServers and Calls: Calls concurrent calls spread over CallServers
	// servers (50, 1000).
	CallServers int `json:"call_servers"`
	Calls       int `json:"calls"`
	// StormServers are killed at once in the restart storm (100).
	StormServers int `json:"storm_servers"`
	// CacheServers start cold then warm; CacheSlow of them take SlowInit to
	// answer initialize (50, 10, 1 s).
	CacheServers int           `json:"cache_servers"`
	CacheSlow    int           `json:"cache_slow"`
	SlowInit     time.Duration `json:"slow_init_ns"`
	// ConnectConcurrency is the runtime's connect cap (0: the runtime's
	// default).
	ConnectConcurrency int `json:"connect_concurrency"`
	// Workloads selects workloads by name; empty runs all.
	Workloads []string `json:"workloads,omitempty"`
	// Dir is a scratch directory; "" makes a temporary one.
	Dir string `json:"-"`
	// Progress receives one line per step; nil discards them.
	Progress io.Writer `json:"-"`
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Runs, DefaultRuns)
	def(&c.StartupServers, DefaultStartupServers)
	def(&c.CallServers, DefaultCallServers)
	def(&c.Calls, DefaultCalls)
	def(&c.StormServers, DefaultStormServers)
	def(&c.CacheServers, DefaultCacheServers)
	if c.CacheSlow <= 0 {
		c.CacheSlow = min(DefaultCacheSlow, c.CacheServers)
	}
	if c.SlowInit <= 0 {
		c.SlowInit = DefaultSlowInit
	}
	if c.ConnectConcurrency <= 0 {
		c.ConnectConcurrency = host.DefaultConnectConcurrency
	}
	if len(c.Workloads) == 0 {
		c.Workloads = Names()
	}
	return c
}

// Validate reports a bad Config naming the field.
func (c Config) Validate() error {
	if len(c.Fixture) == 0 {
		return errors.New("bench: Config.Fixture is empty: give the command that starts the fixture server")
	}
	for _, w := range c.Workloads {
		if !slices.Contains(Names(), w) {
			return fmt.Errorf("bench: unknown workload %q (want one of %s)", w, strings.Join(Names(), ", "))
		}
	}
	if c.CacheSlow > c.CacheServers && c.CacheServers > 0 {
		return fmt.Errorf("bench: CacheSlow %d exceeds CacheServers %d", c.CacheSlow, c.CacheServers)
	}
	return nil
}

// bencher runs the workloads of one Config.
type bencher struct {
	cfg Config
	dir string
	n   int // runtimes made, for unique scratch names
}

// Run runs the selected workloads and returns their report. It raises the
// open-files soft limit to the hard limit first: every stdio server holds
// four descriptors in this process.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "mcplife-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: scratch directory: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	b := &bencher{cfg: cfg, dir: dir}
	rep := &Report{Machine: machine(), Config: cfg, OK: true}
	need := uint64(4*max(cfg.StartupServers, cfg.StormServers, cfg.CacheServers, cfg.CallServers) + 256)
	if rep.Machine.FDLimit < need {
		return nil, fmt.Errorf("bench: open files limit %d is below the %d needed; raise ulimit -n", rep.Machine.FDLimit, need)
	}
	for _, name := range Names() {
		if !slices.Contains(cfg.Workloads, name) {
			continue
		}
		var wl Workload
		var err error
		switch name {
		case Startup:
			wl, err = b.startup(ctx)
		case Calls:
			wl, err = b.calls(ctx)
		case Storm:
			wl, err = b.storm(ctx)
		case Cache:
			wl, err = b.cache(ctx)
		}
		if err != nil {
			return rep, fmt.Errorf("bench: %s: %w", name, err)
		}
		if len(wl.Notes) > 0 {
			rep.OK = false
		}
		for _, m := range wl.Metrics {
			if m.Met != nil && !*m.Met && strings.HasPrefix(m.Goal, "=") {
				rep.OK = false // a hard requirement (= 0 failures, <= cap)
			}
		}
		rep.Workloads = append(rep.Workloads, wl)
	}
	return rep, nil
}

func (b *bencher) progress(format string, args ...any) {
	if b.cfg.Progress != nil {
		fmt.Fprintf(b.cfg.Progress, format+"\n", args...)
	}
}

// servers returns n fixture server configs named sNNN; the first slow of
// them wait slowInit before answering initialize.
func (b *bencher) servers(n, slow int, slowInit time.Duration) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, n)
	for i := range n {
		srv := map[string]any{"command": b.cfg.Fixture[0], "args": b.cfg.Fixture[1:]}
		if i < slow {
			srv["env"] = map[string]string{"MCP_FIXTURE_INIT_DELAY_MS": strconv.FormatInt(slowInit.Milliseconds(), 10)}
		}
		raw, _ := json.Marshal(srv)
		out[fmt.Sprintf("s%03d", i)] = raw
	}
	return out
}

// runtime makes a runtime over servers; cacheDir "" disables the cache.
func (b *bencher) runtime(servers map[string]json.RawMessage, cacheDir string) (*host.Runtime, error) {
	b.n++
	home := filepath.Join(b.dir, fmt.Sprintf("home%d", b.n))
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	return host.New(host.Options{
		Logger:             slog.New(slog.DiscardHandler),
		CacheDir:           cacheDir,
		ConnectConcurrency: b.cfg.ConnectConcurrency,
		Discovery:          config.Options{HomeDir: home, Inline: servers},
	})
}

// stop closes rt and returns how long it took and how many of pids are
// still alive afterwards.
func (b *bencher) stop(rt *host.Runtime, pids []int) (time.Duration, int) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultStopTimeout)
	defer cancel()
	start := time.Now()
	rt.Close(ctx)
	took := time.Since(start)
	return took, b.alive(pids)
}

// alive counts the processes of pids that still exist and still run the
// fixture command: on a busy machine a pid is soon reused by an unrelated
// process, which must not count as a leftover.
func (b *bencher) alive(pids []int) int {
	n := 0
	for _, pid := range pids {
		if pid <= 0 || syscall.Kill(pid, 0) != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil {
			argv0, _, _ := strings.Cut(string(cmdline), "\x00")
			if argv0 != b.cfg.Fixture[0] {
				continue // reused by another program
			}
		}
		n++
	}
	return n
}

// pids returns the process ids of rt's connected stdio servers.
func pids(rt *host.Runtime) []int {
	var out []int
	for _, st := range rt.Status() {
		if st.PID > 0 {
			out = append(out, st.PID)
		}
	}
	return out
}

// heap returns the live heap after a collection.
func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// cpu returns the CPU time (user+system) of this process and of its
// reaped children so far.
func cpu() (self, children time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return self, children
}

func machine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version()}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		if lim.Cur < lim.Max {
			raised := lim
			raised.Cur = lim.Max
			if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
				lim = raised
			}
		}
		m.FDLimit, m.FDHard = lim.Cur, lim.Max
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return m
}

// quantile returns the q-quantile of sorted xs (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func goalBelow(limit float64) func(float64) bool { return func(v float64) bool { return v < limit } }

func goalAtMost(limit float64) func(float64) bool { return func(v float64) bool { return v <= limit } }
