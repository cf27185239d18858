package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// This file is the OAuth client of remote servers whose "auth" block names a
// grant. The flows are go-sdk's handlers (auth.AuthorizationCodeHandler,
// extauth.ClientCredentialsHandler): metadata discovery, client
// registration, PKCE, the token requests. The runtime adds what a host
// needs around them: the user-agent step through Options.Authorize, one
// flow at a time per server, tokens kept across reconnects, and an event
// for each step, observed on the flow's own HTTP client. No token or secret
// is ever put in an event or a log.

// DefaultOAuthRedirectURL is the redirect URI of the authorization-code
// flow when neither Options.OAuthRedirectURL nor the server's
// auth.redirectUri sets one: a loopback URI (RFC 8252), where a host with a
// UI listens for the redirect.
const DefaultOAuthRedirectURL = "http://127.0.0.1:8976/callback"

// AuthorizeRequest is what Options.Authorize gets: the authorization URL to
// open in a user agent (a browser) for the server's authorization server.
type AuthorizeRequest struct {
	// Server is the name of the server being authorized.
	Server string
	// URL is the authorization URL (PKCE S256, state and resource set).
	URL string
	// RedirectURL is where the authorization server sends the user agent
	// back with the code.
	RedirectURL string
}

// AuthorizeResult is the redirect the user agent came back with: the query
// parameters code, state and (RFC 9207) iss.
type AuthorizeResult struct {
	Code, State, Iss string
}

// AuthorizeFunc runs the user-agent step of the authorization-code flow: it
// shows req.URL to the user and returns the redirect's parameters. It must
// honour ctx.
type AuthorizeFunc func(ctx context.Context, req AuthorizeRequest) (AuthorizeResult, error)

// ErrNoUserAgent: a server needs the authorization-code flow and the host
// has no authorize callback (Options.Authorize) to run its user-agent step.
var ErrNoUserAgent = errors.New("the authorization-code flow needs a user agent: the host has no authorize callback")

// oauthClient runs a server's OAuth flow; one per server, so the tokens it
// obtained outlive a connection.
type oauthClient struct {
	srv     *server
	grant   string
	handler auth.OAuthHandler // nil when err is set
	err     error             // why no handler could be made

	flow sync.Mutex   // one flow at a time
	gen  atomic.Int64 // flows that succeeded
}

// newOAuthClient makes the OAuth client of s from its auth block; secret is
// the resolved auth.clientSecret.
func newOAuthClient(s *server, secret string) *oauthClient {
	a := s.cfg.Auth
	o := &oauthClient{srv: s, grant: a.Grant}
	hc := &http.Client{Transport: &oauthObserver{srv: s, base: http.DefaultTransport.(*http.Transport).Clone()}}
	var creds *oauthex.ClientCredentials
	if a.ClientID != "" {
		creds = &oauthex.ClientCredentials{ClientID: a.ClientID}
		if secret != "" {
			creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
	}
	switch a.Grant {
	case config.GrantClientCredentials:
		if creds == nil || creds.ClientSecretAuth == nil {
			o.err = errors.New("grant client_credentials needs auth.clientId and a resolved auth.clientSecret")
			return o
		}
		o.handler, o.err = extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{Credentials: creds, HTTPClient: hc})
	case config.GrantAuthorizationCode:
		redirect := a.RedirectURI
		if redirect == "" {
			redirect = s.rt.opts.OAuthRedirectURL
		}
		cfg := &auth.AuthorizationCodeHandlerConfig{
			RedirectURL:              redirect,
			AuthorizationCodeFetcher: o.fetchCode,
			PreregisteredClient:      creds,
			RequestRefreshToken:      a.OfflineAccess,
			Client:                   hc,
		}
		if a.ClientMetadataURL != "" {
			cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: a.ClientMetadataURL}
		}
		if a.DynamicRegistration {
			grants := []string{"authorization_code"}
			if a.OfflineAccess {
				grants = append(grants, "refresh_token")
			}
			cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs: []string{redirect}, ClientName: s.rt.opts.ClientName, GrantTypes: grants, ResponseTypes: []string{"code"},
			}}
		}
		o.handler, o.err = auth.NewAuthorizationCodeHandler(cfg)
	default:
		o.err = fmt.Errorf("unknown grant %q", a.Grant)
	}
	if o.err != nil {
		o.err = fmt.Errorf("auth.grant %s: %w", a.Grant, o.err)
	}
	return o
}

// token returns the current access token, or "" before any flow succeeded
// (or when the token source cannot give one: the server's 401 then starts a
// new flow).
func (o *oauthClient) token(ctx context.Context) string {
	if o.handler == nil {
		return ""
	}
	ts, err := o.handler.TokenSource(ctx)
	if err != nil || ts == nil {
		return ""
	}
	tok, err := ts.Token()
	if err != nil || tok == nil {
		o.srv.rt.log.Debug("oauth token source failed", "server", o.srv.name, "error", err)
		return ""
	}
	return tok.AccessToken
}

