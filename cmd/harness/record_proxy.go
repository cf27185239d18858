package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/internal/mcpproxy"
	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/scenarios/repro"
)

// httpFront is the proxy harness record puts in front of an http or sse
// server, in this process: it journals the wire and takes rules through its
// control endpoint like a stdio server's `harness proxy`. When a rule makes
// it exit (exit, exit-delay, POST /exit) the server is gone for the
// runtime; after relaunch it is served again on the same address, as a
// supervisor restarting a crashed server would.
type httpFront struct {
	name        string
	upstream    string
	journal     string
	controlFile string
	relaunch    time.Duration
	log         io.Writer // where control endpoints are announced
	logMu       *sync.Mutex

	addr string // host:port of the first launch, reused by relaunches
	url  string // the URL the runtime uses: the upstream's path and query on addr
}

// start serves the proxy's first launch and returns once it listens; the
// launches after it run in the background until ctx is done. done is
// closed when the last launch has returned.
func (h *httpFront) start(ctx context.Context) (done chan struct{}, err error) {
	up, err := url.Parse(h.upstream)
	if err != nil || up.Host == "" {
		return nil, fmt.Errorf("server %s: url %q: not an http(s) URL", h.name, h.upstream)
	}
	ready := make(chan struct{})
	failed := make(chan error, 1)
	done = make(chan struct{})
	go func() {
		defer close(done)
		for launch := 1; ; launch++ {
			listen := "127.0.0.1:0"
			if h.addr != "" {
				listen = h.addr
			}
			_, err := mcpproxy.RunHTTP(ctx, mcpproxy.HTTPOptions{
				Upstream: h.upstream, Listen: listen, Journal: h.journal,
				Control: "127.0.0.1:0", ControlFile: h.controlFile,
				Ready: func(u string, ctl mcpproxy.ControlEndpoint) {
					if launch == 1 {
						pu, _ := url.Parse(u)
						h.addr = pu.Host
						v := *up
						v.Scheme, v.Host = "http", h.addr
						h.url = v.String()
						close(ready)
						return
					}
					h.announce(fmt.Sprintf("%s: served again (proxy launch %d): proxy control %s token %s", h.name, launch, ctl.URL, ctl.Token))
				},
			})
			if launch == 1 && h.addr == "" {
				if err == nil {
					err = fmt.Errorf("the proxy ended before it listened")
				}
				failed <- fmt.Errorf("server %s: proxy: %w", h.name, err)
				return
			}
			if err != nil {
				h.announce(fmt.Sprintf("%s: proxy launch %d: %s", h.name, launch+1, textsafe.Line(err.Error())))
				return
			}
			if ctx.Err() != nil {
				return
			}
			h.announce(fmt.Sprintf("%s: the proxy exited (a rule); it is served again in %s", h.name, h.relaunch))
			t := time.NewTimer(h.relaunch)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}()
	select {
	case <-ready:
		return done, nil
	case err := <-failed:
		<-done
		return nil, err
	}
}

func (h *httpFront) announce(msg string) {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	fmt.Fprintf(h.log, "harness record: %s\n", textsafe.Line(msg))
}

// faultsFromJournal returns every change of a proxy's rules its journal
// recorded (kind "rules": -fault installs and rules set by hand through the
// control endpoint alike), at its time since start. The first change that
// adds exactly a rule of own (the -fault rules record installed) is marked
// "-fault", the others "control".
func faultsFromJournal(server string, lines []json.RawMessage, start time.Time, own []string) []repro.Fault {
	var out []repro.Fault
	own = append([]string(nil), own...)
	for _, l := range lines {
		var e struct {
			Kind   string   `json:"kind"`
			Launch int      `json:"launch"`
			Time   string   `json:"time"`
			Op     string   `json:"op"`
			Rules  []string `json:"rules"`
		}
		if json.Unmarshal(l, &e) != nil || e.Kind != "rules" {
			continue
		}
		at := int64(0)
		if t, err := time.Parse(time.RFC3339Nano, e.Time); err == nil {
			at = max(t.Sub(start).Milliseconds(), 0)
		}
		source := "control"
		if e.Op == "add" && len(e.Rules) == 1 {
			for i, r := range own {
				if r == e.Rules[0] {
					source = "-fault"
					own = append(own[:i], own[i+1:]...)
					break
				}
			}
		}
		f := repro.Fault{Server: server, AtMS: at, Op: e.Op, Source: source, Launch: e.Launch}
		if e.Op == "clear" || len(e.Rules) == 0 {
			f.Op = e.Op
			out = append(out, f)
			continue
		}
		for i, r := range e.Rules {
			f.Rule = r
			if i > 0 {
				f.Op = "add" // the rest of a replacement adds to its first
			}
			out = append(out, f)
		}
	}
	return out
}

// maxJournalBytes bounds how much of a proxy's journal a trace keeps.
const maxJournalBytes = 64 << 20

// readJournalLines returns the complete JSON lines of a journal file, from
// its first maxJournalBytes; truncated tells that the file is longer.
func readJournalLines(path string) (lines []json.RawMessage, truncated bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJournalBytes+1))
	if err != nil {
		return nil, false
	}
	if len(data) > maxJournalBytes {
		data, truncated = data[:maxJournalBytes], true
	}
	for len(data) > 0 {
		line, rest, ok := bytes.Cut(data, []byte{'\n'})
		if !ok {
			break // a last line still being written
		}
		data = rest
		if json.Valid(line) {
			lines = append(lines, json.RawMessage(line))
		}
	}
	return lines, truncated
}

// parseUntil parses -until: an event kind and key=value expectations,
// server= naming the server.
func parseUntil(s string) (event.Matcher, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return event.Matcher{}, fmt.Errorf("want 'KIND [server=NAME] [ATTR=VALUE...]'")
	}
	m := event.Matcher{Kind: event.Kind(f[0]), Attrs: map[string]string{}}
	known := false
	for _, k := range event.Kinds() {
		if k.Kind == m.Kind {
			known = true
		}
	}
	if !known {
		return m, fmt.Errorf("%q is not an event kind (docs/TESTING.md, \"Lifecycle events\")", f[0])
	}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return m, fmt.Errorf("%q: want ATTR=VALUE", kv)
		}
		if k == "server" {
			m.Server = v
			continue
		}
		m.Attrs[k] = v
	}
	return m, nil
}
