package host

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// oauthServer is a loopback OAuth authorization server and, behind a bearer
// check, a streamable-HTTP MCP server with one tool (echo), in one
// httptest server: what a protected remote MCP server looks like.
type oauthServer struct {
	t   *testing.T
	srv *httptest.Server

	expiresIn int  // expires_in of issued tokens (seconds)
	refresh   bool // issue refresh tokens

	mu         sync.Mutex
	tokens     map[string]bool   // issued access tokens
	challenges map[string]string // code -> PKCE challenge
	hits       map[string]int    // endpoint -> requests
	grants     []string          // grant_type of each token request
	n          int
}

const (
	ccClientID = "svc-client"
	ccSecret   = "svc-secret-value"
)

func newOAuthServer(t *testing.T) *oauthServer {
	o := &oauthServer{t: t, expiresIn: 3600, tokens: map[string]bool{}, challenges: map[string]string{}, hits: map[string]int{}}
	mux := http.NewServeMux()
	o.srv = httptest.NewServer(mux)
	t.Cleanup(o.srv.Close)
	base := o.srv.URL

	ms := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	// drop closes its response stream after the priming event, with a
	// retry: of 2 s, and answers on the stream the client resumes.
	mcp.AddTool(ms, &mcp.Tool{Name: "drop", Description: "drop"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 2 * time.Second})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "after the drop"}}}, nil, nil
	})
	// Sessions the client did not end (a handshake cut short) would outlive
	// the test; the server ends them.
	t.Cleanup(func() {
		for ss := range ms.Sessions() {
			ss.Close()
		}
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if !o.tokens[tok] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	prm := base + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", o.count("prm", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: base + "/mcp", AuthorizationServers: []string{base},
	})))
	mux.Handle("/.well-known/oauth-authorization-server", o.count("asm", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"registration_endpoint": base + "/register", "code_challenge_methods_supported": []string{"S256"},
			"response_types_supported": []string{"code"}, "scopes_supported": []string{"mcp", "offline_access"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "none"},
		})
	})))
	mux.Handle("/register", o.count("register", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusCreated, map[string]any{"client_id": "dyn-client", "token_endpoint_auth_method": "none", "redirect_uris": []string{DefaultOAuthRedirectURL}})
	})))
	mux.Handle("/authorize", o.count("authorize", http.HandlerFunc(o.authorize)))
	mux.Handle("/token", o.count("token", http.HandlerFunc(o.token)))
	return o
}

func (o *oauthServer) url() string { return o.srv.URL + "/mcp" }

