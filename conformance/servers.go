package conformance

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/onsi/ginkgo/v2"
)

// This file holds the servers a spec configures: fixture server objects,
// config files, HTTP fixtures the harness starts itself and state files.

// Knobs are fixture environment variables (MCP_FIXTURE_*).
type Knobs map[string]string

// Server is one server object of a configuration, as in a config file.
type Server map[string]any

// With returns a copy of s with field k set to v.
func (s Server) With(k string, v any) Server {
	out := maps.Clone(s)
	out[k] = v
	return out
}

// WithEnv returns a copy of s with more env entries.
func (s Server) WithEnv(env map[string]string) Server {
	out := maps.Clone(s)
	e := maps.Clone(out["env"].(map[string]string))
	maps.Copy(e, env)
	out["env"] = e
	return out
}

// EraKnob is the fixture knob that sets the protocol eras a fixture server
// speaks; VersionsKnob sets its protocol versions instead.
const (
	EraKnob      = "MCP_FIXTURE_ERA"
	VersionsKnob = "MCP_FIXTURE_PROTOCOL_VERSIONS"
)

// eraKnobs returns knobs with the spec's era set (EraKnob), unless they
// set the era or the protocol versions themselves.
func (h *H) eraKnobs(knobs Knobs) Knobs {
	out := maps.Clone(knobs)
	if out == nil {
		out = Knobs{}
	}
	_, era := out[EraKnob]
	_, versions := out[VersionsKnob]
	if !era && !versions {
		out[EraKnob] = string(h.era)
	}
	return out
}

// Fixture returns a stdio server object that launches the fixture with
// knobs, journaling to the journal named key. The server speaks the spec's
// era unless knobs set MCP_FIXTURE_ERA or MCP_FIXTURE_PROTOCOL_VERSIONS.
func (h *H) Fixture(key string, knobs Knobs) Server {
	env := map[string]string{}
	maps.Copy(env, h.s.cfg.Fixture.Env)
	maps.Copy(env, h.eraKnobs(knobs))
	env["MCP_FIXTURE_JOURNAL"] = h.journalPath(key)
	h.knobs[key] = env
	s := Server{"command": h.s.cfg.Fixture.Command, "env": env}
	if len(h.s.cfg.Fixture.Args) > 0 {
		s["args"] = h.s.cfg.Fixture.Args
	}
	return s
}

func (h *H) journalPath(key string) string {
	p, ok := h.journals[key]
	if !ok {
		p = filepath.Join(h.dir, "journal", key+".jsonl")
		h.journals[key] = p
		h.followers[key] = journal.NewFollower(p)
	}
	return p
}

// StateFile returns the path of a fixture state file named key.
func (h *H) StateFile(key string) string { return filepath.Join(h.dir, "journal", key+".state.json") }

// WriteConfig writes a config file with servers under "mcpServers".
func (h *H) WriteConfig(path string, servers map[string]Server) {
	ginkgo.GinkgoHelper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	h.must(err, "encoding a config file")
	h.must(os.MkdirAll(filepath.Dir(path), 0o755), "config dir")
	h.must(os.WriteFile(path, b, 0o644), "writing a config file")
}

// HTTPFixture starts, from the harness itself, a fixture serving streamable
// HTTP and returns its host:port; it speaks the spec's era like Fixture. It is stopped at the end of the spec.
func (h *H) HTTPFixture(key string, knobs Knobs) string {
	ginkgo.GinkgoHelper()
	portFile := filepath.Join(h.dir, "journal", key+".port")
	cmd := exec.Command(h.s.cfg.Fixture.Command, h.s.cfg.Fixture.Args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_FIXTURE_") {
			env = append(env, kv)
		}
	}
	for k, v := range h.s.cfg.Fixture.Env {
		env = append(env, k+"="+v)
	}
	for k, v := range h.eraKnobs(knobs) {
		env = append(env, k+"="+v)
	}
	env = append(env, "MCP_FIXTURE_TRANSPORT=http", "MCP_FIXTURE_PORT_FILE="+portFile, "MCP_FIXTURE_JOURNAL="+h.journalPath(key))
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	h.must(cmd.Start(), "starting an HTTP fixture")
	h.procs = append(h.procs, cmd)
	// The harness's own process: its start is not the implementation's
	// work, so the wait is bounded by the await timeout alone.
	ctx, cancel := context.WithTimeout(h.ctx, h.s.cfg.AwaitTimeout)
	defer cancel()
	tick := time.NewTicker(3 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(portFile)
		if addr := strings.TrimSpace(string(b)); err == nil && addr != "" {
			return addr
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			h.fail("the HTTP fixture %s wrote no port file within %v", key, h.s.cfg.AwaitTimeout)
		}
	}
}

// InitHold returns the path of a file that a fixture configured with
// MCP_FIXTURE_INIT_WAIT_FILE waits for before it answers initialize, and a
// function that creates it. Until release is called the server's handshake
// cannot complete, however slowly the harness runs.
func (h *H) InitHold(key string) (path string, release func()) {
	path = filepath.Join(h.dir, "journal", key+".init-release")
	return path, func() {
		ginkgo.GinkgoHelper()
		h.must(os.WriteFile(path, nil, 0o644), "releasing the initialize hold of "+key)
	}
}
