package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
)

// usage returns the usage line of a command.
func usage(name string) string {
	for _, c := range registry() {
		if c.Name == name {
			return c.Usage
		}
	}
	return name
}

// parseFlags parses the leading flags of a command's arguments.
func (s *state) parseFlags(cmd string, args []string, define func(fs *flag.FlagSet)) []string {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if define != nil {
		define(fs)
	}
	if err := fs.Parse(args); err != nil {
		s.fatalf("%s: %v\nusage: %s", cmd, err, usage(cmd))
	}
	return fs.Args()
}

func (s *state) usageError(cmd string) {
	s.fatalf("usage: %s", usage(cmd))
}

// background reports whether args end with "&" and strips it.
func background(args []string) ([]string, bool) {
	if n := len(args); n > 0 && args[n-1] == "&" {
		return args[:n-1], true
	}
	return args, false
}

// ---- expectations ----

// expectation is KEY=VALUE, KEY!=VALUE, KEY~REGEXP or KEY!~REGEXP.
type expectation struct {
	key, op, want string
	re            *regexp.Regexp
}

var expRE = regexp.MustCompile(`^([A-Za-z0-9_.:-]+)(!=|!~|=|~)(.*)$`)

func (s *state) parseExpectations(cmd string, args []string) []expectation {
	var out []expectation
	for _, a := range args {
		m := expRE.FindStringSubmatch(a)
		if m == nil {
			s.fatalf("%s: %q is not an expectation KEY=VALUE, KEY!=VALUE, KEY~REGEXP or KEY!~REGEXP\nusage: %s", cmd, a, usage(cmd))
		}
		e := expectation{key: m[1], op: m[2], want: m[3]}
		if e.op == "~" || e.op == "!~" {
			re, err := regexp.Compile(e.want)
			if err != nil {
				s.fatalf("%s: %s: %v", cmd, a, err)
			}
			e.re = re
		}
		out = append(out, e)
	}
	return out
}

func (e expectation) holds(got string) bool {
	switch e.op {
	case "=":
		return got == e.want
	case "!=":
		return got != e.want
	case "~":
		return e.re.MatchString(got)
	default:
		return !e.re.MatchString(got)
	}
}

func (e expectation) String() string { return e.key + e.op + e.want }

// expect checks expectations against a rendered outcome; it counts one
// check when there are any.
func (s *state) expect(cmd, what string, got map[string]string, exps []expectation) {
	if len(exps) == 0 {
		return
	}
	var bad []string
	for _, e := range exps {
		v, ok := got[e.key]
		if !ok {
			known := sortedKeys(got)
			if !strings.Contains(e.key, ".") || !isDynamicKey(e.key) {
				s.fatalf("%s: unknown key %q in expectation %s (keys: %s)", cmd, e.key, e, strings.Join(known, ", "))
			}
		}
		if e.key == "elapsed_ms" && e.op == "=" && s.timeScale() != 1 {
			// open's elapsed_ms on the real clock: the scaled duration
			// within the conformance suite's real-time band.
			if ok, band := s.elapsedWithin(v, e.want); !ok {
				bad = append(bad, fmt.Sprintf("%s: got %q (real clock: want %s)", e, v, band))
			}
			continue
		}
		if !e.holds(v) {
			bad = append(bad, fmt.Sprintf("%s: got %q", e, v))
		}
	}
	if len(bad) > 0 {
		s.fatalWithTails("%s %s: expectation failed:\n  %s\n%s", cmd, what, s.sanitize(strings.Join(bad, "\n  ")), s.sanitize(renderMap(got)))
	}
	s.check()
}

// The real-time band of a duration checked on the real clock, the
// conformance suite's (conformance/clock.go, VerifyElapsed): 50 ms early,
// 1.5 s plus half the duration late.
const (
	earlyTolerance = 50 * time.Millisecond
	lateTolerance  = 1500 * time.Millisecond
	lateFactor     = 0.5
)

// elapsedWithin reports whether got (milliseconds) lies in the real-time
// band of want (milliseconds the scenario configures, scaled), and the
// band.
func (s *state) elapsedWithin(got, want string) (bool, string) {
	g, gerr := strconv.ParseInt(got, 10, 64)
	w, werr := strconv.ParseInt(want, 10, 64)
	if werr != nil {
		s.fatalf("elapsed_ms=%s: want a number of milliseconds", want)
	}
	d := time.Duration(s.scaleMs(w)) * time.Millisecond
	lo, hi := d-earlyTolerance, d+lateTolerance+time.Duration(float64(d)*lateFactor)
	gd := time.Duration(g) * time.Millisecond
	return gerr == nil && gd >= lo && gd <= hi, fmt.Sprintf("%v scaled by %v, within [%v, %v]", time.Duration(w)*time.Millisecond, s.timeScale(), lo, hi)
}

