package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Resolver turns a Server into what a connection needs, just before
// connecting: header and env values resolved, OAuth token injected, the stdio
// child's environment built, and the trust gate applied.
//
// Each header and env value resolves as follows:
//
//   - "!command" runs `sh -c command` and uses its trimmed stdout. Output is
//     cached per command string for the Resolver's life (ClearCache forgets
//     it); concurrent requests for one command share one run. A command that
//     fails or prints nothing leaves the value unresolved: it is dropped with
//     a warning Diagnostic naming server and key. Commands are honoured only
//     from user-level or inline config, or when Trusted; otherwise the value
//     is dropped with a warning (ErrUntrusted).
//   - otherwise the value is looked up as an environment variable name, and
//     the variable's value is used when it is set and non-empty. For a
//     project-level server's headers the lookup sees only the server's own
//     env block as written in the file, never the process environment, so a
//     cloned repository cannot send the user's secrets anywhere.
//   - otherwise the value is used literally.
//
// A project-level stdio server is not resolved at all until the workspace is
// trusted: Resolved.Blocked says why, and no command runs. OAuth tokens are
// not injected into project-level servers of an untrusted workspace either.
//
// The zero value is ready to use. A Resolver is safe for concurrent use and
// must not be copied after first use.
type Resolver struct {
	// Env looks up the process environment; nil means os.LookupEnv.
	Env func(string) (string, bool)
	// Trusted says the user trusts the workspace: project-level stdio servers
	// may start and project-level "!command" values may run.
	Trusted bool
	// Credentials supplies OAuth tokens; nil means none are available.
	Credentials CredentialStore
	// Shell runs a "!command" and returns its stdout; nil means `sh -c`.
	Shell func(ctx context.Context, command string) (string, error)

	mu   sync.Mutex
	runs map[string]*shellRun
}

type shellRun struct {
	done chan struct{}
	out  string
	err  error
}

// Resolved is a server ready to connect.
type Resolved struct {
	Server *Server
	// Headers are the final HTTP headers (http and sse servers; nil for stdio).
	Headers map[string]string
	// Env is the stdio child's complete environment, KEY=VALUE sorted by key
	// (see ChildEnv); nil for http and sse servers.
	Env []string
	// Blocked, when not "", is why the server must not be connected; the
	// caller shows status "blocked". Headers and Env are then nil.
	Blocked string
	// ClientSecret is the resolved auth.clientSecret of an OAuth flow; ""
	// when none is configured or it could not be resolved (a warning says
	// why). It is a secret: never log it.
	ClientSecret string
}

// OAuthEnvVar is the variable that carries an OAuth access token to a stdio
// server.
const OAuthEnvVar = "OAUTH_ACCESS_TOKEN"

// Resolve resolves s. The diagnostics are warnings about values that were
// dropped or credentials that were not injected; the server can still be
// connected unless Blocked is set. ctx bounds shell commands and credential
// lookups.
func (r *Resolver) Resolve(ctx context.Context, s *Server) (*Resolved, []Diagnostic) {
	res := &Resolved{Server: s}
	typ := s.EffectiveType()
	project := s.Source.Level == LevelProject
	if typ == Stdio && project && !r.Trusted {
		res.Blocked = fmt.Sprintf("stdio server %q from project config %s is blocked: workspace is not trusted", s.Name, s.Source.File)
		return res, nil
	}
	lookup := r.Env
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var diags []Diagnostic
	warn := func(field string, err error, format string, args ...any) {
		diags = append(diags, Diagnostic{
			Severity: SeverityWarning, File: s.Source.File, Server: s.Name, Field: field,
			Message: fmt.Sprintf(format, args...), Err: err,
		})
	}
	allowCmd := !project || r.Trusted
	value := func(field, v string, names func(string) (string, bool)) (string, bool) {
		if command, ok := strings.CutPrefix(v, "!"); ok {
			if !allowCmd {
				warn(field, ErrUntrusted, "shell command from project config not run: workspace is not trusted; value dropped")
				return "", false
			}
			out, err := r.run(ctx, command)
			if err != nil {
				warn(field, fmt.Errorf("%w: %w", ErrUnresolved, err), "shell command %q failed: %v; value dropped", command, err)
				return "", false
			}
			return out, true
		}
		if x, ok := names(v); ok && x != "" {
			return x, true
		}
		return v, true
	}

	res.ClientSecret = r.clientSecret(ctx, s, project, allowCmd, lookup, warn)
	token, hasToken := r.token(ctx, s, project, warn)
	switch typ {
	case Stdio:
		own := make(map[string]string, len(s.Env)+1)
		for _, k := range sortedKeys(s.Env) {
			if v, ok := value("env."+k, s.Env[k], lookup); ok {
				own[k] = v
			}
		}
		if hasToken {
			own[OAuthEnvVar] = token
		}
		res.Env = ChildEnv(lookup, own)
	default:
		names := lookup
		if project {
			names = mapLookup(literalEnv(s))
		}
		res.Headers = make(map[string]string, len(s.Headers)+1)
		for _, k := range sortedKeys(s.Headers) {
			if v, ok := value("headers."+k, s.Headers[k], names); ok {
				res.Headers[k] = v
			}
		}
		if hasToken {
			for k := range res.Headers {
				if strings.EqualFold(k, "Authorization") {
					delete(res.Headers, k)
				}
			}
			res.Headers["Authorization"] = "Bearer " + token
		}
	}
	return res, diags
}