func (o *oauthServer) count(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.hits[name]++
		o.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (o *oauthServer) hit(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hits[name]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (o *oauthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") != o.url() {
		http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.n++
	code := fmt.Sprintf("code-%d", o.n)
	o.challenges[code] = q.Get("code_challenge")
	o.mu.Unlock()
	to, _ := url.Parse(q.Get("redirect_uri"))
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

func (o *oauthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	grant := r.PostForm.Get("grant_type")
	o.mu.Lock()
	defer o.mu.Unlock()
	o.grants = append(o.grants, grant)
	switch grant {
	case "authorization_code":
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		want, ok := o.challenges[r.PostForm.Get("code")]
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != want {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "PKCE verification failed"})
			return
		}
	case "client_credentials":
		id, sec, ok := r.BasicAuth()
		if !ok || id != ccClientID || sec != ccSecret {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
			return
		}
	case "refresh_token":
		if !strings.HasPrefix(r.PostForm.Get("refresh_token"), "rt-") {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	o.n++
	tok := fmt.Sprintf("access-token-%d", o.n)
	o.tokens[tok] = true
	res := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": o.expiresIn, "scope": "mcp"}
	if o.refresh {
		res["refresh_token"] = fmt.Sprintf("rt-%d", o.n)
	}
	writeJSON(w, http.StatusOK, res)
}

// issued returns the access tokens issued so far.
func (o *oauthServer) issued() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for t := range o.tokens {
		out = append(out, t)
	}
	return out
}

// followRedirect is a headless authorize callback: it fetches the
// authorization URL and reads the redirect instead of following it.
func followRedirect(ctx context.Context, req AuthorizeRequest) (AuthorizeResult, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return AuthorizeResult{}, err
	}
	resp, err := c.Do(r)
	if err != nil {
		return AuthorizeResult{}, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		return AuthorizeResult{}, fmt.Errorf("authorize: HTTP %d", resp.StatusCode)
	}
	if !strings.HasPrefix(loc.String(), req.RedirectURL) {
		return AuthorizeResult{}, fmt.Errorf("redirect %s is not to %s", loc, req.RedirectURL)
	}
	return AuthorizeResult{Code: loc.Query().Get("code"), State: loc.Query().Get("state")}, nil
}

// oauthEnv starts a runtime whose server fx is the protected server with
// the given auth block.
func oauthEnv(t *testing.T, o *oauthServer, authBlock string, opts Options) (*fixtureEnv, *Session) {
	t.Helper()
	e := newFixtureEnv(t, func(*fixtureEnv) map[string]json.RawMessage {
		return map[string]json.RawMessage{"fx": json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q,"restart":"never","auth":%s}`, o.url(), authBlock))}
	}, opts)
	sess, err := e.rt.OpenSession(t.Context(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e, sess
}

// checkNoSecrets fails when an event carries a token or a secret.
func checkNoSecrets(t *testing.T, e *fixtureEnv, secrets ...string) {
	t.Helper()
	for _, ev := range e.rt.Events().Events() {
		s := ev.String()
		for _, sec := range secrets {
			if sec != "" && strings.Contains(s, sec) {
				t.Errorf("event %s carries the secret %q", s, sec)
			}
		}
	}
}

// awaitInOrder awaits each matcher after the previous one's event.
func (e *fixtureEnv) awaitInOrder(ms ...event.Matcher) {
	e.t.Helper()
	var after uint64
	for _, mt := range ms {
		after = e.awaitAfter(after, mt).Seq
	}
}

// TestOAuthAuthorizationCodeDynamic: a 401 at the handshake runs the
// authorization-code flow (discovery, dynamic registration, the host's
// authorize callback, PKCE token request) and the handshake goes on with
// the token; every step is an event and no event carries the token.
func TestOAuthAuthorizationCodeDynamic(t *testing.T) {
	o := newOAuthServer(t)
	e, sess := oauthEnv(t, o, `{"type":"oauth","grant":"authorization_code"}`, Options{Authorize: followRedirect})
	res, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "hi"})
	if err != nil || !strings.Contains(res.Text, "echo: hi") {
		t.Fatalf("call = %+v, %v", res, err)
	}
	e.awaitInOrder(
		m(event.RemoteAuthRejected, "fx", "status", "401"),
		m(event.RemoteAuthDiscovered, "fx", "document", "protected-resource"),
		m(event.RemoteAuthDiscovered, "fx", "document", "authorization-server"),
		m(event.RemoteAuthRegistered, "fx", "url", o.srv.URL+"/register"),
		m(event.RemoteAuthAuthorizing, "fx", "client", "dynamic"),
		m(event.RemoteAuthTokenObtained, "fx", "grant", "authorization_code", "expires_in_ms", "3600000", "refresh", "false"),
		m(event.RemoteRequestRetried, "fx", "reason", "authorized"),
		m(event.ServerConnected, "fx"),
	)
	if n := o.hit("authorize"); n != 1 {
		t.Fatalf("%d authorization requests, want 1", n)
	}
	checkNoSecrets(t, e, o.issued()...)
}

// TestOAuthNoUserAgent: a host without an authorize callback cannot run the
// authorization-code flow: the server needs authorization at once, nothing
// is registered at the authorization server and nothing restarts.
func TestOAuthNoUserAgent(t *testing.T) {
	o := newOAuthServer(t)
	e, sess := oauthEnv(t, o, `{"type":"oauth","grant":"authorization_code"}`, Options{})
	if rep := sess.StartReport(); len(rep.Failed) != 1 {
		t.Fatalf("report %+v", rep)
	}
	ev := e.await(m(event.RemoteAuthFailed, "fx", "grant", "authorization_code"))
	if !strings.Contains(ev.Attrs["error"].(string), "user agent") {
		t.Fatalf("auth_failed error %v", ev.Attrs["error"])
	}
	e.await(m(event.RemoteAuthRequired, "fx", "status", "401"))
	if st := e.status("fx"); st.State != StateNeedsAuth {
		t.Fatalf("state %s, want %s", st.State, StateNeedsAuth)
	}
	if o.hit("register")+o.hit("authorize")+o.hit("token") != 0 {
		t.Fatalf("the flow ran without a user agent: %v", o.hits)
	}
	for _, ev := range e.rt.Events().Events() {
		if ev.Kind == event.RestartScheduled {
			t.Fatalf("needs-auth started a restart loop: %v", ev)
		}
	}
}

// clientCredentialsEnv is oauthEnv with the client-credentials grant, its
// secret from the environment variable SVC_SECRET (opts.Discovery.Env is
// replaced).
func clientCredentialsEnv(t *testing.T, o *oauthServer, opts Options) (*fixtureEnv, *Session) {
	t.Helper()
	opts.Discovery.Env = func(k string) (string, bool) {
		if k == "SVC_SECRET" {
			return ccSecret, true
		}
		return "", false
	}
	return oauthEnv(t, o, `{"type":"oauth","grant":"client_credentials","clientId":"`+ccClientID+`","clientSecret":"${SVC_SECRET}"}`, opts)
}

// TestOAuthClientCredentials: the client-credentials grant with the secret
// from the environment (auth.clientSecret names the variable), sent with
// basic auth as the server's metadata prefers.
func TestOAuthClientCredentials(t *testing.T) {
	o := newOAuthServer(t)
	e, sess := clientCredentialsEnv(t, o, Options{})
	if _, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "cc"}); err != nil {
		t.Fatal(err)
	}
	e.awaitInOrder(
		m(event.RemoteAuthRejected, "fx", "status", "401"),
		m(event.RemoteAuthTokenObtained, "fx", "grant", "client_credentials"),
		m(event.ServerConnected, "fx"),
	)
	checkNoSecrets(t, e, append(o.issued(), ccSecret)...)
}

// TestOAuthStreamResumeCarriesToken: the GET that resumes a dropped
// response stream carries the OAuth flow's token, as every other request of
// the server does.
func TestOAuthStreamResumeCarriesToken(t *testing.T) {
	o := newOAuthServer(t)
	e, sess := clientCredentialsEnv(t, o, Options{ProtocolVersion: ProtocolLegacy})
	out := e.callAsync(sess, "mcp_fx_drop", map[string]any{})
	e.await(m(event.RemoteStreamDropped, "fx", "method", "tools/call", "retry_ms", "2000"))
	rejections := func() int {
		n := 0
		for _, ev := range e.rt.Events().Events() {
			if ev.Kind == event.RemoteAuthRejected {
				n++
			}
		}
		return n
	}
	rejected := rejections()
	e.clock.Advance(2 * time.Second)
	o2 := <-out
	if o2.err != nil || !strings.Contains(o2.res.Text, "after the drop") {
		t.Fatalf("call = %+v, %v", o2.res, o2.err)
	}
	e.await(m(event.RemoteStreamResumed, "fx"))
	if n := rejections(); n != rejected {
		t.Fatalf("%d requests were rejected after the drop, want none", n-rejected)
	}
}

// TestOAuthRefreshAndPreRegistered: a pre-registered public client asks for
// offline access; a token that expires at once is refreshed by the token
// source on the next request, without a new authorization.
func TestOAuthRefreshAndPreRegistered(t *testing.T) {
	o := newOAuthServer(t)
	o.expiresIn, o.refresh = 1, true // golang.org/x/oauth2 treats a token within 10 s of expiry as expired
	e, sess := oauthEnv(t, o, `{"type":"oauth","grant":"authorization_code","clientId":"pre-client","dynamicRegistration":false,"offlineAccess":true}`,
		Options{Authorize: followRedirect})
	e.awaitInOrder(
		m(event.RemoteAuthAuthorizing, "fx", "client", "pre-registered", "scope", "offline_access"),
		m(event.RemoteAuthTokenObtained, "fx", "grant", "authorization_code", "refresh", "true"),
		m(event.ServerConnected, "fx"),
	)
	if _, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": "later"}); err != nil {
		t.Fatal(err)
	}
	e.await(m(event.RemoteAuthTokenObtained, "fx", "grant", "refresh_token"))
	if n := o.hit("authorize"); n != 1 {
		t.Fatalf("%d authorization requests, want 1 (refresh needs none)", n)
	}
	if o.hit("register") != 0 {
		t.Fatal("a pre-registered client registered dynamically")
	}
	checkNoSecrets(t, e, o.issued()...)
}

// TestOAuthCallbackError: an authorize callback that fails (the user
// closed the browser) leaves the server needing authorization.
func TestOAuthCallbackError(t *testing.T) {
	o := newOAuthServer(t)
	refuse := func(context.Context, AuthorizeRequest) (AuthorizeResult, error) {
		return AuthorizeResult{}, errors.New("the user closed the window")
	}
	e, _ := oauthEnv(t, o, `{"type":"oauth","grant":"authorization_code"}`, Options{Authorize: refuse})
	ev := e.await(m(event.RemoteAuthFailed, "fx"))
	if !strings.Contains(ev.Attrs["error"].(string), "closed the window") {
		t.Fatalf("auth_failed error %v", ev.Attrs["error"])
	}
	e.await(m(event.RemoteAuthRequired, "fx"))
	if st := e.status("fx"); st.State != StateNeedsAuth {
		t.Fatalf("state %s", st.State)
	}
}

// TestOAuthRevokedTokenOneFlow: when the server revokes the token, calls in
// flight that meet 401 share one new flow (one flow at a time per server;
// a request sent before a flow that succeeded meanwhile only retries), and
// the server never leaves state ready.
func TestOAuthRevokedTokenOneFlow(t *testing.T) {
	o := newOAuthServer(t)
	e, sess := oauthEnv(t, o, `{"type":"oauth","grant":"authorization_code"}`, Options{Authorize: followRedirect})
	e.await(m(event.ServerConnected, "fx"))
	o.mu.Lock()
	clear(o.tokens)
	o.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Go(func() {
			res, err := sess.CallTool(t.Context(), "mcp_fx_echo", map[string]any{"text": fmt.Sprint(i)})
			if err == nil && !strings.Contains(res.Text, fmt.Sprint("echo: ", i)) {
				err = fmt.Errorf("call %d: %q", i, res.Text)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := o.hit("authorize"); n != 2 {
		t.Fatalf("%d authorization requests, want 2 (the first and one after the revocation)", n)
	}
	if st := e.status("fx"); st.State != StateConnected {
		t.Fatalf("state %s", st.State)
	}
	checkNoSecrets(t, e, o.issued()...)
}