// isDynamicKey tells keys that may be absent: error.SERVER and the like.
func isDynamicKey(k string) bool {
	return strings.HasPrefix(k, "error.")
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func renderMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range sortedKeys(m) {
		v := m[k]
		if strings.Contains(v, "\n") || len(v) > 300 {
			v = strconv.Quote(truncate(v, 300))
		}
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... (%d bytes)", len(s))
}

func (s *state) print(m map[string]string) {
	fmt.Fprint(s.ts.Stdout(), s.sanitize(renderMap(m)))
}

// ---- start ----

func cmdStart(s *state, _ bool, args []string) {
	if s.client != nil && !s.closed {
		s.fatalf("start: the implementation is already started")
	}
	if s.client != nil {
		// A second run in the same script (after shutdown): the agent
		// restarted, e.g. to find what an earlier run left in the tool
		// cache.
		if s.run.opts.KeepEvents {
			s.earlier = s.allEvents()
		}
		s.virtualDone += s.lastNow
		s.client, s.hello, s.closed, s.lastNow = nil, nil, false, 0
		s.marks = map[string]uint64{}
		s.pending = map[string]*bgRequest{}
	}
	var clockMode, inline, workspace, home, cacheDir, credentials string
	var trusted, skipProject bool
	var configs, envs multiFlag
	rest := s.parseFlags("start", args, func(fs *flag.FlagSet) {
		fs.StringVar(&clockMode, "clock", "", "")
		fs.StringVar(&inline, "inline", "", "")
		fs.StringVar(&workspace, "workspace", "", "")
		fs.StringVar(&home, "home", ".home", "")
		fs.StringVar(&cacheDir, "cache", "", "")
		fs.StringVar(&credentials, "credentials", "", "")
		fs.BoolVar(&trusted, "trusted", false, "")
		fs.BoolVar(&skipProject, "skip-project", false, "")
		fs.Var(&configs, "config", "")
		fs.Var(&envs, "env", "")
	})
	if clockMode != "" && clockMode != driver.ClockVirtual && clockMode != driver.ClockReal {
		s.fatalf("start: -clock %q: want virtual or real", clockMode)
	}
	p := driver.StartParams{
		Home:              s.path(home),
		Trusted:           trusted,
		SkipProjectConfig: skipProject,
	}
	if workspace != "" {
		p.Workspace = s.path(workspace)
	}
	if cacheDir != "" {
		p.CacheDir = s.path(cacheDir)
	}
	if credentials != "" {
		p.CredentialsFile = s.path(credentials)
	}
	if inline != "" {
		data, err := os.ReadFile(s.path(inline))
		if err != nil {
			s.fatalf("start: -inline: %v", err)
		}
		if err := json.Unmarshal(data, &p.Inline); err != nil {
			s.fatalf("start: -inline %s: want a JSON object mapping server names to server objects: %v", inline, err)
		}
	}
	for _, c := range configs {
		parts := strings.SplitN(c, ":", 3)
		f := driver.ConfigFile{Path: s.path(parts[0]), Level: "user"}
		if len(parts) > 1 {
			f.Level = parts[1]
		}
		if len(parts) > 2 {
			f.Provider = parts[2]
		}
		p.ConfigFiles = append(p.ConfigFiles, f)
	}
	p.Env = map[string]string{}
	for _, kv := range s.env.Vars {
		if k, v, ok := strings.Cut(kv, "="); ok {
			p.Env[k] = v
		}
	}
	for _, e := range envs {
		k, v, ok := strings.Cut(e, "=")
		if !ok {
			v = s.ts.Getenv(k)
		}
		p.Env[k] = v
	}
	if len(rest) > 0 {
		opts := map[string]json.RawMessage{}
		for _, kv := range rest {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				s.fatalf("start: %q is not OPTION=VALUE\nusage: %s", kv, usage("start"))
			}
			if !json.Valid([]byte(v)) {
				v = strconv.Quote(v)
			}
			opts[k] = json.RawMessage(v)
		}
		raw, _ := json.Marshal(opts)
		var so driver.StartOptions
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&so); err != nil {
			s.fatalf("start: options: %v (the options are the start options of docs/DRIVER.md, e.g. toolTimeoutMs=1000)", err)
		}
		p.Options = &so
	}

	c, err := startDriver(s.ctx, s.run.opts, s.stderrBuffer())
	if err != nil {
		s.fatalf("start: %v", err)
	}
	s.client = c
	// Until the clock is chosen, waits are bounded in real time only.
	s.clock = driver.ClockReal
	ctx, cancel := s.timeoutCtx(0)
	defer cancel()
	h, err := c.Hello(ctx)
	if err != nil {
		s.fatalWithTails("start: hello: %v", err)
	}
	s.hello = h
	if clockMode == "" {
		// The virtual clock when the driver has it, the real one
		// otherwise: a scenario that uses no virtual-time command runs
		// on either.
		clockMode = driver.ClockReal
		if h.Has(driver.CapVirtualClock) {
			clockMode = driver.ClockVirtual
		}
	}
	if clockMode == driver.ClockVirtual && !h.Has(driver.CapVirtualClock) {
		s.fatalf("start: -clock virtual: the driver does not announce virtual-clock: guard the scenario with [!cap:virtual-clock] skip 'needs virtual-clock (uses COMMAND)'")
	}
	s.clock = clockMode
	p.Clock = clockMode
	s.scaleStart(&p)
	if err := c.Start(ctx, p); err != nil {
		s.requestFailed("start", err)
	}
}

func (s *state) stderrBuffer() io.Writer {
	if len(s.run.opts.Driver) == 0 {
		return nil
	}
	s.stderr = &lockedBuffer{}
	return s.stderr
}

