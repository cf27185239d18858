package config

import (
	"bytes"
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"
	"time"
)

// The keys that hold server maps. Every file may use either; when a file has
// both, the servers under "mcpServers" come first.
var serverKeys = []string{"mcpServers", "servers"}

// entry is one server definition found in a source, valid or not. An invalid
// definition (server == nil) still claims its name in precedence.
type entry struct {
	name   string
	src    Source
	server *Server
}

// ParseFile parses one config file: a JSON object whose "mcpServers" or
// "servers" key maps names to server entries. Comments and trailing commas
// are tolerated. String fields are ${VAR}-expanded through env (nil means
// os.LookupEnv), except that for LevelProject the url and header values expand
// only from the entry's own "env" block.
//
// It returns the valid servers in file order, "mcpServers" before "servers"
// (so a name can appear twice; the first has priority), and a diagnostic per
// problem. Invalid entries are skipped; the rest still load. ParseFile does
// not apply the MCPLIFE_MCP_TIMEOUT_MS override; Discover does.
func ParseFile(path string, data []byte, level Level, provider string, env func(string) (string, bool)) ([]*Server, []Diagnostic) {
	entries, diags := parseDoc(path, data, level, provider, env, nil)
	var out []*Server
	for _, e := range entries {
		if e.server != nil {
			out = append(out, e.server)
		}
	}
	return out, diags
}

// parseDoc parses a file's server sections: serverKeys, then each extra key
// path (used for ~/.claude.json's per-project servers, which come first).
func parseDoc(path string, data []byte, level Level, provider string, env func(string) (string, bool), first [][]string) ([]entry, []Diagnostic) {
	if env == nil {
		env = os.LookupEnv
	}
	p := &parser{data: blankJSONC(data), src: Source{File: path, Level: level, Provider: provider}, env: env}
	if len(bytes.TrimSpace(p.data)) == 0 {
		return nil, nil // an empty file defines nothing
	}
	if err := checkJSON(p.data); err != nil {
		off, _ := syntaxPosition(err)
		p.add(SeverityError, "", "", off, fmt.Errorf("%w: %w", ErrMalformedJSON, err), "malformed JSON: %v; no servers loaded from this file", err)
		return nil, p.diags
	}
	top := topValue(p.data)
	if !top.isObject() {
		p.add(SeverityError, "", "", top.off, ErrInvalidConfig, "top-level value must be an object, got %s", top.kind())
		return nil, p.diags
	}
	var sections [][]string
	sections = append(sections, first...)
	for _, k := range serverKeys {
		sections = append(sections, []string{k})
	}
	var entries []entry
	for _, sec := range sections {
		label := sectionLabel(sec)
		v, ok := top, true
		for _, k := range sec {
			if !v.isObject() {
				ok = false
				break
			}
			var dup *dupKey
			if v, ok, dup = v.getOnce(k); dup != nil {
				p.add(SeverityError, "", label, dup.off, ErrInvalidConfig, "duplicate key %q (%s)", k, p.duplicateMessage(*dup, "no servers are loaded from it"))
				ok = false
			}
			if !ok {
				break
			}
		}
		if !ok || string(v.raw()) == "null" {
			continue
		}
		if !v.isObject() {
			p.add(SeverityError, "", label, v.off, ErrInvalidConfig, "must be an object mapping server names to entries, got %s", v.kind())
			continue
		}
		// A name defined twice is refused: its first position claims the
		// name (as an invalid entry does) and every later one is an error.
		ms := v.members()
		first := make(map[string]int, len(ms))
		repeated := map[string]bool{}
		for i, m := range ms {
			if _, ok := first[m.key]; ok {
				repeated[m.key] = true
			} else {
				first[m.key] = i
			}
		}
		for i, m := range ms {
			switch {
			case first[m.key] != i:
				dk := dupKey{off: m.keyOff, firstOff: ms[first[m.key]].keyOff}
				p.add(SeverityError, m.key, "name", m.keyOff, ErrInvalidConfig, "defined more than once in %s (%s)", label,
					p.duplicateMessage(dk, "no definition of this name is loaded"))
			case repeated[m.key]:
				entries = append(entries, entry{name: m.key, src: p.src})
			default:
				s := p.parseEntry(m.key, m.keyOff, m.val)
				entries = append(entries, entry{name: m.key, src: p.src, server: s})
			}
		}
	}
	return entries, p.diags
}

