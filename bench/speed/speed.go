// Package speed measures MCP clients side by side through the driver
// protocol (docs/DRIVER.md): each client's driver is started, configured
// with the same stdio fixture servers and timed from outside, so the
// reference runtime and third-party clients are compared on equal terms.
//
// Per run and client it measures the time from start to an open session
// with one server and with many (default 50), the median latency of
// sequential tool calls on the one-server session, and the driver
// process's resident memory per additional server. The clients take
// turns within each run (interleaved, the first one rotating), so a
// machine that slows down during the measurement slows all of them alike.
package speed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
)

// Defaults of Config. Each applies when the field is zero.
const (
	DefaultRuns    = 5
	DefaultServers = 50
	DefaultCalls   = 100
	// DefaultWarmup is the number of calls made before the timed ones.
	DefaultWarmup = 5
	// DefaultTimeout bounds each client's part of a run.
	DefaultTimeout = 2 * time.Minute
	// DefaultEra is what the fixture servers speak: both eras, as go-sdk
	// servers do, so that each client connects in the era it prefers.
	DefaultEra = EraBoth
	// EraBoth: the fixture servers speak both MCP protocol eras.
	EraBoth = "both"
)

// Impl is one client under measurement: a name for the table and the
// command line of its driver.
type Impl struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
}

// Config says what to measure.
type Config struct {
	// Impls are the clients, in table order.
	Impls []Impl `json:"impls"`
	// Fixture is the command line of the fixture MCP server.
	Fixture []string `json:"fixture"`
	// Era is what the fixture servers speak: "legacy", "modern" or
	// "both" (DefaultEra).
	Era string `json:"era"`
	// Runs is how many times each client is measured (DefaultRuns).
	Runs int `json:"runs"`
	// Servers is the size of the many-server session (DefaultServers).
	Servers int `json:"servers"`
	// Calls is the number of timed sequential calls per run
	// (DefaultCalls), made after DefaultWarmup untimed ones.
	Calls int `json:"calls"`
	// Timeout bounds each client's part of a run (DefaultTimeout).
	Timeout time.Duration `json:"timeout_ns"`
	// Dir is a scratch directory; "" makes a temporary one.
	Dir string `json:"-"`
	// Progress receives one line per step; nil discards them.
	Progress io.Writer `json:"-"`
}