// scaleStart scales, on the real clock, the durations the scenario
// configures in the start params: the options ending in Ms and the
// duration fields of inline server objects (timeout, toolTimeout,
// restartDelays). A config file given with -config is passed as written.
func (s *state) scaleStart(p *driver.StartParams) {
	if s.timeScale() == 1 {
		return
	}
	if o := p.Options; o != nil {
		for _, f := range []struct {
			v    **int64
			kind string
		}{{&o.StartupGateMs, durOther}, {&o.ToolTimeoutMs, durTimeout}, {&o.ProbeTimeoutMs, durTimeout}, {&o.UnregisterGraceMs, durGrace},
			{&o.StabilityWindowMs, durOther}, {&o.AcquireTimeoutMs, durTimeout}, {&o.IdleTimeoutMs, durIdle}, {&o.RestartWaitMs, durOther}} {
			if *f.v != nil {
				v := s.scaleConfigured(f.kind, **f.v)
				*f.v = &v
			}
		}
	}
	for name, raw := range p.Inline {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			continue // not an object: the implementation judges it as written
		}
		scale := func(kind string, v json.RawMessage) json.RawMessage {
			var ms int64
			if json.Unmarshal(v, &ms) != nil {
				return v
			}
			return json.RawMessage(strconv.FormatInt(s.scaleConfigured(kind, ms), 10))
		}
		changed := false
		for _, k := range []string{"timeout", "toolTimeout"} {
			if v, ok := obj[k]; ok {
				obj[k], changed = scale(durTimeout, v), true
			}
		}
		if v, ok := obj["restartDelays"]; ok {
			var delays []json.RawMessage
			if json.Unmarshal(v, &delays) == nil {
				for i := range delays {
					delays[i] = scale(durDelay, delays[i])
				}
				obj["restartDelays"], _ = json.Marshal(delays)
				changed = true
			}
		}
		if changed {
			p.Inline[name], _ = json.Marshal(obj)
		}
	}
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// ---- sessions ----

func cmdOpen(s *state, _ bool, args []string) {
	var timeout time.Duration
	args = s.parseFlags("open", args, func(fs *flag.FlagSet) { fs.DurationVar(&timeout, "timeout", 0, "") })
	args, bg := background(args)
	if len(args) < 1 || (bg && len(args) != 1) {
		s.usageError("open")
	}
	name := args[0]
	exps := s.parseExpectations("open", args[1:])
	req := s.send("open", name, driver.MethodSessionOpen, driver.SessionParams{Session: name}, &driver.SessionOpenResult{}, renderOpen)
	if bg {
		return
	}
	s.finishRequest(req, timeout, exps)
}

func renderOpen(s *state, result any) map[string]string {
	r := result.(*driver.SessionOpenResult).Report
	join := func(v []string) string {
		v = slices.Clone(v)
		sort.Strings(v)
		return strings.Join(v, ",")
	}
	m := map[string]string{
		"ready":      join(r.Ready),
		"failed":     join(r.Failed),
		"deferred":   join(r.Deferred),
		"late":       join(r.Late),
		"elapsed_ms": strconv.FormatInt(r.ElapsedMs, 10),
	}
	for k, v := range r.Errors {
		m["error."+k] = v
	}
	return m
}

// send sends a request that may be collected later.
func (s *state) send(verb, arg, method string, params, result any, render func(*state, any) map[string]string) *bgRequest {
	c := s.requireClient(verb)
	key := strings.TrimSpace(verb + " " + arg)
	if _, ok := s.pending[key]; ok {
		s.fatalf("%s: a request %q is still to be collected", verb, key)
	}
	ctx, cancel := s.timeoutCtx(0)
	defer cancel()
	p, err := c.Send(ctx, method, params)
	if err != nil {
		s.requestFailed(method, err)
	}
	req := &bgRequest{verb: verb, arg: arg, method: method, result: result, render: render, done: make(chan struct{})}
	// The answer is awaited in the background, so that running can tell
	// whether it arrived without consuming it.
	go func() {
		defer close(req.done)
		req.err = p.Wait(s.ctx, result)
	}()
	s.pending[key] = req
	return req
}

// finishRequest waits for a request's answer, prints it and checks
// expectations.
func (s *state) finishRequest(req *bgRequest, timeout time.Duration, exps []expectation) {
	ctx, cancel := s.timeoutCtx(timeout)
	defer cancel()
	select {
	case <-req.done:
	case <-ctx.Done():
		s.fatalWithTails("%s %s: no answer to %s %s", req.verb, req.arg, req.method, s.ended(ctx, timeout))
	}
	delete(s.pending, strings.TrimSpace(req.verb+" "+req.arg))
	if req.err != nil {
		s.requestFailed(req.method, req.err)
	}
	if req.render == nil {
		if len(exps) > 0 {
			s.fatalf("%s: takes no expectations", req.verb)
		}
		return
	}
	got := req.render(s, req.result)
	s.print(got)
	s.expect(req.verb, req.arg, got, exps)
}

func timeoutOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func cmdCollect(s *state, _ bool, args []string) {
	var timeout time.Duration
	args = s.parseFlags("collect", args, func(fs *flag.FlagSet) { fs.DurationVar(&timeout, "timeout", 0, "") })
	req, rest := s.pendingFor("collect", args)
	s.finishRequest(req, timeout, s.parseExpectations("collect", rest))
}

