package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/internal/mcpproxy"
	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/host"
	"github.com/mcplife/mcplife/scenarios/repro"
)

const recordUsage = `usage: harness record -config FILE -o TRACE [-call SERVER:TOOL[:JSON]]... [-fault SERVER:RULE]... [-until 'KIND [ATTR=VALUE...]'] [flags]

Runs the servers of FILE (any config file format the runtime reads) through
the reference runtime and records the session: the runtime's lifecycle
events, the tool calls and their outcomes and, for every server, the wire as
seen by a proxy (harness proxy) put in front of it: a process for a stdio
server, in this process for an http or sse server. The trace (JSON, format
mcplife-trace/1, see docs/TESTING.md) goes to -o, its directory created if
needed; harness repro turns it into a scenario.

Each proxy's control endpoint (URL and token) is printed on stderr, so that
faults can be injected by hand meanwhile (harness proxy -h lists the rules);
the trace keeps every rule change with its time, by hand or by -fault, from
the proxies' journals, and the protocol era each server was recorded in
(the version the runtime negotiated: the stateless 2026-07-28 revision, or
the handshake era), which harness repro replays. -fault installs a proxy
rule on a server's first launch through its control endpoint once the
session is open, so a restarted server comes up without it.

The session calls the tools given with -call, in order, then records until
-until's event has happened (if given), then for -linger. Without -call and
-until it records until interrupted (Ctrl-C); Ctrl-C always ends it and the
trace is written. Exit status: 0 when the trace was written, 1 when
recording failed, 2 for bad usage.

flags:
`

