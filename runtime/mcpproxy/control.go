package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// ControlAPI documents the requests of the control endpoint.
const ControlAPI = `GET    /rules   the installed rules with their counters (JSON)
POST   /rules   add rules: one per line in the body (text form), # comments
PUT    /rules   replace all rules with those of the body
DELETE /rules   remove every rule (held requests are then forwarded)
POST   /exit    exit now; ?code=N sets the exit code (default 0)`

// ControlHelp documents the control endpoint; GET / returns it.
const ControlHelp = "mcplife proxy control endpoint\n" + ControlAPI + "\n\nrule syntax:\n" + RuleSyntax + "\n"

// Control is the loopback HTTP endpoint that switches a proxy's rules at run
// time.
type Control struct {
	ln  net.Listener
	srv *http.Server
	url string
}

// NewControl listens on addr, which must be a loopback address (port 0
// picks one), and serves the control API for eng.
func NewControl(addr string, eng *engine) (*Control, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("control address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("control address %q: not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("control endpoint: %w", err)
	}
	c := &Control{ln: ln, url: "http://" + ln.Addr().String()}
	c.srv = &http.Server{Handler: controlHandler(eng), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

// URL returns the endpoint's base URL, http://HOST:PORT.
func (c *Control) URL() string { return c.url }

// WriteFile writes the URL and a newline to path atomically; "" does
// nothing.
func (c *Control) WriteFile(path string) error {
	if path == "" {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".control-*")
	if err != nil {
		return fmt.Errorf("control file: %w", err)
	}
	_, werr := tmp.WriteString(c.url + "\n")
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("control file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("control file: %w", err)
	}
	return nil
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
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			rules, err := ParseRules(string(body))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
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
		code := 0
		if s := r.URL.Query().Get("code"); s != "" {
			if _, err := fmt.Sscan(s, &code); err != nil {
				http.Error(w, "code: not an integer", http.StatusBadRequest)
				return
			}
		}
		eng.journal("fault", map[string]any{"action": string(Exit), "rule": "POST /exit"})
		eng.exit(code, "fault")
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func ruleTexts(rules []Rule) []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.String())
	}
	return out
}