// pendingFor finds the background request named by VERB [ARG].
func (s *state) pendingFor(cmd string, args []string) (*bgRequest, []string) {
	if len(args) < 1 {
		s.usageError(cmd)
	}
	verb := args[0]
	switch verb {
	case "reload":
		args = args[1:]
		if r, ok := s.pending["reload"]; ok {
			return r, args
		}
		s.fatalf("%s: no reload was sent with &", cmd)
	case "open", "close", "disconnect":
		if len(args) < 2 {
			s.usageError(cmd)
		}
		key := verb + " " + args[1]
		if r, ok := s.pending[key]; ok {
			return r, args[2:]
		}
		s.fatalf("%s: no %q was sent with &", cmd, key)
	}
	s.fatalf("%s: %q is not open, close, disconnect or reload", cmd, verb)
	return nil, nil
}

func cmdRunning(s *state, _ bool, args []string) {
	req, rest := s.pendingFor("running", args)
	if len(rest) > 0 {
		s.usageError("running")
	}
	if req.finished() {
		s.fatalWithTails("running %s %s: the request has been answered already", req.verb, req.arg)
	}
	s.check()
}

func cmdClose(s *state, _ bool, args []string) {
	args, bg := background(args)
	if len(args) != 1 {
		s.usageError("close")
	}
	req := s.send("close", args[0], driver.MethodSessionClose, driver.SessionParams{Session: args[0]}, nil, nil)
	if !bg {
		s.finishRequest(req, 0, nil)
	}
}

func cmdReload(s *state, _ bool, args []string) {
	args, bg := background(args)
	if len(args) != 0 {
		s.usageError("reload")
	}
	req := s.send("reload", "", driver.MethodReload, nil, nil, nil)
	if !bg {
		s.finishRequest(req, 0, nil)
	}
}

func cmdDisconnect(s *state, _ bool, args []string) {
	args, bg := background(args)
	if len(args) != 1 {
		s.usageError("disconnect")
	}
	req := s.send("disconnect", args[0], driver.MethodServerDisconnect, driver.ServerParams{Server: args[0]}, nil, nil)
	if !bg {
		s.finishRequest(req, 0, nil)
	}
}

// ---- tools ----

// toolsCheck is a parsed tools expectation list.
type toolsCheck struct {
	has, lacks []string
	exps       []expectation
}

func (s *state) parseToolsCheck(cmd string, args []string) toolsCheck {
	var tc toolsCheck
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "has="); ok {
			tc.has = append(tc.has, v)
		} else if v, ok := strings.CutPrefix(a, "lacks="); ok {
			tc.lacks = append(tc.lacks, v)
		} else {
			tc.exps = append(tc.exps, s.parseExpectations(cmd, []string{a})...)
		}
	}
	return tc
}

func (tc toolsCheck) empty() bool { return len(tc.has)+len(tc.lacks)+len(tc.exps) == 0 }

// listTools lists a session's tools and renders them.
func (s *state) listTools(session string) ([]driver.Tool, map[string]string) {
	var r driver.ToolsListResult
	s.request(driver.MethodToolsList, driver.SessionParams{Session: session}, &r)
	names := make([]string, 0, len(r.Tools))
	deferred := 0
	for _, t := range r.Tools {
		names = append(names, t.Name)
		if t.Deferred {
			deferred++
		}
	}
	sort.Strings(names)
	return r.Tools, map[string]string{
		"count":    strconv.Itoa(len(r.Tools)),
		"deferred": strconv.Itoa(deferred),
		"names":    strings.Join(names, ","),
	}
}

// failures returns the expectations the tool list does not meet.
func (tc toolsCheck) failures(tools []driver.Tool, got map[string]string) []string {
	present := map[string]bool{}
	for _, t := range tools {
		present[t.Name] = true
	}
	var bad []string
	for _, n := range tc.has {
		if !present[n] {
			bad = append(bad, "has="+n+": not listed")
		}
	}
	for _, n := range tc.lacks {
		if present[n] {
			bad = append(bad, "lacks="+n+": listed")
		}
	}
	for _, e := range tc.exps {
		if !e.holds(got[e.key]) {
			bad = append(bad, fmt.Sprintf("%s: got %q", e, got[e.key]))
		}
	}
	return bad
}

func (s *state) printTools(tools []driver.Tool) {
	out := s.ts.Stdout()
	for _, t := range tools {
		line := fmt.Sprintf("%s server=%s tool=%s", t.Name, t.Server, t.Tool)
		if t.Deferred {
			line += " deferred"
		}
		fmt.Fprintln(out, line)
	}
}

func (s *state) checkToolsKeys(cmd string, tc toolsCheck) {
	for _, e := range tc.exps {
		switch e.key {
		case "count", "deferred", "names":
		default:
			s.fatalf("%s: unknown key %q (count, deferred, names, has, lacks)", cmd, e.key)
		}
	}
}

func cmdTools(s *state, _ bool, args []string) {
	if len(args) < 1 {
		s.usageError("tools")
	}
	session := args[0]
	tc := s.parseToolsCheck("tools", args[1:])
	s.checkToolsKeys("tools", tc)
	tools, got := s.listTools(session)
	s.printTools(tools)
	if tc.empty() {
		return
	}
	if bad := tc.failures(tools, got); len(bad) > 0 {
		s.fatalWithTails("tools %s: expectation failed:\n  %s\ntools: %s", session, strings.Join(bad, "\n  "), got["names"])
	}
	s.check()
}