// clientSecret resolves auth.clientSecret: an environment variable, or a
// "!command" where commands are allowed. Project-level servers of an
// untrusted workspace get no secret.
func (r *Resolver) clientSecret(ctx context.Context, s *Server, project, allowCmd bool, lookup func(string) (string, bool), warn func(string, error, string, ...any)) string {
	if s.Auth == nil || s.Auth.Grant == "" || s.Auth.ClientSecret == "" {
		return ""
	}
	name, command, ok := SecretRef(s.Auth.ClientSecret)
	switch {
	case !ok:
		warn("auth.clientSecret", ErrUnresolved, "not an environment variable name or !command; no client secret used")
		return ""
	case project && !r.Trusted:
		warn("auth.clientSecret", ErrUntrusted, "OAuth client secret not resolved for a project-level server: workspace is not trusted")
		return ""
	case command != "" && !allowCmd:
		warn("auth.clientSecret", ErrUntrusted, "shell command from project config not run: workspace is not trusted; no client secret used")
		return ""
	case command != "":
		out, err := r.run(ctx, command)
		if err != nil || out == "" {
			warn("auth.clientSecret", fmt.Errorf("%w: %v", ErrUnresolved, err), "shell command for the client secret failed or printed nothing; no client secret used")
			return ""
		}
		return out
	}
	v, set := lookup(name)
	if !set || v == "" {
		warn("auth.clientSecret", ErrUnresolved, "environment variable %s is not set; no client secret used", name)
		return ""
	}
	return v
}

// token fetches the server's OAuth token, if it has an oauth auth block.
func (r *Resolver) token(ctx context.Context, s *Server, project bool, warn func(string, error, string, ...any)) (string, bool) {
	if s.Auth == nil || s.Auth.Type != "oauth" || s.Auth.CredentialID == "" {
		return "", false
	}
	id := s.Auth.CredentialID
	switch {
	case project && !r.Trusted:
		warn("auth.credentialId", ErrUntrusted, "OAuth credential %q not injected into a project-level server: workspace is not trusted", id)
		return "", false
	case r.Credentials == nil:
		warn("auth.credentialId", ErrCredentialNotFound, "OAuth credential %q not injected: no credential store is configured", id)
		return "", false
	}
	tok, err := r.Credentials.Token(ctx, id)
	switch {
	case err != nil:
		warn("auth.credentialId", err, "OAuth credential %q not injected: %v; connecting without it", id, err)
		return "", false
	case tok == "":
		warn("auth.credentialId", ErrCredentialNotFound, "OAuth credential %q is empty; connecting without it", id)
		return "", false
	}
	return tok, true
}

// ClearCache forgets the output of every "!command" run so far, so the next
// Resolve runs them again (for a reload after the user fixed a secret).
func (r *Resolver) ClearCache() {
	r.mu.Lock()
	r.runs = nil
	r.mu.Unlock()
}

// run runs a shell command once per command string; a failed run is not
// cached, so the next Resolve tries again.
func (r *Resolver) run(ctx context.Context, command string) (string, error) {
	r.mu.Lock()
	if r.runs == nil {
		r.runs = map[string]*shellRun{}
	}
	if f, ok := r.runs[command]; ok {
		r.mu.Unlock()
		select {
		case <-f.done:
			return f.out, f.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f := &shellRun{done: make(chan struct{})}
	r.runs[command] = f
	r.mu.Unlock()

	shell := r.Shell
	if shell == nil {
		shell = runShell
	}
	out, err := shell(ctx, command)
	out = strings.TrimSpace(out)
	if err == nil && out == "" {
		err = errors.New("it printed nothing")
	}
	if err != nil {
		out = ""
		r.mu.Lock()
		if r.runs[command] == f {
			delete(r.runs, command)
		}
		r.mu.Unlock()
	}
	f.out, f.err = out, err
	close(f.done)
	return out, err
}

// maxStderrLine bounds the bytes of a failing command's stderr line that
// its error carries.
const maxStderrLine = 200

// cutLine returns line cut to at most n bytes, at a rune boundary, with
// "..." appended when it was cut.
func cutLine(line string, n int) string {
	if len(line) <= n {
		return line
	}
	for n > 0 && !utf8.RuneStart(line[n]) {
		n--
	}
	return line[:n] + "..."
}

// runShell runs command with `sh -c`; stdin is empty, stdout is returned.
func runShell(ctx context.Context, command string) (string, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.WaitDelay = time.Second // a background child holding stdout cannot hang us
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if line, _, _ := strings.Cut(strings.TrimSpace(string(ee.Stderr)), "\n"); line != "" {
				line = cutLine(line, maxStderrLine)
				err = fmt.Errorf("%w: %s", err, line)
			}
		}
		return "", err
	}
	return string(out), nil
}

// literalEnv is the server's env block as written in the file, before any
// expansion or resolution: the only names a project-level server's headers
// may refer to.
func literalEnv(s *Server) map[string]string {
	if len(s.Raw) == 0 {
		return s.Env
	}
	data := blankJSONC(s.Raw)
	if checkJSON(data) != nil {
		return nil
	}
	top := topValue(data)
	envBlock, ok := top.get("env")
	if !top.isObject() || !ok {
		return nil
	}
	m := map[string]string{}
	for _, mem := range envBlock.members() {
		if v, isStr := mem.val.str(); isStr {
			m[mem.key] = v
		}
	}
	return m
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
