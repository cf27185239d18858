package config

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

// fakeShell counts calls per command and answers from a table.
type fakeShell struct {
	mu    sync.Mutex
	calls map[string]int
	out   map[string]string
	fail  map[string]error
}

func newFakeShell(out map[string]string) *fakeShell {
	return &fakeShell{calls: map[string]int{}, out: out, fail: map[string]error{}}
}

func (f *fakeShell) run(ctx context.Context, cmd string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[cmd]++
	if err := f.fail[cmd]; err != nil {
		return "", err
	}
	return f.out[cmd], nil
}

func (f *fakeShell) count(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[cmd]
}

func (f *fakeShell) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

func httpServer(level Level, headers map[string]string) *Server {
	return &Server{Name: "h", Type: HTTP, URL: "https://h.example", Headers: headers, Source: Source{File: "/cfg/" + string(level) + ".json", Level: level}}
}

func stdioServer(level Level, env map[string]string) *Server {
	return &Server{Name: "s", Command: "srv", Env: env, Source: Source{File: "/p/.mcp.json", Level: level}}
}

func TestResolveShellCommands(t *testing.T) {
	ctx := context.Background()
	sh := newFakeShell(map[string]string{"get-token": "  tok-123\n", "blank": " \n"})
	sh.fail["broken"] = errors.New("exit status 1")
	r := &Resolver{Env: envOf(), Shell: sh.run}
	s := httpServer(LevelUser, map[string]string{"Authorization": "!get-token", "X-Broken": "!broken", "X-Blank": "!blank", "X-Plain": "plain"})

	res, diags := r.Resolve(ctx, s)
	if res.Blocked != "" {
		t.Fatal(res.Blocked)
	}
	want := map[string]string{"Authorization": "tok-123", "X-Plain": "plain"}
	if fmt.Sprint(res.Headers) != fmt.Sprint(want) {
		t.Errorf("headers %v", res.Headers)
	}
	if len(diags) != 2 {
		t.Fatalf("diagnostics:\n%s", diagStrings(diags))
	}
	for _, field := range []string{"headers.X-Blank", "headers.X-Broken"} {
		ds := findDiag(diags, "h", field)
		if len(ds) != 1 || ds[0].Severity != SeverityWarning || !strings.Contains(ds[0].Message, "value dropped") {
			t.Errorf("%s: %s", field, diagStrings(diags))
			continue
		}
		mustIs(t, &ds[0], ErrUnresolved)
		if !strings.Contains(ds[0].Error(), `server "h": `+field) {
			t.Errorf("Error() = %q", ds[0].Error())
		}
	}

	// Cached per command: a second Resolve and another server reuse the output;
	// failures are retried.
	other := httpServer(LevelUser, map[string]string{"X-Token": "!get-token"})
	if res, _ := r.Resolve(ctx, other); res.Headers["X-Token"] != "tok-123" {
		t.Errorf("other %v", res.Headers)
	}
	r.Resolve(ctx, s)
	if n := sh.count("get-token"); n != 1 {
		t.Errorf("get-token ran %d times", n)
	}
	if n := sh.count("broken"); n != 2 {
		t.Errorf("broken ran %d times, want 2 (failures are not cached)", n)
	}
	r.ClearCache()
	r.Resolve(ctx, other)
	if n := sh.count("get-token"); n != 2 {
		t.Errorf("after ClearCache get-token ran %d times", n)
	}
}

func TestResolveShellSingleFlight(t *testing.T) {
	var calls atomic.Int32
	started := make(chan struct{})
	release := make(chan struct{})
	r := &Resolver{Env: envOf(), Shell: func(ctx context.Context, cmd string) (string, error) {
		if calls.Add(1) == 1 {
			close(started)
		}
		<-release
		return "shared", nil
	}}
	var wg sync.WaitGroup
	results := make([]string, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _ := r.Resolve(context.Background(), httpServer(LevelUser, map[string]string{"T": "!op read x"}))
			results[i] = res.Headers["T"]
		}()
	}
	<-started
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("command ran %d times", calls.Load())
	}
	for i, v := range results {
		if v != "shared" {
			t.Errorf("result %d = %q", i, v)
		}
	}
}