func cmdAwaitTools(s *state, _ bool, args []string) {
	var timeout time.Duration
	args = s.parseFlags("await-tools", args, func(fs *flag.FlagSet) { fs.DurationVar(&timeout, "timeout", 0, "") })
	if len(args) < 2 {
		s.usageError("await-tools")
	}
	session := args[0]
	tc := s.parseToolsCheck("await-tools", args[1:])
	s.checkToolsKeys("await-tools", tc)
	ctx, cancel := s.timeoutCtx(timeout)
	defer cancel()
	// A session's tool list is state, not an event: poll it on a short
	// real ticker until it meets the expectations.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		tools, got := s.listTools(session)
		bad := tc.failures(tools, got)
		if len(bad) == 0 {
			s.printTools(tools)
			s.check()
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			s.fatalWithTails("await-tools %s: the tool list did not meet the expectations %s:\n  %s\ntools: %s",
				session, s.ended(ctx, timeout), strings.Join(bad, "\n  "), got["names"])
		}
	}
}

// ---- calls ----

func cmdCall(s *state, _ bool, args []string) {
	timeoutMs := int64(-1)
	args = s.parseFlags("call", args, func(fs *flag.FlagSet) { fs.Int64Var(&timeoutMs, "timeout-ms", -1, "") })
	if len(args) < 3 || len(args) > 4 {
		s.usageError("call")
	}
	p := driver.ToolCallParams{Session: args[0], CallID: args[1], Tool: args[2]}
	if len(args) == 4 {
		if !json.Valid([]byte(args[3])) {
			s.fatalf("call: arguments %q are not JSON", args[3])
		}
		p.Arguments = json.RawMessage(args[3])
	}
	if timeoutMs >= 0 {
		timeoutMs = s.scaleConfigured(durTimeout, timeoutMs)
		p.TimeoutMs = &timeoutMs
	}
	c := s.requireClient("call")
	ctx, cancel := s.timeoutCtx(0)
	defer cancel()
	if err := c.CallTool(ctx, p); err != nil {
		s.requestFailed("tool.call", err)
	}
}

func renderCall(r driver.CallResult) map[string]string {
	o := r.Result
	outcome := "ok"
	errCode, msg := "", ""
	switch {
	case r.Error != nil && (r.Error.Code == string(driver.OutcomeAborted) || o.Aborted):
		outcome = "aborted"
		errCode, msg = r.Error.Code, r.Error.Message
	case r.Error != nil:
		outcome = "error"
		errCode, msg = r.Error.Code, r.Error.Message
	case o.IsError:
		outcome = "tool-error"
	}
	return map[string]string{
		"outcome":       outcome,
		"code":          o.Code,
		"error":         errCode,
		"message":       msg,
		"text":          o.Text,
		"isError":       strconv.FormatBool(o.IsError),
		"aborted":       strconv.FormatBool(o.Aborted),
		"truncated":     strconv.FormatBool(o.Truncated),
		"originalChars": strconv.Itoa(o.OriginalChars),
		"signals":       strings.Join(o.Signals, ","),
		"server":        o.Server,
		"tool":          o.Tool,
	}
}

func cmdResult(s *state, _ bool, args []string) {
	var timeout time.Duration
	args = s.parseFlags("result", args, func(fs *flag.FlagSet) { fs.DurationVar(&timeout, "timeout", 0, "") })
	if len(args) < 1 {
		s.usageError("result")
	}
	id := args[0]
	exps := s.parseExpectations("result", args[1:])
	c := s.requireClient("result")
	ctx, cancel := s.timeoutCtx(timeout)
	defer cancel()
	r, err := c.AwaitCall(ctx, id)
	if err != nil {
		s.fatalWithTails("result %s: no call_result %s: %v", id, s.ended(ctx, timeout), err)
	}
	got := renderCall(r)
	s.print(got)
	s.expect("result", id, got, exps)
}

func cmdCancel(s *state, _ bool, args []string) {
	if len(args) < 1 {
		s.usageError("cancel")
	}
	exps := s.parseExpectations("cancel", args[1:])
	var r driver.CancelResult
	s.request(driver.MethodToolCancel, driver.CancelParams{CallID: args[0]}, &r)
	got := map[string]string{"running": strconv.FormatBool(r.Running)}
	s.print(got)
	s.expect("cancel", args[0], got, exps)
}

// ---- acquire ----

func cmdAcquire(s *state, _ bool, args []string) {
	if len(args) != 2 {
		s.usageError("acquire")
	}
	c := s.requireClient("acquire")
	ctx, cancel := s.timeoutCtx(0)
	defer cancel()
	if err := c.Acquire(ctx, args[0], args[1]); err != nil {
		s.requestFailed("acquire", err)
	}
}

func cmdAcquired(s *state, _ bool, args []string) {
	var timeout time.Duration
	args = s.parseFlags("acquired", args, func(fs *flag.FlagSet) { fs.DurationVar(&timeout, "timeout", 0, "") })
	if len(args) < 1 {
		s.usageError("acquired")
	}
	exps := s.parseExpectations("acquired", args[1:])
	c := s.requireClient("acquired")
	ctx, cancel := s.timeoutCtx(timeout)
	defer cancel()
	r, err := c.AwaitAcquire(ctx, args[0])
	if err != nil {
		s.fatalWithTails("acquired %s: no acquire_result %s: %v", args[0], s.ended(ctx, timeout), err)
	}
	got := map[string]string{"ok": strconv.FormatBool(r.OK), "code": "", "message": ""}
	if r.Error != nil {
		got["code"], got["message"] = r.Error.Code, r.Error.Message
	}
	s.print(got)
	s.expect("acquired", args[0], got, exps)
}

