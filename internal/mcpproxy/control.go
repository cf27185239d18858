package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ControlAPI documents the requests of the control endpoint.
const ControlAPI = `Every request needs the proxy's token: Authorization: Bearer TOKEN (the
proxy prints it on stderr with the URL; -control-token-file and -control-file
write it). Requests with an Origin header (web pages) or a Host other than
the endpoint's loopback address are refused (403); POST, PUT and DELETE need
Content-Type: application/json (415 otherwise).
GET    /        this help
GET    /rules   the installed rules with their counters (JSON)
POST   /rules   add rules: {"rules": ["hang=*", "ping=drop"]}
PUT    /rules   replace all rules with those of the body (same form)
DELETE /rules   remove every rule (held requests are then forwarded)
POST   /exit    exit now; {"code": N} sets the exit code (default 0)`

// ControlHelp documents the control endpoint; GET / returns it.
const ControlHelp = "mcplife proxy control endpoint\n" + ControlAPI + "\n\nrule syntax:\n" + RuleSyntax + "\n"

// maxControlBody bounds the body of a control request.
const maxControlBody = 1 << 20

// RulesRequest is the body of POST and PUT /rules: rules in their text
// form (RuleSyntax), one per element.
type RulesRequest struct {
	Rules []string `json:"rules"`
}

// ExitRequest is the body of POST /exit.
type ExitRequest struct {
	Code int `json:"code"`
}

// ControlEndpoint is where a proxy's control endpoint listens and the token
// every request to it needs.
type ControlEndpoint struct {
	URL   string
	Token string
}

// Control is the loopback HTTP endpoint that switches a proxy's rules at run
// time. Every request must carry the endpoint's random token; requests
// from web pages (an Origin header), for another host (DNS rebinding) or
// that change something without a JSON content type (a form or a no-cors
// fetch) are refused, and no CORS header is ever served.
type Control struct {
	ln    net.Listener
	srv   *http.Server
	url   string
	port  string
	token string
}