func (c *Config) defaults() {
	if c.Runs == 0 {
		c.Runs = DefaultRuns
	}
	if c.Servers == 0 {
		c.Servers = DefaultServers
	}
	if c.Calls == 0 {
		c.Calls = DefaultCalls
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Era == "" {
		c.Era = DefaultEra
	}
}

// Validate reports the first problem of c.
func (c Config) Validate() error {
	c.defaults()
	switch {
	case len(c.Impls) == 0:
		return errors.New("speed: no client to measure")
	case len(c.Fixture) == 0:
		return errors.New("speed: no fixture command")
	case c.Runs < 1, c.Servers < 2, c.Calls < 1, c.Timeout < 0:
		return fmt.Errorf("speed: runs %d, servers %d, calls %d: want runs >= 1, servers >= 2, calls >= 1", c.Runs, c.Servers, c.Calls)
	case c.Era != string(driver.EraLegacy) && c.Era != string(driver.EraModern) && c.Era != EraBoth:
		return fmt.Errorf("speed: era %q: want %s, %s or %s", c.Era, driver.EraLegacy, driver.EraModern, EraBoth)
	}
	seen := map[string]bool{}
	for _, im := range c.Impls {
		if im.Name == "" || len(im.Command) == 0 {
			return fmt.Errorf("speed: client %q: a name and a command are required", im.Name)
		}
		if seen[im.Name] {
			return fmt.Errorf("speed: client %q named twice", im.Name)
		}
		seen[im.Name] = true
	}
	return nil
}

// sample is one run of one client.
type sample struct {
	connect1 time.Duration // start to an open one-server session
	connectN time.Duration // start to an open session of Servers servers
	call     time.Duration // median of the timed calls
	rss1     int64         // the driver's resident bytes with one server
	rssN     int64         // ... with Servers servers
	era      driver.Era    // the era of the timed calls, from the fixture's journal
}

// Run measures every client Runs times, interleaved. A client that fails
// a run is reported with its error; the others go on.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	cfg.defaults()
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "mcplife-speed-")
		if err != nil {
			return Report{}, fmt.Errorf("speed: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	samples := make([][]sample, len(cfg.Impls))
	errs := make([][]string, len(cfg.Impls))
	impls := make([]string, len(cfg.Impls))
	for run := range cfg.Runs {
		for k := range cfg.Impls {
			i := (run + k) % len(cfg.Impls) // a different client goes first each run
			im := cfg.Impls[i]
			if err := ctx.Err(); err != nil {
				return Report{}, fmt.Errorf("speed: %w", err)
			}
			runDir := filepath.Join(dir, fmt.Sprintf("%s-%d", safeName(im.Name), run+1))
			s, impl, err := measure(ctx, cfg, im, runDir)
			if impl != "" {
				impls[i] = impl
			}
			if err != nil {
				errs[i] = append(errs[i], fmt.Sprintf("run %d: %v", run+1, err))
				fmt.Fprintf(progress, "speed: run %d/%d %s: %v\n", run+1, cfg.Runs, im.Name, err)
				continue
			}
			samples[i] = append(samples[i], s)
			fmt.Fprintf(progress, "speed: run %d/%d %s: connect 1 %s, %d %s, call %s, %s per server\n",
				run+1, cfg.Runs, im.Name, ms(s.connect1), cfg.Servers, ms(s.connectN), us(s.call), kib(perServer(s, cfg.Servers)))
		}
	}
	rep := Report{Config: cfg, Date: time.Now().UTC().Format(time.DateOnly)}
	for i, im := range cfg.Impls {
		rep.Results = append(rep.Results, summarize(im.Name, impls[i], samples[i], errs[i], cfg.Servers))
	}
	return rep, nil
}

// measure makes one run of one client: a one-server start with its calls,
// then a many-server start, each in a driver process of its own.
func measure(ctx context.Context, cfg Config, im Impl, dir string) (s sample, impl string, err error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	one, err := session(ctx, cfg, im, filepath.Join(dir, "one"), 1, func(c *driver.Client, tools []driver.Tool) error {
		name := ""
		for _, t := range tools {
			if t.Tool == "echo" {
				name = t.Name
			}
		}
		if name == "" {
			return errors.New("the fixture's echo tool is not listed")
		}
		lat := make([]time.Duration, 0, cfg.Calls)
		for n := range DefaultWarmup + cfg.Calls {
			id := "speed-" + strconv.Itoa(n+1)
			t0 := time.Now()
			if err := c.CallTool(ctx, driver.ToolCallParams{Session: "speed", CallID: id, Tool: name, Arguments: json.RawMessage(`{"text":"ping"}`)}); err != nil {
				return fmt.Errorf("tool.call: %w", err)
			}
			res, err := c.AwaitCall(ctx, id)
			if err != nil {
				return fmt.Errorf("awaiting call %s: %w", id, err)
			}
			if res.Error != nil {
				return fmt.Errorf("call %s failed: %s: %s", id, res.Error.Code, res.Error.Message)
			}
			if n >= DefaultWarmup {
				lat = append(lat, time.Since(t0))
			}
		}
		s.call = median(lat)
		era, err := callEra(filepath.Join(dir, "one", "journal.jsonl"))
		s.era = era
		return err
	})
	if err != nil {
		return s, one.impl, fmt.Errorf("one server: %w", err)
	}
	many, err := session(ctx, cfg, im, filepath.Join(dir, "many"), cfg.Servers, nil)
	if err != nil {
		return s, one.impl, fmt.Errorf("%d servers: %w", cfg.Servers, err)
	}
	s.connect1, s.rss1 = one.connect, one.rss
	s.connectN, s.rssN = many.connect, many.rss
	return s, one.impl, nil
}

// opened is what session measured.
type opened struct {
	impl    string        // the implementation the driver named in hello
	connect time.Duration // start to an open session
	rss     int64         // the driver's resident bytes once open
}

// session starts the driver, configures n fixture servers, opens session
// "speed", checks every server is ready and exposes tools, measures, runs
// then (if any) and shuts the driver down.
func session(ctx context.Context, cfg Config, im Impl, dir string, n int, then func(*driver.Client, []driver.Tool) error) (o opened, err error) {
	home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return o, fmt.Errorf("scratch directory: %w", err)
		}
	}
	var stderr tailBuffer
	c, err := driver.StartCommand(ctx, im.Command, nil, &stderr)
	if err != nil {
		return o, err
	}
	defer func() {
		if cerr := shutdown(ctx, c); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil && stderr.Len() > 0 {
			err = fmt.Errorf("%w (driver stderr: %s)", err, stderr.String())
		}
	}()
	hello, err := c.Hello(ctx)
	if err != nil {
		return o, fmt.Errorf("hello: %w", err)
	}
	o.impl = hello.Implementation.Name + " " + hello.Implementation.Version
	if cfg.Era != EraBoth && len(hello.Eras) > 0 && !slices.Contains(hello.Eras, driver.Era(cfg.Era)) {
		return o, fmt.Errorf("the driver speaks %v, not the %s era of the fixture servers", hello.Eras, cfg.Era)
	}
	p := driver.StartParams{Clock: driver.ClockReal, Home: home, Workspace: work, Inline: map[string]json.RawMessage{}}
	for i := range n {
		env := map[string]string{"MCP_FIXTURE_ERA": cfg.Era}
		if n == 1 {
			env["MCP_FIXTURE_JOURNAL"] = filepath.Join(dir, "journal.jsonl")
		}
		srv := map[string]any{"command": cfg.Fixture[0], "args": cfg.Fixture[1:], "env": env}
		b, err := json.Marshal(srv)
		if err != nil {
			return o, err
		}
		p.Inline[serverName(i)] = b
	}
	t0 := time.Now()
	if err := c.Start(ctx, p); err != nil {
		return o, fmt.Errorf("start: %w", err)
	}
	rep, err := c.OpenSession(ctx, "speed")
	if err != nil {
		return o, fmt.Errorf("session.open: %w", err)
	}
	o.connect = time.Since(t0)
	if len(rep.Ready) != n {
		why := ""
		for _, name := range rep.Failed {
			if e := rep.Errors[name]; e != "" {
				why = fmt.Sprintf("; %s: %s", name, e)
				break
			}
		}
		return o, fmt.Errorf("session.open: %d of %d servers ready (failed %v, deferred %v, late %v)%s", len(rep.Ready), n, rep.Failed, rep.Deferred, rep.Late, why)
	}
	if pid := c.Pid(); pid > 0 {
		if o.rss, err = residentBytes(pid); err != nil {
			return o, err
		}
	}
	tools, err := c.Tools(ctx, "speed")
	if err != nil {
		return o, fmt.Errorf("tools.list: %w", err)
	}
	servers := map[string]bool{}
	for _, t := range tools {
		servers[t.Server] = true
	}
	if len(servers) != n {
		return o, fmt.Errorf("tools.list: tools of %d of %d servers", len(servers), n)
	}
	if then != nil {
		err = then(c, tools)
	}
	return o, err
}