func cmdRelease(s *state, _ bool, args []string) {
	if len(args) != 1 {
		s.usageError("release")
	}
	s.request(driver.MethodRelease, driver.ReleaseParams{AcquireID: args[0]}, nil)
}

// ---- status ----

func (s *state) status() []driver.ServerStatus {
	var r driver.StatusResult
	s.request(driver.MethodStatus, nil, &r)
	return r.Servers
}

func renderStatus(st driver.ServerStatus) map[string]string {
	m := map[string]string{
		"state":           st.State,
		"transport":       st.Transport,
		"tools":           strconv.Itoa(st.Tools),
		"deferred":        strconv.FormatBool(st.Deferred),
		"error":           st.Error,
		"stderr":          st.Stderr,
		"shared":          strconv.FormatBool(st.Shared),
		"refs":            strconv.Itoa(st.Refs),
		"pid":             "",
		"connected":       strconv.FormatBool(st.ConnectedAtMs != nil),
		"connectedAtMs":   "",
		"restartAttempts": strconv.Itoa(st.RestartAttempts),
		"policy":          st.Policy,
		"source.file":     st.Source.File,
		"source.level":    st.Source.Level,
		"source.provider": st.Source.Provider,
		"warnings":        strings.Join(st.Warnings, "; "),
		"sessionReinits":  strconv.Itoa(st.SessionReinits),
		"streamResumes":   strconv.Itoa(st.StreamResumes),
	}
	if st.PID > 0 {
		m["pid"] = strconv.Itoa(st.PID)
	}
	if st.ConnectedAtMs != nil {
		m["connectedAtMs"] = strconv.FormatInt(*st.ConnectedAtMs, 10)
	}
	return m
}

func cmdStatus(s *state, _ bool, args []string) {
	servers := s.status()
	if len(args) == 0 {
		out := s.ts.Stdout()
		for _, st := range servers {
			m := renderStatus(st)
			line := fmt.Sprintf("%s state=%s transport=%s tools=%s shared=%s refs=%s restartAttempts=%s policy=%s",
				st.Name, m["state"], m["transport"], m["tools"], m["shared"], m["refs"], m["restartAttempts"], m["policy"])
			if st.Error != "" {
				line += " error=" + strconv.Quote(s.sanitize(firstLine(st.Error)))
			}
			fmt.Fprintln(out, line)
		}
		return
	}
	name := args[0]
	exps := s.parseExpectations("status", args[1:])
	got := map[string]string{"state": "absent"}
	for _, st := range servers {
		if st.Name == name {
			got = renderStatus(st)
		}
	}
	s.print(got)
	s.expect("status", name, got, exps)
}

