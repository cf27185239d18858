package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/mcplife/mcplife/internal/redact"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/scenarios/repro"
)

// A trace is meant to be shared (attached to a bug report, committed next
// to a scenario), so harness record keeps the secrets of the session out of
// it. What counts as a secret of a server:
//
//   - the value of every ${VAR} its command, args, env, cwd, url or headers
//     refer to (marker "${VAR}");
//   - the value of a variable that an env or header value names (the
//     Resolver's lookup by name; marker "${NAME}");
//   - every header value, and the token after its scheme ("Bearer t");
//     every value of the url's query and its password (markers
//     "[redacted:header.NAME]", "[redacted:query.NAME]",
//     "[redacted:url-password]");
//   - env values written literally under a name that says secret (TOKEN,
//     KEY, SECRET, PASS, AUTH, CREDENTIAL, COOKIE, SESSION; marker
//     "[redacted:env.NAME]").
//
// Values shorter than redact.MinLen are not searched for in free text.
// What a "!command" prints and OAuth tokens are not known to record; the
// runtime never puts them in events, but a server could echo them.

// secretEnvName matches env names whose literal values are secrets.
var secretEnvName = regexp.MustCompile(`(?i)TOKEN|KEY|SECRET|PASS|AUTH|CREDENTIAL|COOKIE|SESSION`)

// onlyRefs matches a value made of ${VAR} references alone.
var onlyRefs = regexp.MustCompile(`^(\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\})+$`)

// asWritten is what record reads of a server's raw config.
type asWritten struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// traceSecrets collects the secrets of servers, whose ${VAR} references
// were expanded through lookup.
func traceSecrets(servers []*config.Server, lookup func(string) (string, bool)) *redact.Set {
	set := &redact.Set{}
	for _, srv := range servers {
		var w asWritten
		_ = json.Unmarshal(srv.Raw, &w) // a server that loaded has these types
		written := append([]string{w.Command, w.Cwd, w.URL}, w.Args...)
		for _, m := range []map[string]string{w.Env, w.Headers} {
			for _, v := range m {
				written = append(written, v)
			}
		}
		for _, s := range written {
			for _, name := range config.References(s) {
				if v, ok := lookup(name); ok {
					set.Add(v, "${"+name+"}")
				}
			}
		}
		byName := func(v string) {
			if x, ok := lookup(v); ok && x != "" && !strings.HasPrefix(v, "!") {
				set.Add(x, "${"+v+"}")
			}
		}
		for k, v := range srv.Env {
			byName(v)
			if secretEnvName.MatchString(k) && !strings.HasPrefix(v, "!") {
				set.Add(v, "[redacted:env."+k+"]")
			}
		}
		for k, v := range srv.Headers {
			byName(v)
			if strings.HasPrefix(v, "!") {
				continue
			}
			set.Add(v, "[redacted:header."+k+"]")
			if _, token, ok := strings.Cut(v, " "); ok {
				set.Add(strings.TrimSpace(token), "[redacted:header."+k+"]")
			}
		}
		if u, err := url.Parse(srv.URL); err == nil {
			if pw, ok := u.User.Password(); ok {
				set.Add(pw, "[redacted:url-password]")
			}
			for k, vs := range u.Query() {
				for _, v := range vs {
					set.Add(v, "[redacted:query."+k+"]")
				}
			}
		}
	}
	return set
}

// writtenCommand is a stdio server's command line for the trace: as
// written in the config (${VAR} references unexpanded), with any known
// secret written there literally replaced.
func writtenCommand(srv *config.Server, set *redact.Set) []string {
	var w asWritten
	_ = json.Unmarshal(srv.Raw, &w)
	cmd := []string{set.String(w.Command)}
	for _, a := range w.Args {
		cmd = append(cmd, set.String(a))
	}
	return cmd
}

// writtenURL is a remote server's url for the trace: as written in the
// config, its password and every query value that is not ${VAR}
// references alone replaced by a marker naming it.
func writtenURL(srv *config.Server, set *redact.Set) string {
	var w asWritten
	_ = json.Unmarshal(srv.Raw, &w)
	raw := w.URL
	if at := strings.Index(raw, "@"); at >= 0 {
		if scheme := strings.Index(raw, "://"); scheme >= 0 && scheme < at {
			if colon := strings.Index(raw[scheme+3:at], ":"); colon >= 0 {
				raw = raw[:scheme+3+colon+1] + "[redacted:url-password]" + raw[at:]
			}
		}
	}
	base, query, hasQuery := strings.Cut(raw, "?")
	if !hasQuery {
		return set.String(raw)
	}
	query, frag, hasFrag := strings.Cut(query, "#")
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok || v == "" || onlyRefs.MatchString(v) {
			continue
		}
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		parts[i] = k + "=[redacted:query." + name + "]"
	}
	out := base + "?" + strings.Join(parts, "&")
	if hasFrag {
		out += "#" + frag
	}
	return set.String(out)
}

// redactTrace replaces every secret of set in tr: in every string of the
// trace (call texts and arguments, event attributes, journal lines).
func redactTrace(tr *repro.Trace, set *redact.Set) (*repro.Trace, error) {
	if set.Len() == 0 {
		return tr, nil
	}
	data, err := json.Marshal(tr)
	if err != nil {
		return nil, fmt.Errorf("redact the trace: %w", err)
	}
	var out repro.Trace
	if err := json.Unmarshal(set.JSON(data), &out); err != nil {
		return nil, fmt.Errorf("redact the trace: %w", err)
	}
	return &out, nil
}