// NewControl listens on addr, which must be a loopback address (port 0
// picks one), draws a new token and serves the control API for eng.
func NewControl(addr string, eng *engine) (*Control, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("control address %q: %w", addr, err)
	}
	if !isLoopbackHost(host) {
		return nil, fmt.Errorf("control address %q: not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("control endpoint: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	c := &Control{ln: ln, url: "http://" + ln.Addr().String(), port: port, token: rand.Text()}
	c.srv = &http.Server{Handler: c.guard(controlHandler(eng)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

// URL returns the endpoint's base URL, http://HOST:PORT.
func (c *Control) URL() string { return c.url }

// Endpoint returns the endpoint's URL and token.
func (c *Control) Endpoint() ControlEndpoint { return ControlEndpoint{URL: c.url, Token: c.token} }

// WriteFile writes the URL and the token, a line each, to path atomically,
// readable by the owner only (ReadControlFile reads it); "" does nothing.
func (c *Control) WriteFile(path string) error {
	if err := writeOwnerOnly(path, c.url+"\n"+c.token+"\n"); err != nil {
		return fmt.Errorf("control file: %w", err)
	}
	return nil
}

// WriteTokenFile writes the token and a newline to path atomically,
// readable by the owner only; "" does nothing.
func (c *Control) WriteTokenFile(path string) error {
	if err := writeOwnerOnly(path, c.token+"\n"); err != nil {
		return fmt.Errorf("control token file: %w", err)
	}
	return nil
}

// writeOwnerOnly replaces path with data through a temporary file of mode
// 0600 in the same directory; the rename replaces a symbolic link at path
// instead of writing through it. "" does nothing.
func writeOwnerOnly(path, data string) error {
	if path == "" {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".control-*")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// ReadControlFile reads a file written by Control.WriteFile (harness proxy
// -control-file): the URL on the first line, the token on the second.
func ReadControlFile(path string) (ControlEndpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ControlEndpoint{}, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	if len(lines) < 2 || lines[0] == "" || lines[1] == "" {
		return ControlEndpoint{}, fmt.Errorf("control file %s: want the URL and the token, a line each", path)
	}
	return ControlEndpoint{URL: lines[0], Token: lines[1]}, nil
}

// NewRequest returns a request for path on the endpoint with its token; a
// non-nil body is sent as JSON.
func (e ControlEndpoint) NewRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("control request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.URL+path, rd)
	if err != nil {
		return nil, fmt.Errorf("control request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+e.Token)
	if method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Close stops the endpoint.
func (c *Control) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := c.srv.Shutdown(ctx)
	if err != nil {
		err = c.srv.Close()
	}
	return err
}

// guard refuses, before next sees them, requests from a web page (an
// Origin header: a cross-site fetch or form), for a host other than this
// endpoint's loopback address (DNS rebinding), without the token, and
// changes without a JSON content type.
func (c *Control) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Origin"]; ok {
			http.Error(w, "forbidden: requests from web pages (Origin header) are refused", http.StatusForbidden)
			return
		}
		if !loopbackHostPort(r.Host, c.port) {
			http.Error(w, "forbidden: the Host is not this endpoint's loopback address", http.StatusForbidden)
			return
		}
		if !c.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcplife proxy control"`)
			http.Error(w, "unauthorized: send Authorization: Bearer TOKEN (the token the proxy printed)", http.StatusUnauthorized)
			return
		}
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodDelete:
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				http.Error(w, "unsupported media type: send Content-Type: application/json", http.StatusUnsupportedMediaType)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries the token, compared in constant
// time.
func (c *Control) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(c.token)) == 1
}

// isLoopbackHost reports whether host (without a port) is "localhost" or a
// loopback IP address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHostPort reports whether hostport, a request's Host, names a
// loopback host with the given port.
func loopbackHostPort(hostport, port string) bool {
	host, p, err := net.SplitHostPort(hostport)
	return err == nil && p == port && isLoopbackHost(host)
}

func controlHandler(eng *engine) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, ControlHelp)
	})
	mux.HandleFunc("GET /rules", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"rules": eng.rules.list()})
	})
	change := func(add bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var req RulesRequest
			if err := decodeControlBody(r.Body, &req, false); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if req.Rules == nil {
				http.Error(w, `body: want {"rules": ["RULE", ...]}`, http.StatusBadRequest)
				return
			}
			rules := make([]Rule, 0, len(req.Rules))
			for i, s := range req.Rules {
				rule, err := ParseRule(s)
				if err != nil {
					http.Error(w, fmt.Sprintf("rules[%d]: %v", i, err), http.StatusBadRequest)
					return
				}
				rules = append(rules, rule)
			}
			eng.journal("rules", map[string]any{"op": map[bool]string{true: "add", false: "replace"}[add], "rules": ruleTexts(rules)})
			eng.setRules(rules, add)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"rules": eng.rules.list()})
		}
	}
	mux.HandleFunc("POST /rules", change(true))
	mux.HandleFunc("PUT /rules", change(false))
	mux.HandleFunc("DELETE /rules", func(w http.ResponseWriter, _ *http.Request) {
		eng.journal("rules", map[string]any{"op": "clear", "rules": []string{}})
		eng.setRules(nil, false)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"rules": []RuleStatus{}})
	})
	mux.HandleFunc("POST /exit", func(w http.ResponseWriter, r *http.Request) {
		var req ExitRequest
		if err := decodeControlBody(r.Body, &req, true); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		eng.journal("fault", map[string]any{"action": string(Exit), "rule": "POST /exit"})
		eng.exit(req.Code, "fault")
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// decodeControlBody decodes one JSON object, with no unknown field and
// nothing after it, from at most maxControlBody bytes of body; an empty
// body is accepted when emptyOK.
func decodeControlBody(body io.Reader, v any, emptyOK bool) error {
	data, err := io.ReadAll(io.LimitReader(body, maxControlBody+1))
	if err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if len(data) > maxControlBody {
		return fmt.Errorf("body: longer than %d bytes", maxControlBody)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if emptyOK {
			return nil
		}
		return errors.New("body: empty, want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("body: more than one JSON value")
	}
	return nil
}

func ruleTexts(rules []Rule) []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.String())
	}
	return out
}