func cmdAwaitStatus(s *state, _ bool, args []string) {
	var timeout time.Duration
	args = s.parseFlags("await-status", args, func(fs *flag.FlagSet) { fs.DurationVar(&timeout, "timeout", 0, "") })
	if len(args) < 2 {
		s.usageError("await-status")
	}
	name := args[0]
	exps := s.parseExpectations("await-status", args[1:])
	ctx, cancel := s.timeoutCtx(timeout)
	defer cancel()
	// A server's status is state, not an event: poll it on a short real
	// ticker until it meets the expectations.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		got := map[string]string{"state": "absent"}
		for _, st := range s.status() {
			if st.Name == name {
				got = renderStatus(st)
			}
		}
		var bad []string
		for _, e := range exps {
			if _, ok := got[e.key]; !ok {
				s.fatalf("await-status: unknown key %q (keys: %s)", e.key, strings.Join(sortedKeys(got), ", "))
			}
			if !e.holds(got[e.key]) {
				bad = append(bad, fmt.Sprintf("%s: got %q", e, got[e.key]))
			}
		}
		if len(bad) == 0 {
			s.print(got)
			s.check()
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			s.fatalWithTails("await-status %s: the status did not meet the expectations %s:\n  %s\n%s",
				name, s.ended(ctx, timeout), s.sanitize(strings.Join(bad, "\n  ")), s.sanitize(renderMap(got)))
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// ---- processes ----

var signals = map[string]syscall.Signal{
	"SIGKILL": syscall.SIGKILL, "SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT,
	"SIGHUP": syscall.SIGHUP, "SIGSTOP": syscall.SIGSTOP, "SIGCONT": syscall.SIGCONT,
}

func parseSignal(name string) (syscall.Signal, bool) {
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig, ok := signals[strings.ToUpper(name)]
	return sig, ok
}

func cmdSignal(s *state, _ bool, args []string) {
	if len(args) != 2 {
		s.usageError("signal")
	}
	sig, ok := parseSignal(args[1])
	if !ok {
		s.fatalf("signal: unknown signal %q (SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGSTOP, SIGCONT)", args[1])
	}
	target := args[0]
	pid := 0
	if strings.HasSuffix(target, ".journal") {
		for _, e := range s.readJournal(target) {
			if e.Kind == "launch" {
				pid = e.PID
			}
		}
		if pid == 0 {
			s.fatalWithTails("signal: journal %s records no launch", target)
		}
	} else {
		if s.hello != nil && (!s.hello.Has(driver.CapStatus) || !s.hello.Has(driver.CapJournalPID)) {
			s.fatalf("signal %s: the pid comes from status, which needs capabilities status and journal-pid; guard with [!cap:journal-pid] skip or name the journal", target)
		}
		for _, st := range s.status() {
			if st.Name == target {
				pid = st.PID
			}
		}
		if pid == 0 {
			s.fatalWithTails("signal: status reports no process for server %q", target)
		}
	}
	if err := syscall.Kill(pid, sig); err != nil {
		s.fatalf("signal %s (pid %d): %v", target, pid, err)
	}
	fmt.Fprintf(s.ts.Stdout(), "sent %s to %s\n", args[1], target)
}

func cmdShutdown(s *state, _ bool, args []string) {
	if len(args) != 0 {
		s.usageError("shutdown")
	}
	s.requireClient("shutdown")
	left, err := s.shutdown()
	if err != nil {
		s.fatalf("shutdown: %v", err)
	}
	if len(left) > 0 {
		s.fatalf("shutdown: processes left behind (killed now): %s", strings.Join(left, ", "))
	}
	s.check()
}

// ---- time ----

func parseMillis(s *state, cmd, v string) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d%time.Millisecond != 0 {
		s.fatalf("%s: %q is not a duration in whole milliseconds (e.g. 250ms, 2s, 1m)", cmd, v)
	}
	return d
}

func cmdAdvance(s *state, _ bool, args []string) {
	var by string
	args = s.parseFlags("advance", args, func(fs *flag.FlagSet) { fs.StringVar(&by, "by", "", "") })
	d := s.durationArg("advance", by, args)
	c := s.requireClient("advance")
	if s.clock == driver.ClockReal {
		// The implementation's timers run in real time: let the scaled
		// duration pass. An announced duration is the implementation's
		// own, already as long as its timer.
		wait := time.Duration(s.scaleMs(d.Milliseconds())) * time.Millisecond
		if by != "" {
			wait = d
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.ctx.Done():
			s.fatalf("advance: interrupted")
		}
		fmt.Fprintf(s.ts.Stdout(), "waited %v (real clock, time scale %v)\n", wait, s.timeScale())
		return
	}
	ctx, cancel := s.timeoutCtx(0)
	defer cancel()
	now, err := c.Advance(ctx, d)
	if err != nil {
		s.requestFailed("clock.advance", err)
	}
	s.lastNow = now
	fmt.Fprintf(s.ts.Stdout(), "now %s\n", formatOffset(now.Milliseconds()))
}

// durationArg returns the duration of cmd's arguments: DURATION, or with
// -by ATTR the one the event KIND [KEY=VALUE...] announced (announced).
func (s *state) durationArg(cmd, by string, args []string) time.Duration {
	switch {
	case by == "" && len(args) == 1:
		return parseMillis(s, cmd, args[0])
	case by != "" && len(args) > 0:
		return s.announced(cmd, by, args)
	}
	s.usageError(cmd)
	return 0
}

// announced returns the duration the latest event matching args (KIND
// [KEY=VALUE...]) announces in its integer attribute attr, in
// milliseconds: the wait an implementation said it armed, such as the
// debounce of tools.changed (debounce_ms), whatever its length. The event
// must have been seen already (await it first).
func (s *state) announced(cmd, attr string, args []string) time.Duration {
	m := s.parseMatcher(cmd, args)
	c := s.requireClient(cmd)
	evs := matchEvents(c.Events(), 0, m)
	if len(evs) == 0 {
		s.fatalWithTails("%s -by %s: no event matches %s yet (await it first)", cmd, attr, m)
	}
	e := evs[len(evs)-1]
	var ms int64
	switch v := e.Attrs[attr].(type) {
	case int64:
		ms = v
	case int:
		ms = int64(v)
	case float64:
		ms = int64(v)
		if float64(ms) != v {
			ms = -1
		}
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			n = -1
		}
		ms = n
	default:
		ms = -1
	}
	if ms < 0 {
		s.fatalWithTails("%s -by %s: event %d (%s) has no whole, non-negative %s: %v", cmd, attr, e.Seq, e.Kind, attr, e.Attrs[attr])
	}
	d := time.Duration(ms) * time.Millisecond
	fmt.Fprintf(s.ts.Stdout(), "%s of event %d (%s): %v\n", attr, e.Seq, e.Kind, d)
	return d
}

func cmdNow(s *state, _ bool, args []string) {
	if len(args) > 1 {
		s.usageError("now")
	}
	now := s.now()
	fmt.Fprintf(s.ts.Stdout(), "now %s\n", formatOffset(now.Milliseconds()))
	if len(args) == 1 {
		want := parseMillis(s, "now", args[0])
		if now != want {
			s.fatalWithTails("now: the clock is at %v, want %v", now, want)
		}
		s.check()
	}
}

func cmdPending(s *state, _ bool, args []string) {
	c := s.requireClient("pending")
	ctx, cancel := s.timeoutCtx(0)
	defer cancel()
	got, err := c.Pending(ctx)
	if err != nil {
		s.requestFailed("clock.pending", err)
	}
	var gs []string
	for _, d := range got {
		gs = append(gs, d.String())
	}
	fmt.Fprintf(s.ts.Stdout(), "pending %s\n", strings.Join(gs, " "))
	if len(args) > 0 {
		var want []time.Duration
		for _, a := range args {
			want = append(want, parseMillis(s, "pending", a))
		}
		if !slices.Equal(got, want) {
			s.fatalWithTails("pending: timers %v, want %v", got, want)
		}
		s.check()
	}
}