func sectionLabel(keys []string) string {
	if len(keys) == 3 && keys[0] == "projects" {
		return fmt.Sprintf("projects[%q].%s", keys[1], keys[2])
	}
	return strings.Join(keys, ".")
}

// parser collects the diagnostics of one source.
type parser struct {
	data     []byte // text with comments blanked; offsets refer to it
	src      Source
	env      func(string) (string, bool)
	noExpand bool // ValidateEntry: check the entry as written
	diags    []Diagnostic
}

func (p *parser) add(sev Severity, server, field string, off int, err error, format string, args ...any) {
	d := Diagnostic{Severity: sev, File: p.src.File, Server: server, Field: field, Message: fmt.Sprintf(format, args...), Err: err}
	if p.src.File != "" && off >= 0 {
		d.Line, d.Column = position(p.data, off)
	}
	p.diags = append(p.diags, d)
}

// entryCheck checks one server entry.
type entryCheck struct {
	p      *parser
	name   string
	fields map[string]jval
	bad    bool
}

func (c *entryCheck) fail(field string, off int, format string, args ...any) {
	c.bad = true
	c.p.add(SeverityError, c.name, field, off, ErrInvalidConfig, format, args...)
}

func (c *entryCheck) warn(field string, off int, format string, args ...any) {
	c.p.add(SeverityWarning, c.name, field, off, ErrInvalidConfig, format, args...)
}

// str returns a string field; a wrong type is an error. "" counts as absent.
func (c *entryCheck) str(key string) (string, jval, bool) {
	v, ok := c.fields[key]
	if !ok {
		return "", v, false
	}
	s, isStr := v.str()
	if !isStr {
		c.fail(key, v.off, "must be a string, got %s", v.kind())
		return "", v, false
	}
	return s, v, s != ""
}

// strMap returns an object of strings; wrong types are errors.
func (c *entryCheck) strMap(key string, checkKey func(string) string) (map[string]string, map[string]jval) {
	v, ok := c.fields[key]
	if !ok {
		return nil, nil
	}
	if !v.isObject() {
		c.fail(key, v.off, "must be an object of strings, got %s", v.kind())
		return nil, nil
	}
	out := map[string]string{}
	at := map[string]jval{}
	for _, m := range v.members() {
		field := key + "." + m.key
		if checkKey != nil {
			if prob := checkKey(m.key); prob != "" {
				c.fail(field, m.keyOff, "%s", prob)
				continue
			}
		}
		s, isStr := m.val.str()
		if !isStr {
			c.fail(field, m.val.off, "must be a string, got %s", m.val.kind())
			continue
		}
		out[m.key] = s
		at[m.key] = m.val
	}
	return out, at
}

// strList returns an array of strings; wrong types are errors.
func (c *entryCheck) strList(key string) []string {
	v, ok := c.fields[key]
	if !ok {
		return nil
	}
	if !v.isArray() {
		c.fail(key, v.off, "must be an array of strings, got %s", v.kind())
		return nil
	}
	out := []string{}
	for i, e := range v.elems() {
		s, isStr := e.str()
		if !isStr {
			c.fail(fmt.Sprintf("%s[%d]", key, i), e.off, "must be a string, got %s", e.kind())
			continue
		}
		out = append(out, s)
	}
	return out
}

// boolean returns a bool field; a wrong type is a warning and def is used.
func (c *entryCheck) boolean(key string, def bool) bool {
	v, ok := c.fields[key]
	if !ok {
		return def
	}
	b, isBool := v.boolean()
	if !isBool {
		c.warn(key, v.off, "must be true or false, got %s; using the default (%t)", v.kind(), def)
		return def
	}
	return b
}