func TestResolveShellWaiterCancelled(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	r := &Resolver{Env: envOf(), Shell: func(ctx context.Context, cmd string) (string, error) {
		close(started)
		<-release
		return "v", nil
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Resolve(context.Background(), httpServer(LevelUser, map[string]string{"T": "!slow"}))
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, diags := r.Resolve(ctx, httpServer(LevelUser, map[string]string{"T": "!slow"}))
	if _, ok := res.Headers["T"]; ok || len(diags) != 1 || !errors.Is(&diags[0], context.Canceled) {
		t.Errorf("cancelled waiter: %v\n%s", res.Headers, diagStrings(diags))
	}
	close(release)
	<-done
}

func TestResolveProjectCommandsNeedTrust(t *testing.T) {
	ctx := context.Background()
	sh := newFakeShell(map[string]string{"cat secret": "s"})
	headers := map[string]string{"X-Secret": "!cat secret"}

	r := &Resolver{Env: envOf(), Shell: sh.run}
	res, diags := r.Resolve(ctx, httpServer(LevelProject, headers))
	if _, ok := res.Headers["X-Secret"]; ok || sh.total() != 0 {
		t.Errorf("untrusted project command ran: %v", res.Headers)
	}
	if len(diags) != 1 || diags[0].Field != "headers.X-Secret" || diags[0].Severity != SeverityWarning || !errors.Is(&diags[0], ErrUntrusted) {
		t.Errorf("diagnostics:\n%s", diagStrings(diags))
	}

	for _, tc := range []struct {
		level   Level
		trusted bool
	}{{LevelProject, true}, {LevelUser, false}, {LevelInline, false}} {
		r := &Resolver{Env: envOf(), Shell: sh.run, Trusted: tc.trusted}
		res, diags := r.Resolve(ctx, httpServer(tc.level, headers))
		if res.Headers["X-Secret"] != "s" || len(diags) != 0 {
			t.Errorf("%s trusted=%v: %v %s", tc.level, tc.trusted, res.Headers, diagStrings(diags))
		}
	}
}

func TestResolveValueLookup(t *testing.T) {
	ctx := context.Background()
	proc := envOf("MY_TOKEN", "from-env", "API_KEY", "sk-secret", "EMPTY_VAR", "", "PATH", "/bin")
	r := &Resolver{Env: proc, Shell: newFakeShell(nil).run}

	// User level: env-name lookup in the process env, else literal.
	res, _ := r.Resolve(ctx, httpServer(LevelUser, map[string]string{"A": "MY_TOKEN", "B": "application/json", "C": "EMPTY_VAR"}))
	if want := map[string]string{"A": "from-env", "B": "application/json", "C": "EMPTY_VAR"}; fmt.Sprint(res.Headers) != fmt.Sprint(want) {
		t.Errorf("user headers %v", res.Headers)
	}

	// Project level: header names resolve only from the server's own env block.
	s := httpServer(LevelProject, map[string]string{"X-Key": "API_KEY", "X-Local": "LOCAL"})
	res, _ = r.Resolve(ctx, s)
	if res.Headers["X-Key"] != "API_KEY" || res.Headers["X-Local"] != "LOCAL" {
		t.Errorf("project headers reached the process env: %v", res.Headers)
	}
	s.Raw = []byte(`{"type": "http", "url": "https://h.example", "env": {"LOCAL": "mine", "RELAY": "API_KEY"}, "headers": {"X-Key": "API_KEY", "X-Local": "LOCAL", "X-Relay": "RELAY"}}`)
	s.Env = map[string]string{"LOCAL": "mine", "RELAY": "API_KEY"}
	s.Headers["X-Relay"] = "RELAY"
	res, _ = r.Resolve(ctx, s)
	if res.Headers["X-Local"] != "mine" || res.Headers["X-Key"] != "API_KEY" || res.Headers["X-Relay"] != "API_KEY" {
		t.Errorf("project headers with env block: %v", res.Headers)
	}

	// Parsed from a project file: the env value expands from the process at
	// discovery, but a header naming that variable sees it only as written.
	parsed, pdiags := ParseFile("/p/.mcp.json", []byte(fileWith("h", `{"type": "http", "url": "https://h.example",
		"env": {"RELAY": "${API_KEY}", "LOCAL": "mine"}, "headers": {"X-Relay": "RELAY", "X-Local": "LOCAL"}}`)), LevelProject, "claude", proc)
	if len(parsed) != 1 || len(pdiags) != 0 || parsed[0].Env["RELAY"] != "sk-secret" {
		t.Fatalf("parse: %+v %s", parsed, diagStrings(pdiags))
	}
	res, _ = r.Resolve(ctx, parsed[0])
	if res.Headers["X-Relay"] != "${API_KEY}" || res.Headers["X-Local"] != "mine" {
		t.Errorf("project headers reached the process env through the env block: %v", res.Headers)
	}
	// Built in code (no Raw): the env block is the one given.
	s = httpServer(LevelProject, map[string]string{"X-Local": "LOCAL"})
	s.Env = map[string]string{"LOCAL": "mine"}
	res, _ = r.Resolve(ctx, s)
	if res.Headers["X-Local"] != "mine" {
		t.Errorf("project headers without Raw: %v", res.Headers)
	}

	// Env values (stdio): process lookup, then literal.
	res, diags := r.Resolve(ctx, stdioServer(LevelUser, map[string]string{"TOKEN": "MY_TOKEN", "MODE": "production"}))
	if len(diags) != 0 || res.Headers != nil {
		t.Fatalf("%v %s", res.Headers, diagStrings(diags))
	}
	if !slices.Contains(res.Env, "TOKEN=from-env") || !slices.Contains(res.Env, "MODE=production") || !slices.Contains(res.Env, "PATH=/bin") {
		t.Errorf("env %v", res.Env)
	}
}

func TestResolveTrustGate(t *testing.T) {
	ctx := context.Background()
	sh := newFakeShell(map[string]string{"tok": "t"})
	s := stdioServer(LevelProject, map[string]string{"T": "!tok"})
	s.Name = "x"
	r := &Resolver{Env: envOf("PATH", "/bin"), Shell: sh.run}
	res, diags := r.Resolve(ctx, s)
	if want := `stdio server "x" from project config /p/.mcp.json is blocked: workspace is not trusted`; res.Blocked != want {
		t.Errorf("Blocked = %q", res.Blocked)
	}
	if res.Env != nil || len(diags) != 0 || sh.total() != 0 || res.Server != s {
		t.Errorf("blocked server was resolved: %+v %v", res, diags)
	}

	r.Trusted = true
	res, diags = r.Resolve(ctx, s)
	if res.Blocked != "" || !slices.Equal(res.Env, []string{"PATH=/bin", "T=t"}) || len(diags) != 0 {
		t.Errorf("trusted: %+v %s", res, diagStrings(diags))
	}

	// Remote project servers and user-level stdio servers are never blocked.
	for _, s := range []*Server{httpServer(LevelProject, nil), stdioServer(LevelUser, nil), stdioServer(LevelInline, nil)} {
		if res, _ := (&Resolver{Env: envOf()}).Resolve(ctx, s); res.Blocked != "" {
			t.Errorf("%s %s blocked", s.Source.Level, s.EffectiveType())
		}
	}
}

func TestChildEnv(t *testing.T) {
	proc := envOf("PATH", "/usr/bin", "HOME", "/home/u", "LANG", "C.UTF-8", "ANTHROPIC_API_KEY", "sk-ant",
		"AWS_SECRET_ACCESS_KEY", "aws", "GITHUB_TOKEN", "ghp", "HTTPS_PROXY", "http://u:p@proxy", "TMPDIR", "/tmp")
	got := ChildEnv(proc, map[string]string{"HOME": "/override", "GITHUB_TOKEN": "passed-on-purpose", "A0": "x"})
	want := []string{"A0=x", "GITHUB_TOKEN=passed-on-purpose", "HOME=/override", "LANG=C.UTF-8", "PATH=/usr/bin", "TMPDIR=/tmp"}
	if !slices.Equal(got, want) {
		t.Errorf("ChildEnv = %v\nwant %v", got, want)
	}
	for _, kv := range got {
		if strings.Contains(kv, "sk-ant") || strings.Contains(kv, "aws") || strings.Contains(kv, "proxy") {
			t.Errorf("secret leaked: %s", kv)
		}
	}

	// Through the Resolver, with the real process environment as the source.
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-process")
	t.Setenv("PATH", "/test/bin")
	res, _ := (&Resolver{}).Resolve(context.Background(), stdioServer(LevelUser, map[string]string{"OWN": "1"}))
	if slices.ContainsFunc(res.Env, func(kv string) bool { return strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") }) {
		t.Errorf("ANTHROPIC_API_KEY reached the child: %v", res.Env)
	}
	if !slices.Contains(res.Env, "PATH=/test/bin") || !slices.Contains(res.Env, "OWN=1") {
		t.Errorf("env %v", res.Env)
	}

	list := EnvAllowlist()
	if !slices.IsSorted(list) || !slices.Contains(list, "PATH") || !slices.Contains(list, "XDG_RUNTIME_DIR") || slices.Contains(list, "ANTHROPIC_API_KEY") {
		t.Errorf("EnvAllowlist = %v", list)
	}
	list[0] = "MUTATED"
	if EnvAllowlist()[0] == "MUTATED" {
		t.Error("EnvAllowlist returns shared storage")
	}
}

type fakeCreds map[string]string

func (f fakeCreds) Token(_ context.Context, id string) (string, error) {
	if tok, ok := f[id]; ok {
		return tok, nil
	}
	return "", fmt.Errorf("credential %q: %w", id, ErrCredentialNotFound)
}

func TestResolveOAuth(t *testing.T) {
	ctx := context.Background()
	creds := fakeCreds{"gh": "oauth-tok"}
	withAuth := func(s *Server, id string) *Server {
		s.Auth = &Auth{Type: "oauth", CredentialID: id}
		return s
	}

	r := &Resolver{Env: envOf(), Credentials: creds}
	res, diags := r.Resolve(ctx, withAuth(httpServer(LevelUser, map[string]string{"authorization": "old", "X": "y"}), "gh"))
	if want := map[string]string{"Authorization": "Bearer oauth-tok", "X": "y"}; fmt.Sprint(res.Headers) != fmt.Sprint(want) || len(diags) != 0 {
		t.Errorf("http: %v %s", res.Headers, diagStrings(diags))
	}
	sse := withAuth(httpServer(LevelUser, nil), "gh")
	sse.Type = SSE
	if res, _ := r.Resolve(ctx, sse); res.Headers["Authorization"] != "Bearer oauth-tok" {
		t.Errorf("sse: %v", res.Headers)
	}
	res, _ = r.Resolve(ctx, withAuth(stdioServer(LevelUser, nil), "gh"))
	if !slices.Contains(res.Env, OAuthEnvVar+"=oauth-tok") {
		t.Errorf("stdio env %v", res.Env)
	}

	// Missing credential, or no store: a warning, and the server still resolves.
	for _, r := range []*Resolver{{Env: envOf(), Credentials: creds}, {Env: envOf()}} {
		res, diags := r.Resolve(ctx, withAuth(httpServer(LevelUser, nil), "missing"))
		if _, ok := res.Headers["Authorization"]; ok || res.Blocked != "" {
			t.Errorf("missing: %v", res.Headers)
		}
		if len(diags) != 1 || diags[0].Severity != SeverityWarning || diags[0].Field != "auth.credentialId" || !errors.Is(&diags[0], ErrCredentialNotFound) {
			t.Errorf("diagnostics:\n%s", diagStrings(diags))
		}
	}

	// A project-level server in an untrusted workspace gets no token.
	res, diags = r.Resolve(ctx, withAuth(httpServer(LevelProject, nil), "gh"))
	if _, ok := res.Headers["Authorization"]; ok || len(diags) != 1 || !errors.Is(&diags[0], ErrUntrusted) {
		t.Errorf("untrusted project: %v %s", res.Headers, diagStrings(diags))
	}
	r.Trusted = true
	if res, _ := r.Resolve(ctx, withAuth(httpServer(LevelProject, nil), "gh")); res.Headers["Authorization"] != "Bearer oauth-tok" {
		t.Errorf("trusted project: %v", res.Headers)
	}
}

func TestResolveDefaultShell(t *testing.T) {
	r := &Resolver{Env: envOf()}
	s := httpServer(LevelUser, map[string]string{"A": "!printf '  hello\\n'", "B": "!echo oops >&2; exit 3", "C": "!true"})
	res, diags := r.Resolve(context.Background(), s)
	if res.Headers["A"] != "hello" || len(res.Headers) != 1 {
		t.Errorf("headers %v", res.Headers)
	}
	if b := findDiag(diags, "h", "headers.B"); len(b) != 1 || !strings.Contains(b[0].Message, "exit status 3: oops") {
		t.Errorf("B:\n%s", diagStrings(diags))
	}
	if c := findDiag(diags, "h", "headers.C"); len(c) != 1 || !strings.Contains(c[0].Message, "printed nothing") {
		t.Errorf("C:\n%s", diagStrings(diags))
	}

	// The warning quotes the first stderr line, up to 200 bytes, and marks a
	// longer one as cut.
	for _, n := range []int{199, 200, 201} {
		line := strings.Repeat("e", n)
		res, diags = (&Resolver{Env: envOf()}).Resolve(context.Background(), httpServer(LevelUser, map[string]string{"L": "!echo " + line + " >&2; exit 1"}))
		d := findDiag(diags, "h", "headers.L")
		if len(res.Headers) != 0 || len(d) != 1 {
			t.Fatalf("%d: %v %s", n, res.Headers, diagStrings(diags))
		}
		want := "exit status 1: " + line + "; value dropped"
		if n > 200 {
			want = "exit status 1: " + line[:200] + "...; value dropped"
		}
		if !strings.HasSuffix(d[0].Message, want) {
			t.Errorf("%d-byte stderr line: message %q, want suffix %q", n, d[0].Message, want)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, diags = (&Resolver{Env: envOf()}).Resolve(ctx, httpServer(LevelUser, map[string]string{"A": "!echo hi"}))
	if len(res.Headers) != 0 || len(diags) != 1 {
		t.Errorf("cancelled: %v %s", res.Headers, diagStrings(diags))
	}
}

func TestResolveClientSecret(t *testing.T) {
	auth := &Auth{Type: "oauth", Grant: GrantClientCredentials, ClientID: "svc", ClientSecret: "${SVC_SECRET}"}
	srv := &Server{Name: "s", Type: HTTP, URL: "https://x", Auth: auth, Source: Source{Level: LevelUser}}
	r := &Resolver{Env: envOf("SVC_SECRET", "s3")}
	res, diags := r.Resolve(t.Context(), srv)
	if res.ClientSecret != "s3" || len(diags) != 0 {
		t.Fatalf("secret %q, diags %v", res.ClientSecret, diags)
	}
	// Unset: no secret, a warning naming the field and the variable.
	res, diags = (&Resolver{Env: envOf()}).Resolve(t.Context(), srv)
	if res.ClientSecret != "" || len(diags) != 1 || diags[0].Field != "auth.clientSecret" || !strings.Contains(diags[0].Message, "SVC_SECRET") {
		t.Fatalf("secret %q, diags %v", res.ClientSecret, diags)
	}
	// A project-level server of an untrusted workspace gets no secret.
	proj := *srv
	proj.Source.Level = LevelProject
	res, diags = r.Resolve(t.Context(), &proj)
	if res.ClientSecret != "" || len(diags) != 1 || !errors.Is(diags[0].Err, ErrUntrusted) {
		t.Fatalf("secret %q, diags %v", res.ClientSecret, diags)
	}
	for _, d := range diags {
		if strings.Contains(d.Error(), "s3") {
			t.Fatalf("a diagnostic carries the secret: %v", d)
		}
	}
}

func TestCutLine(t *testing.T) {
	for _, c := range []struct {
		line string
		n    int
		want string
	}{
		{"short", 200, "short"},
		{strings.Repeat("a", 200), 200, strings.Repeat("a", 200)},
		{strings.Repeat("a", 201), 200, strings.Repeat("a", 200) + "..."},
		// "é" is two bytes: a cut at an odd byte count backs off to the
		// rune's start instead of splitting it.
		{strings.Repeat("é", 101), 201, strings.Repeat("é", 100) + "..."},
		{strings.Repeat("é", 101), 200, strings.Repeat("é", 100) + "..."},
	} {
		got := cutLine(c.line, c.n)
		if got != c.want {
			t.Errorf("cutLine(%d bytes, %d) = %q, want %q", len(c.line), c.n, got, c.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("cutLine(%d bytes, %d) is not valid UTF-8: %q", len(c.line), c.n, got)
		}
	}
}

func TestRunShellErrorCarriesStderrLine(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on PATH:", err)
	}
	long := strings.Repeat("é", 150) // 300 bytes
	_, err := runShell(context.Background(), "echo '"+long+"' >&2; echo second >&2; exit 3")
	if err == nil {
		t.Fatal("a command that exits 3 resolved")
	}
	msg := err.Error()
	if !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, strings.Repeat("é", 100)+"...") {
		t.Errorf("error %q: want the exit status and the first stderr line cut at 200 bytes", msg)
	}
	if strings.Contains(msg, "second") || !utf8.ValidString(msg) {
		t.Errorf("error %q: want only the first line, valid UTF-8", msg)
	}
}