func cmdAwaitTimer(s *state, _ bool, args []string) {
	var timeout time.Duration
	var by string
	args = s.parseFlags("await-timer", args, func(fs *flag.FlagSet) {
		fs.DurationVar(&timeout, "timeout", 0, "")
		fs.StringVar(&by, "by", "", "")
	})
	want := s.durationArg("await-timer", by, args)
	c := s.requireClient("await-timer")
	ctx, cancel := s.timeoutCtx(timeout)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	var got []time.Duration
	for {
		pctx, pcancel := s.timeoutCtx(0)
		p, err := c.Pending(pctx)
		pcancel()
		if err != nil {
			s.requestFailed("clock.pending", err)
		}
		got = p
		if slices.Contains(got, want) {
			fmt.Fprintf(s.ts.Stdout(), "timer due in %v is pending\n", want)
			s.check()
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			s.fatalWithTails("await-timer: no timer due in exactly %v was pending %s; pending: %v", want, s.ended(ctx, timeout), got)
		}
	}
}

// ---- fixture files and processes ----

func cmdJournal(s *state, _ bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		s.usageError("journal")
	}
	for _, e := range s.readJournal(args[0]) {
		if len(args) == 2 && e.Kind != args[1] {
			continue
		}
		fmt.Fprintln(s.ts.Stdout(), s.sanitize(journalLine(e)))
	}
}

func cmdFixtureState(s *state, _ bool, args []string) {
	if len(args) < 1 {
		s.usageError("fixture-state")
	}
	stateFile := s.path(args[0])
	st, _, err := readState(stateFile)
	if err != nil {
		s.fatalf("fixture-state: %v", err)
	}
	for _, kv := range args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			s.usageError("fixture-state")
		}
		var perr error
		switch k {
		case "phase":
			st.Phase = v
		case "failOnStart":
			st.FailOnStart, perr = strconv.ParseBool(v)
		case "remainingInitFails":
			st.RemainingInitFails, perr = strconv.Atoi(v)
		case "remainingRestartFails":
			st.RemainingRestartFails, perr = strconv.Atoi(v)
		default:
			s.fatalf("fixture-state: unknown field %q (phase, failOnStart, remainingInitFails, remainingRestartFails)", k)
		}
		if perr != nil {
			s.fatalf("fixture-state: %s: %v", kv, perr)
		}
	}
	if len(args) > 1 {
		if err := writeState(stateFile, st); err != nil {
			s.fatalf("fixture-state: %v", err)
		}
	}
	b, _ := json.Marshal(st)
	fmt.Fprintln(s.ts.Stdout(), string(b))
}

func cmdFixtureServe(s *state, _ bool, args []string) {
	if len(args) < 1 {
		s.usageError("fixture-serve")
	}
	name := args[0]
	if !regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`).MatchString(name) {
		s.fatalf("fixture-serve: %q is not a name (letters, digits, _)", name)
	}
	env := map[string]string{"MCP_FIXTURE_TRANSPORT": "http"}
	for _, kv := range args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, "MCP_FIXTURE_") {
			s.fatalf("fixture-serve: %q is not KNOB=VALUE with an MCP_FIXTURE_* knob", kv)
		}
		env[k] = s.sanitizeBack(v)
	}
	prev := s.served[name]
	if prev != nil {
		// The previous process is exiting on its own (or was stopped):
		// wait for it, so the address is free again.
		select {
		case <-prev.done:
		case <-time.After(s.run.awaitTimeout):
			s.fatalf("fixture-serve: %s is still running after %v; stop it with fixture-stop first", name, s.run.awaitTimeout)
		}
		env["MCP_FIXTURE_LISTEN"] = prev.addr
	}
	portFile := filepath.Join(s.work, ".fixture-"+name+".addr")
	_ = os.Remove(portFile)
	env["MCP_FIXTURE_PORT_FILE"] = portFile
	sv, err := startServed(s, name, env)
	if err != nil {
		s.fatalf("fixture-serve %s: %v", name, err)
	}
	s.served[name] = sv
	path := "/mcp"
	if env["MCP_FIXTURE_TRANSPORT"] == "sse" {
		path = "/sse"
	}
	sv.url = "http://" + sv.addr + path
	s.ts.Setenv(name+"_URL", sv.url)
	fmt.Fprintf(s.ts.Stdout(), "%s listening: %s_URL=%s\n", name, name, sv.url)
}

// sanitizeBack expands a literal $WORK left in a knob value.
func (s *state) sanitizeBack(v string) string {
	return strings.ReplaceAll(v, "$WORK", s.work)
}

func cmdFixtureStop(s *state, _ bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		s.usageError("fixture-stop")
	}
	sv := s.served[args[0]]
	if sv == nil {
		s.fatalf("fixture-stop: no fixture %q was started with fixture-serve", args[0])
	}
	sig := syscall.SIGTERM
	if len(args) == 2 {
		var ok bool
		if sig, ok = parseSignal(args[1]); !ok {
			s.fatalf("fixture-stop: unknown signal %q", args[1])
		}
	}
	_ = sv.cmd.Process.Signal(sig)
	select {
	case <-sv.done:
	case <-time.After(s.run.awaitTimeout):
		s.fatalWithTails("fixture-stop %s: the process did not exit within %v", args[0], s.run.awaitTimeout)
	}
	fmt.Fprintf(s.ts.Stdout(), "%s stopped: %s\n", args[0], sv.cmd.ProcessState)
}

var errNoAddr = errors.New("the fixture wrote no address")