// millis parses a duration in milliseconds: a number >= 0, where 0 means
// NoTimeout when zeroDisables. Anything else is a warning and 0 (the default)
// is used.
func (c *entryCheck) millis(key string, zeroDisables bool) time.Duration {
	v, ok := c.fields[key]
	if !ok {
		return 0
	}
	d, prob := parseMillis(v)
	if prob != "" {
		c.warn(key, v.off, "%s; using the default", prob)
		return 0
	}
	if d == 0 && zeroDisables {
		return NoTimeout
	}
	return d
}

const maxMillis = float64(math.MaxInt64 / int64(time.Millisecond))

func parseMillis(v jval) (time.Duration, string) {
	f, isNum := v.number()
	switch {
	case !isNum:
		return 0, fmt.Sprintf("must be a number of milliseconds, got %s", v.kind())
	case f < 0:
		return 0, fmt.Sprintf("must not be negative, got %s", v.raw())
	case f > maxMillis:
		return 0, fmt.Sprintf("is too large, got %s", v.raw())
	}
	return time.Duration(f * float64(time.Millisecond)), ""
}

func envKeyProblem(k string) string {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return "environment variable names must be non-empty and contain no '=' or NUL"
	}
	return ""
}

// parseEntry validates one server entry and builds its Server; nil means the
// entry is invalid (every problem has been reported).
func (p *parser) parseEntry(name string, keyOff int, v jval) *Server {
	c := &entryCheck{p: p, name: name}
	if prob := nameProblem(name); prob != "" {
		c.fail("name", keyOff, "%s", prob)
		return nil
	}
	if !v.isObject() {
		c.fail("", v.off, "server entry must be an object, got %s", v.kind())
		return nil
	}
	if dups, total := duplicateKeys(v, maxDuplicateReports); total > 0 {
		for i, dk := range dups {
			msg := "duplicate key (" + p.duplicateMessage(dk, "the server is not loaded") + ")"
			if i == len(dups)-1 && total > len(dups) {
				msg += fmt.Sprintf(" (%d more duplicate keys in this entry)", total-len(dups))
			}
			c.fail(dk.field, dk.off, "%s", msg)
		}
		return nil
	}
	c.fields = map[string]jval{}
	for _, m := range v.members() {
		if string(m.val.raw()) == "null" {
			delete(c.fields, m.key) // null means absent
			continue
		}
		c.fields[m.key] = m.val
	}

	// Transport.
	var typ Transport
	typeOff := keyOff
	if t, ok := c.fields["type"]; ok {
		typeOff = t.off
		switch s, isStr := t.str(); {
		case !isStr:
			c.fail("type", t.off, "must be a string, got %s", t.kind())
		case s == "":
		case s == string(Stdio) || s == string(HTTP) || s == string(SSE):
			typ = Transport(s)
		default:
			c.fail("type", t.off, "unknown type %q (want stdio, http or sse)", s)
		}
	}
	command, _, hasCmd := c.str("command")
	rawURL, urlVal, hasURL := c.str("url")
	args := c.strList("args")
	env, envAt := c.strMap("env", envKeyProblem)
	cwd, _, _ := c.str("cwd")
	headers, headerAt := c.strMap("headers", nil)

	if hasCmd && hasURL {
		c.fail("url", urlVal.off, "cannot be used together with command (a server is either stdio, with command, or http/sse, with url)")
	}
	eff := typ
	if eff == "" && !hasCmd && hasURL {
		eff = HTTP // as other agents do: a url without a type is a remote server
	}
	if eff == "" {
		eff = Stdio
	}
	if !c.bad {
		switch {
		case eff == Stdio && !hasCmd:
			c.fail("command", typeOff, "required for stdio servers (stdio is the default type; set \"type\": \"http\" and \"url\" for a remote server)")
		case eff != Stdio && !hasURL:
			c.fail("url", typeOff, "required for %s servers", eff)
		}
	}

	// Auth.
	var auth *Auth
	if a, ok := c.fields["auth"]; ok {
		if !a.isObject() {
			c.fail("auth", a.off, "must be an object, got %s", a.kind())
		} else {
			auth = &Auth{}
			t, tok := a.get("type")
			ts, isStr := t.str()
			switch {
			case !tok:
				c.fail("auth.type", a.off, `required; the only supported type is "oauth"`)
			case !isStr:
				c.fail("auth.type", t.off, "must be a string, got %s", t.kind())
			case ts != "oauth":
				c.fail("auth.type", t.off, `unknown auth type %q (want "oauth")`, ts)
			default:
				auth.Type = ts
			}
			c.oauthFlow(a, auth)
			id, iok := a.get("credentialId")
			switch ids, isStr := id.str(); {
			case (!iok || string(id.raw()) == "null" || (isStr && ids == "")) && auth.Grant == "":
				c.warn("auth.credentialId", a.off, "missing; no OAuth token will be injected")
			case !iok || string(id.raw()) == "null" || (isStr && ids == ""):
			case !isStr:
				c.fail("auth.credentialId", id.off, "must be a string, got %s", id.kind())
			default:
				auth.CredentialID = ids
			}
		}
	}

	// mcplife fields.
	enabled := c.boolean("enabled", true)
	timeout := c.millis("timeout", true)
	toolTimeout := c.millis("toolTimeout", true)
	shared := c.boolean("shared", true)
	approval := c.boolean("requiresApproval", true)
	var restart RestartPolicy
	if s, v, ok := c.str("restart"); ok {
		switch r := RestartPolicy(s); r {
		case RestartRelentless, RestartOnce, RestartBounded, RestartNever:
			restart = r
		default:
			c.fail("restart", v.off, "unknown restart policy %q (want relentless, once, bounded or never)", s)
		}
	}
	var probe Probe
	if s, v, ok := c.str("healthProbe"); ok {
		switch pr := Probe(s); pr {
		case ProbePing, ProbeToolsList:
			probe = pr
		default:
			c.fail("healthProbe", v.off, "unknown health probe %q (want ping or tools-list)", s)
		}
	}
	var delays []time.Duration
	if v, ok := c.fields["restartDelays"]; ok {
		delays = c.delays(v)
	}
	var protocol string
	if v, ok := c.fields["protocolVersion"]; ok {
		if s, isStr := v.str(); isStr {
			protocol = s
		} else {
			c.warn("protocolVersion", v.off, "must be a string, got %s; using the runtime default", v.kind())
		}
	}
	var elicitation ElicitationMode
	if v, ok := c.fields["elicitation"]; ok {
		switch s, isStr := v.str(); {
		case !isStr:
			c.warn("elicitation", v.off, "must be a string, got %s; elicitation stays off", v.kind())
		case s == "" || ElicitationMode(s) == ElicitationOff:
		case ElicitationMode(s) == ElicitationDefaults:
			elicitation = ElicitationDefaults
		default:
			c.warn("elicitation", v.off, "unknown elicitation mode %q (want off or defaults); elicitation stays off", s)
		}
	}
	// Host-side handlers (runtime/host/handlers.go) beyond elicitation.
	sampling := c.boolean("sampling", false)
	progress := c.boolean("progress", false)
	resources := c.boolean("resources", false)
	prompts := c.boolean("prompts", false)
	var roots []Root
	if v, ok := c.fields["roots"]; ok {
		roots = c.rootList("roots", v, p.src.File) // roots.go
	}
	include := c.strList("includeTools")
	exclude := c.strList("excludeTools")
	var maxChars int
	if v, ok := c.fields["maxResultChars"]; ok {
		f, isNum := v.number()
		if !isNum || f != math.Trunc(f) || f <= 0 || f > math.MaxInt32 {
			c.warn("maxResultChars", v.off, "must be a whole number from 1 to 2147483647, got %s; using the default", v.raw())
		} else {
			maxChars = int(f)
		}
	}

	var maxMessage int
	if v, ok := c.fields["maxMessageBytes"]; ok {
		f, isNum := v.number()
		if !isNum || f != math.Trunc(f) || f < 1024 || f > 1<<30 {
			c.warn("maxMessageBytes", v.off, "must be a whole number of bytes from 1024 to 1073741824, got %s; using the default", v.raw())
		} else {
			maxMessage = int(f)
		}
	}

	var stderrLimit int
	if v, ok := c.fields["stderrLimit"]; ok {
		f, isNum := v.number()
		if !isNum || f != math.Trunc(f) || f < MinStderrLimit || f > MaxStderrLimit {
			c.warn("stderrLimit", v.off, "must be a whole number of bytes from %d to %d, got %s; using the default", MinStderrLimit, MaxStderrLimit, v.raw())
		} else {
			stderrLimit = int(f)
		}
	}

	if c.bad {
		return nil
	}

	// ${VAR} expansion. The process environment serves command, args, cwd and
	// env values. A project file's url and header values expand only from the
	// entry's own env block as written, so a cloned repository cannot send the
	// user's secrets to a server of its choosing.
	procEnv := p.env
	netEnv := procEnv
	if p.src.Level == LevelProject {
		netEnv = mapLookup(env)
	}
	expand := func(s string, lookup func(string) (string, bool)) string {
		if p.noExpand {
			return s
		}
		return Expand(s, lookup)
	}
	// Values starting with "!" are shell commands for the Resolver: the shell
	// expands them, not us; and expansion must not create one.
	expandValue := func(field string, at jval, s string, lookup func(string) (string, bool)) string {
		if strings.HasPrefix(s, "!") {
			return s
		}
		x := expand(s, lookup)
		if strings.HasPrefix(x, "!") {
			c.warn(field, at.off, "expanding ${...} would turn this value into a shell command; it is left unexpanded")
			return s
		}
		return x
	}

	s := &Server{
		Name:             name,
		Type:             typ,
		Command:          expand(command, procEnv),
		Cwd:              expand(cwd, procEnv),
		URL:              expand(rawURL, netEnv),
		Auth:             auth,
		Enabled:          enabled,
		Timeout:          timeout,
		ToolTimeout:      toolTimeout,
		Shared:           shared,
		Restart:          restart,
		RestartDelays:    delays,
		Probe:            probe,
		ProtocolVersion:  protocol,
		Elicitation:      elicitation,
		Sampling:         sampling,
		Progress:         progress,
		Resources:        resources,
		Prompts:          prompts,
		Roots:            roots,
		IncludeTools:     include,
		ExcludeTools:     exclude,
		MaxResultChars:   maxChars,
		MaxMessageBytes:  maxMessage,
		StderrLimit:      stderrLimit,
		RequiresApproval: approval,
		Source:           p.src,
		Raw:              bytes.Clone(v.raw()),
	}
	if typ == "" && eff == HTTP {
		s.Type = HTTP
	}
	for _, a := range args {
		s.Args = append(s.Args, expand(a, procEnv))
	}
	if env != nil {
		s.Env = make(map[string]string, len(env))
		for k, val := range env {
			s.Env[k] = expandValue("env."+k, envAt[k], val, procEnv)
		}
	}
	if headers != nil {
		s.Headers = make(map[string]string, len(headers))
		for k, val := range headers {
			s.Headers[k] = expandValue("headers."+k, headerAt[k], val, netEnv)
		}
	}
	if hasURL && eff != Stdio {
		if prob := urlProblem(s.URL, p.noExpand); prob != "" {
			c.fail("url", urlVal.off, "%s", prob)
			return nil
		}
	}
	return s
}

func (c *entryCheck) delays(v jval) []time.Duration {
	if !v.isArray() {
		c.warn("restartDelays", v.off, "must be an array of milliseconds, got %s; using the policy's delays", v.kind())
		return nil
	}
	es := v.elems()
	if len(es) == 0 {
		c.warn("restartDelays", v.off, "must not be empty; using the policy's delays")
		return nil
	}
	out := make([]time.Duration, 0, len(es))
	for i, e := range es {
		d, prob := parseMillis(e)
		if prob != "" {
			c.warn(fmt.Sprintf("restartDelays[%d]", i), e.off, "%s; using the policy's delays", prob)
			return nil
		}
		out = append(out, d)
	}
	return out
}

func urlProblem(s string, asWritten bool) string {
	if asWritten && strings.Contains(s, "${") {
		return "" // checked after expansion, at discovery
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		if strings.Contains(s, "${") {
			return "must be an absolute http or https URL (it contains an unresolved ${...} reference)"
		}
		return "must be an absolute http or https URL"
	}
	return ""
}