// runRecord implements `harness record`.
func runRecord(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("record", recordUsage, stdout, stderr)
	cfgFile := fs.String("config", "", "the config `FILE` whose servers are recorded (required)")
	out := fs.String("o", "", "write the trace to `TRACE` (required)")
	var calls, faults multiFlag
	fs.Var(&calls, "call", "call a tool: `SERVER:TOOL[:JSON-ARGS]` (repeatable, in order)")
	fs.Var(&faults, "fault", "install a proxy rule on a server's first launch: `SERVER:RULE` (repeatable)")
	linger := fs.Duration("linger", 0, "keep recording this long after the last call (restarts, idle exits)")
	untilFlag := fs.String("until", "", "after the calls, record until an event like `'KIND [server=NAME] [ATTR=VALUE...]'` has happened, e.g. 'restart.succeeded server=fx'")
	relaunch := fs.Duration("relaunch", 2*time.Second, "serve an http or sse server's proxy again this long after a rule made it exit, as a supervisor restarting the server would")
	gate := fs.Duration("startup-gate", 30*time.Second, "how long session start waits for the servers to connect")
	probe := fs.Duration("probe-timeout", host.DefaultProbeTimeout, "timeout of each health probe step")
	jsonOut := fs.Bool("json", false, "print the summary as JSON")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if *cfgFile == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "harness record: -config FILE and -o TRACE are required, and nothing else (harness record -h)\n")
		return 2
	}
	var until *event.Matcher
	if *untilFlag != "" {
		m, err := parseUntil(*untilFlag)
		if err != nil {
			fmt.Fprintf(stderr, "harness record: -until: %v\n", err)
			return 2
		}
		until = &m
	}
	type callSpec struct {
		server, tool string
		args         json.RawMessage
	}
	var specs []callSpec
	for _, c := range calls {
		parts := strings.SplitN(c, ":", 3)
		if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
			fmt.Fprintf(stderr, "harness record: -call %q: want SERVER:TOOL[:JSON-ARGS]\n", c)
			return 2
		}
		cs := callSpec{server: parts[0], tool: parts[1], args: json.RawMessage("{}")}
		if len(parts) == 3 {
			if !json.Valid([]byte(parts[2])) {
				fmt.Fprintf(stderr, "harness record: -call %q: the arguments are not valid JSON\n", c)
				return 2
			}
			cs.args = json.RawMessage(parts[2])
		}
		specs = append(specs, cs)
	}
	type faultSpec struct{ server, rule string }
	var fspecs []faultSpec
	for _, f := range faults {
		server, rule, ok := strings.Cut(f, ":")
		if !ok || server == "" {
			fmt.Fprintf(stderr, "harness record: -fault %q: want SERVER:RULE\n", f)
			return 2
		}
		if _, err := mcpproxy.ParseRule(rule); err != nil {
			fmt.Fprintf(stderr, "harness record: -fault %s: %v\n", server, err)
			return 2
		}
		fspecs = append(fspecs, faultSpec{server, rule})
	}

	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "harness record: %v\n", err)
		return 1
	}
	work, err := os.MkdirTemp("", "harness-record-")
	if err != nil {
		fmt.Fprintf(stderr, "harness record: %v\n", err)
		return 1
	}
	defer os.RemoveAll(work)
	home := filepath.Join(work, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		fmt.Fprintf(stderr, "harness record: %v\n", err)
		return 1
	}

	// Read the config as the runtime would, then put a proxy in front of
	// every server.
	res, err := config.Discover(config.Options{HomeDir: home, Files: []config.File{{Path: *cfgFile, Level: config.LevelUser}}})
	if err != nil {
		fmt.Fprintf(stderr, "harness record: %s: %v\n", *cfgFile, err)
		return 1
	}
	for _, d := range res.Diagnostics {
		fmt.Fprintf(stderr, "harness record: %s:%d: %s: %s: %s\n", d.File, d.Line, d.Server, d.Field, d.Message)
	}
	if len(res.Servers) == 0 {
		fmt.Fprintf(stderr, "harness record: %s: no usable server\n", *cfgFile)
		return 1
	}
	// The trace keeps the session's secrets out (record_redact.go).
	secrets := traceSecrets(res.Servers, os.LookupEnv)
	tr := &repro.Trace{Format: repro.Format, Recorded: time.Now().UTC().Format(time.RFC3339), Config: *cfgFile, Servers: map[string]repro.Server{}}
	inline := map[string]json.RawMessage{}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var logMu sync.Mutex
	pctx, stopProxies := context.WithCancel(context.Background())
	var fronts []chan struct{}
	defer func() {
		stopProxies()
		for _, done := range fronts {
			<-done
		}
	}()
	for _, srv := range res.Servers {
		var raw map[string]any
		if err := json.Unmarshal(srv.Raw, &raw); err != nil {
			fmt.Fprintf(stderr, "harness record: %s: server %s: %v\n", *cfgFile, srv.Name, err)
			return 1
		}
		ts := repro.Server{Transport: string(srv.EffectiveType()), ToolTimeoutMS: srv.ToolTimeout.Milliseconds()}
		if srv.URL != "" {
			ts.URL = writtenURL(srv, secrets)
		}
		if srv.EffectiveType() == config.Stdio {
			ts.Command = writtenCommand(srv, secrets)
			ts.Proxied = true
			pargs := []string{"proxy", "-journal", filepath.Join(work, srv.Name+".journal"),
				"-control", "127.0.0.1:0", "-control-file", filepath.Join(work, srv.Name+".control"), "--", srv.Command}
			raw["command"] = exe
			raw["args"] = append(pargs, srv.Args...)
		} else {
			h := &httpFront{name: srv.Name, upstream: srv.URL, journal: filepath.Join(work, srv.Name+".journal"),
				controlFile: filepath.Join(work, srv.Name+".control"), relaunch: *relaunch, log: stderr, logMu: &logMu}
			done, err := h.start(pctx)
			if err != nil {
				fmt.Fprintf(stderr, "harness record: %s: %s\n", *cfgFile, textsafe.Line(err.Error()))
				return 1
			}
			fronts = append(fronts, done)
			ts.Proxied = true
			raw["url"] = h.url
		}
		tr.Servers[srv.Name] = ts
		b, _ := json.Marshal(raw)
		inline[srv.Name] = b
	}
	for _, f := range fspecs {
		if s, ok := tr.Servers[f.server]; !ok || !s.Proxied {
			fmt.Fprintf(stderr, "harness record: -fault %s: no server of that name in %s\n", f.server, *cfgFile)
			return 2
		}
	}

	// The events' clock starts in host.New: fault times count from here.
	start := time.Now()
	rt, err := host.New(host.Options{
		Discovery:    config.Options{HomeDir: home, Inline: inline},
		Trusted:      true,
		StartupGate:  *gate,
		ProbeTimeout: *probe,
		EventLimit:   -1,
	})
	if err != nil {
		fmt.Fprintf(stderr, "harness record: %v\n", err)
		return 1
	}
	sess, err := rt.OpenSession(ctx, host.SessionOptions{Name: "s1"})
	if err != nil {
		_ = rt.Close(context.Background())
		fmt.Fprintf(stderr, "harness record: open session: %v\n", err)
		return 1
	}
	rep := sess.StartReport()
	logMu.Lock()
	fmt.Fprintf(stderr, "harness record: session open: ready %s; failed %s\n", textsafe.Line(list(rep.Ready)), textsafe.Line(list(rep.Failed)))
	for _, name := range slices.Sorted(maps.Keys(tr.Servers)) {
		if ctl, err := mcpproxy.ReadControlFile(filepath.Join(work, name+".control")); err == nil {
			fmt.Fprintf(stderr, "harness record: %s: proxy control %s token %s\n", textsafe.Line(name), ctl.URL, ctl.Token)
		}
	}
	logMu.Unlock()
	// A stdio server's proxy draws a new control endpoint at every launch:
	// announce it when the runtime restarted the server.
	stdioServers := map[string]bool{}
	for name, ts := range tr.Servers {
		stdioServers[name] = ts.Transport == string(config.Stdio)
	}
	sub, unsub := rt.Events().Subscribe(1024)
	announced := make(chan struct{})
	go func() {
		defer close(announced)
		for e := range sub {
			if e.Kind != event.ServerConnected || !stdioServers[e.Server] {
				continue
			}
			if a, _ := e.Get("attempt"); a == "0" {
				continue
			}
			if ctl, err := mcpproxy.ReadControlFile(filepath.Join(work, e.Server+".control")); err == nil {
				logMu.Lock()
				fmt.Fprintf(stderr, "harness record: %s: relaunched (attempt %s): proxy control %s token %s\n", textsafe.Line(e.Server), attrOf(e, "attempt"), ctl.URL, ctl.Token)
				logMu.Unlock()
			}
		}
	}()
	stopAnnouncing := sync.OnceFunc(func() {
		unsub()
		<-announced
	})
	defer stopAnnouncing()
	own := map[string][]string{}
	for _, f := range fspecs {
		if err := installFault(ctx, filepath.Join(work, f.server+".control"), f.rule); err != nil {
			fmt.Fprintf(stderr, "harness record: -fault %s: %s\n", f.server, textsafe.Line(err.Error()))
		} else {
			own[f.server] = append(own[f.server], f.rule)
		}
	}
	for i, cs := range specs {
		id := fmt.Sprintf("c%d", i+1)
		exposed := ""
		for _, t := range sess.Tools() {
			if t.Server == cs.server && t.MCPName == cs.tool {
				exposed = t.Name
			}
		}
		c := repro.Call{ID: id, Session: "s1", Server: cs.server, Tool: cs.tool, Exposed: exposed, Args: cs.args, StartMS: time.Since(start).Milliseconds()}
		if exposed == "" {
			c.Outcome, c.Code, c.Text = "error", "unknown_tool", fmt.Sprintf("server %s has no tool %s", cs.server, cs.tool)
		} else {
			var args any
			_ = json.Unmarshal(cs.args, &args)
			r, err := sess.CallTool(host.WithCallID(ctx, id), exposed, args)
			switch {
			case err != nil:
				c.Outcome, c.Text = "error", err.Error()
				var ce interface{ ErrorCode() string }
				if errors.As(err, &ce) {
					c.Code = ce.ErrorCode()
				}
			case r.IsError && r.Code != "":
				c.Outcome, c.Code, c.Text = "error", r.Code, r.Text
			case r.IsError:
				c.Outcome, c.Text = "tool-error", r.Text
			default:
				c.Outcome, c.Text = "ok", r.Text
			}
		}
		if len(c.Text) > 200 {
			c.Text = c.Text[:200]
		}
		c.EndMS = time.Since(start).Milliseconds()
		tr.Calls = append(tr.Calls, c)
		if !*jsonOut {
			fmt.Fprintf(stdout, "%s %s %s: %s%s (%dms)\n", id, cs.server, cs.tool, c.Outcome, codeSuffixCLI(c.Code), c.EndMS-c.StartMS)
		}
	}
	switch {
	case until != nil:
		fmt.Fprintf(stderr, "harness record: recording until %s; interrupt (Ctrl-C) to stop\n", textsafe.Line(until.String()))
		_, _ = rt.Events().Await(ctx, 0, *until)
	case len(specs) == 0:
		fmt.Fprintf(stderr, "harness record: recording; interrupt (Ctrl-C) to stop\n")
		<-ctx.Done()
	}
	if *linger > 0 && ctx.Err() == nil {
		t := time.NewTimer(*linger)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	sess.Close(context.Background())
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.Close(cctx); err != nil {
		fmt.Fprintf(stderr, "harness record: closing the runtime: %v\n", err)
	}
	stopAnnouncing()
	stopProxies()
	for _, done := range fronts {
		<-done
	}
	fronts = nil
	tr.Events = rt.Events().Events()
	// The era of each server: a scenario repro writes replays it in that
	// era.
	for _, name := range slices.Sorted(maps.Keys(tr.Servers)) {
		ts := tr.Servers[name]
		ts.Protocol = repro.NegotiatedProtocol(tr.Events, name)
		ts.Era = repro.EraOf(ts.Protocol)
		tr.Servers[name] = ts
		if ts.Era != "" {
			fmt.Fprintf(stderr, "harness record: %s: recorded in the %s era (protocol %s)\n", textsafe.Line(name), ts.Era, textsafe.Line(ts.Protocol))
		}
	}
	tr.Journals = map[string][]json.RawMessage{}
	for _, name := range slices.Sorted(maps.Keys(tr.Servers)) {
		if !tr.Servers[name].Proxied {
			continue
		}
		lines, truncated := readJournalLines(filepath.Join(work, name+".journal"))
		if truncated {
			fmt.Fprintf(stderr, "harness record: %s: the proxy's journal is longer than %d MiB; the trace keeps its start\n", textsafe.Line(name), maxJournalBytes>>20)
		}
		tr.Journals[name] = lines
		tr.Faults = append(tr.Faults, faultsFromJournal(name, lines, start, own[name])...)
	}
	slices.SortStableFunc(tr.Faults, func(a, b repro.Fault) int { return int(a.AtMS - b.AtMS) })
	if tr, err = redactTrace(tr, secrets); err != nil {
		fmt.Fprintf(stderr, "harness record: %v\n", err)
		return 1
	}
	if err := repro.Write(*out, tr); err != nil {
		fmt.Fprintf(stderr, "harness record: %v\n", err)
		return 1
	}
	// The last check: a secret that got past the redaction (in a form it
	// does not know) never stays on disk.
	written, err := os.ReadFile(*out)
	if marker, found := secrets.Find(written); err == nil && found {
		err = fmt.Errorf("it holds a secret of the session (%s) after redaction", marker)
	}
	if err != nil {
		_ = os.Remove(*out)
		fmt.Fprintf(stderr, "harness record: %s: %v; the trace was removed\n", *out, err)
		return 1
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"trace": *out, "events": len(tr.Events), "calls": tr.Calls, "faults": tr.Faults})
	} else {
		fmt.Fprintf(stdout, "trace %s: %d events, %d calls, %d rule changes; next: harness repro %s\n", *out, len(tr.Events), len(tr.Calls), len(tr.Faults), *out)
	}
	return 0
}

// installFault waits for a proxy's control file and posts rule to it.
func installFault(ctx context.Context, controlFile, rule string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var ctl mcpproxy.ControlEndpoint
	for {
		var err error
		if ctl, err = mcpproxy.ReadControlFile(controlFile); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the proxy's control endpoint never came up: %w", ctx.Err())
		case <-tick.C:
		}
	}
	req, err := ctl.NewRequest(ctx, http.MethodPost, "/rules", mcpproxy.RulesRequest{Rules: []string{rule}})
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("control endpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("control endpoint: %s: %s", resp.Status, textsafe.Line(strings.TrimSpace(string(b))))
	}
	return nil
}

func attrOf(e event.Event, k string) string {
	v, _ := e.Get(k)
	return v
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	return strings.Join(slices.Sorted(slices.Values(xs)), ",")
}

func codeSuffixCLI(code string) string {
	if code == "" {
		return ""
	}
	return " " + code
}