// shutdown asks the driver to shut down and waits for its process.
func shutdown(ctx context.Context, c *driver.Client) error {
	serr := c.Shutdown(ctx)
	cerr := c.Close(ctx)
	if serr != nil {
		return fmt.Errorf("shutdown: %w", serr)
	}
	if cerr != nil {
		return fmt.Errorf("driver exit: %w", cerr)
	}
	return nil
}

// callEra reads the era of the tool calls from the fixture's journal at
// path: modern when they carried the 2026-07-28 revision in their _meta,
// legacy otherwise.
func callEra(path string) (driver.Era, error) {
	entries, err := journal.NewFollower(path).Read()
	if err != nil {
		return "", fmt.Errorf("the fixture's journal: %w", err)
	}
	calls := 0
	for _, e := range entries {
		if e.Kind != "received" || e.Str("method") != "tools/call" {
			continue
		}
		calls++
		if e.Str("protocolVersion") == modernVersion {
			return driver.EraModern, nil
		}
	}
	if calls == 0 {
		return "", errors.New("the fixture's journal shows no tools/call")
	}
	return driver.EraLegacy, nil
}

// modernVersion is the protocol revision of the modern era.
const modernVersion = "2026-07-28"

// serverName names the i-th fixture server.
func serverName(i int) string { return fmt.Sprintf("fx%02d", i+1) }

// safeName turns a client name into a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// residentBytes reads the resident set size of process pid.
func residentBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("resident memory of the driver: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb << 10, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("resident memory of the driver: no VmRSS in /proc/%d/status", pid)
}

// perServer is the driver's resident memory per server beyond the first.
func perServer(s sample, servers int) int64 {
	return (s.rssN - s.rss1) / int64(servers-1)
}

// median returns the median of ds (the lower middle of an even count).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