// authorize runs the flow for a request rejected with resp (401/403) that
// was sent after sentGen flows had succeeded. When another flow succeeded
// since, the request is only sent again with its token.
func (o *oauthClient) authorize(req *http.Request, resp *http.Response, sentGen int64) error {
	o.flow.Lock()
	defer o.flow.Unlock()
	if o.gen.Load() != sentGen {
		return nil
	}
	var err error
	switch {
	case o.err != nil:
		err = o.err
	case o.grant == config.GrantAuthorizationCode && o.srv.rt.opts.Authorize == nil:
		err = ErrNoUserAgent
	default:
		err = o.handler.Authorize(req.Context(), req, resp)
	}
	if err != nil {
		o.srv.emit(event.RemoteAuthFailed, event.String("grant", o.grant), event.Err(err))
		return err
	}
	o.gen.Add(1)
	return nil
}

// fetchCode is the AuthorizationCodeFetcher: the user-agent step, through
// the host's authorize callback.
func (o *oauthClient) fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	a := o.srv.cfg.Auth
	client, scope := "dynamic", ""
	if u, err := url.Parse(args.URL); err == nil {
		q := u.Query()
		scope = q.Get("scope")
		switch id := q.Get("client_id"); {
		case a.ClientMetadataURL != "" && id == a.ClientMetadataURL:
			client = "metadata-document"
		case a.ClientID != "" && id == a.ClientID:
			client = "pre-registered"
		}
	}
	redirect := a.RedirectURI
	if redirect == "" {
		redirect = o.srv.rt.opts.OAuthRedirectURL
	}
	o.srv.emit(event.RemoteAuthAuthorizing, event.String("client", client), event.String("scope", scope))
	res, err := o.srv.rt.opts.Authorize(ctx, AuthorizeRequest{Server: o.srv.name, URL: args.URL, RedirectURL: redirect})
	if err != nil {
		return nil, fmt.Errorf("authorize callback: %w", err)
	}
	if res.Code == "" {
		return nil, errors.New("authorize callback: the redirect carried no code")
	}
	return &auth.AuthorizationResult{Code: res.Code, State: res.State, Iss: res.Iss}, nil
}

// oauthObserver is the round tripper of an OAuth flow's HTTP client: it
// emits an event for each step it sees succeed (metadata fetched, client
// registered, token issued) and reads nothing secret into them.
type oauthObserver struct {
	srv  *server
	base http.RoundTripper
}

// maxOAuthBody bounds what the observer reads of a token response.
const maxOAuthBody = 1 << 20

func (o *oauthObserver) RoundTrip(req *http.Request) (*http.Response, error) {
	grant, register := "", false
	if req.Method == http.MethodPost && req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		switch mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt {
		case "application/x-www-form-urlencoded":
			if v, err := url.ParseQuery(string(body)); err == nil {
				grant = v.Get("grant_type")
			}
		case "application/json":
			register = true // the flows post JSON only to register a client
		}
	}
	resp, err := o.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	where := *req.URL
	where.RawQuery, where.Fragment = "", ""
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch p := req.URL.Path; {
	case !ok:
	case req.Method == http.MethodGet && strings.Contains(p, "/.well-known/oauth-protected-resource"):
		o.srv.emit(event.RemoteAuthDiscovered, event.String("document", "protected-resource"), event.String("url", where.String()))
	case req.Method == http.MethodGet && (strings.Contains(p, "/.well-known/oauth-authorization-server") || strings.Contains(p, "/.well-known/openid-configuration")):
		o.srv.emit(event.RemoteAuthDiscovered, event.String("document", "authorization-server"), event.String("url", where.String()))
	case register:
		o.srv.emit(event.RemoteAuthRegistered, event.String("url", where.String()))
	case grant != "":
		o.tokenIssued(resp, grant)
	}
	return resp, nil
}

// tokenIssued emits remote.auth_token_obtained for a token response; the
// body stays readable.
func (o *oauthObserver) tokenIssued(resp *http.Response, grant string) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxOAuthBody))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	var m struct {
		Scope        string          `json:"scope"`
		ExpiresIn    json.Number     `json:"expires_in"`
		RefreshToken json.RawMessage `json:"refresh_token"`
	}
	if json.Unmarshal(b, &m) != nil {
		return
	}
	secs, _ := m.ExpiresIn.Int64()
	refresh := len(m.RefreshToken) > 0 && string(m.RefreshToken) != "null" && string(m.RefreshToken) != `""`
	o.srv.emit(event.RemoteAuthTokenObtained, event.String("grant", grant), event.String("scope", m.Scope),
		event.Millis("expires_in_ms", time.Duration(max(secs, 0))*time.Second), event.Bool("refresh", refresh))
}

// oauthFor returns the server's OAuth client, made at the first connect
// (secret is the resolved auth.clientSecret); nil when the server's auth
// block names no grant.
func (r *remoteSessions) oauthFor(secret string) *oauthClient {
	s := r.s
	if s.cfg.Auth == nil || s.cfg.Auth.Grant == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.oauth == nil {
		r.oauth = newOAuthClient(s, secret)
	}
	return r.oauth
}
