package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/onsi/ginkgo/v2"
)

// This file holds starting and stopping the driver of the implementation
// under test.

// Setup is the configuration of one driver's start.
type Setup struct {
	// Servers are inline servers by name.
	Servers map[string]Server
	// Options are the runtime options; nil leaves every default.
	Options *driver.StartOptions
	// Env is the whole environment of the implementation's config layer;
	// nil means an empty one (hermetic).
	Env map[string]string
	// Trusted marks the workspace trusted.
	Trusted bool
	// Cache enables the tool cache in the spec's cache directory.
	Cache bool
	// SkipProjectConfig ignores project-level definitions.
	SkipProjectConfig bool
	// ConfigFiles are explicit config files.
	ConfigFiles []driver.ConfigFile
	// CredentialsFile is the credential provider's file (start.credentialsFile).
	CredentialsFile string
}

// Start starts a new driver (closing the previous one, if any), says hello
// and starts its runtime with s.
func (h *H) Start(s Setup) {
	ginkgo.GinkgoHelper()
	if h.c != nil {
		h.StopDriver()
	}
	// Starting a driver process on a busy machine can take longer than any
	// single await: the hello and start get the larger of the await and
	// shutdown bounds.
	ctx, cancel := context.WithTimeout(h.ctx, max(h.s.cfg.AwaitTimeout, h.s.cfg.ShutdownTimeout))
	defer cancel()
	// The driver outlives the spec body (teardown shuts it down), so it does
	// not run on the spec's context; it may have been started ahead
	// (spare.go).
	c, stderr, err := h.s.drivers.start(h.ctx)
	h.stderr = stderr
	h.must(err, "starting the driver")
	h.c = c
	_, err = c.Hello(ctx)
	h.must(err, "hello")
	p := driver.StartParams{
		Clock:             h.mode,
		Home:              h.Home(),
		Workspace:         h.Workspace(),
		Trusted:           s.Trusted,
		SkipProjectConfig: s.SkipProjectConfig,
		ConfigFiles:       s.ConfigFiles,
		Env:               s.Env,
		Options:           s.Options,
		CredentialsFile:   s.CredentialsFile,
	}
	if p.Env == nil {
		p.Env = map[string]string{}
	}
	if s.Cache {
		p.CacheDir = h.CacheDir()
	}
	if len(s.Servers) > 0 {
		p.Inline = map[string]json.RawMessage{}
		for name, srv := range s.Servers {
			b, err := json.Marshal(srv)
			h.must(err, "encoding server "+name)
			p.Inline[name] = b
		}
	}
	h.must(c.Start(ctx, p), "start")
	h.s.drivers.prepare(h.ctx)
}

// Client returns the current driver's client.
func (h *H) Client() *driver.Client {
	ginkgo.GinkgoHelper()
	if h.c == nil {
		h.fail("no driver started")
	}
	return h.c
}

// failedShutdownGrace bounds, in real time, the shutdown of a driver of
// another process at the end of a spec that has already failed.
const failedShutdownGrace = 500 * time.Millisecond

// StopDriver shuts the current driver down and checks its exchange. Every
// process its servers started must be gone afterwards.
func (h *H) StopDriver() {
	ginkgo.GinkgoHelper()
	errs := h.closeDriver()
	if len(errs) > 0 {
		h.fail("%s", strings.Join(errs, "\n"))
	}
}

// closeDriver shuts the driver down and validates its transcript; it
// returns the problems instead of failing.
func (h *H) closeDriver() []string {
	if h.c == nil {
		return nil
	}
	c := h.c
	var errs []string
	bound := h.s.cfg.ShutdownTimeout
	// After a failed check the verdict is decided: a driver of another
	// process gets a short grace to shut down, then its process group is
	// killed, so that a failure does not also cost a library's slow close.
	cut := ginkgo.CurrentSpecReport().Failed() && c.Pid() != 0
	if cut {
		bound = min(bound, failedShutdownGrace)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), bound)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		if cut && ctx.Err() != nil {
			ginkgo.AddReportEntry("notes", ginkgo.ReportEntryVisibilityFailureOrVerbose,
				fmt.Sprintf("teardown: the spec had failed, and the driver, still shutting down after %s, was killed (%v)", bound, err))
		} else {
			errs = append(errs, fmt.Sprintf("the driver did not shut down cleanly: %v", err))
		}
	}
	for _, err := range h.s.validator.ValidateTranscript(c.Transcript()) {
		errs = append(errs, fmt.Sprintf("protocol: schema: %v", err))
	}
	for _, err := range c.Problems() {
		errs = append(errs, fmt.Sprintf("protocol: %v", err))
	}
	// The event vocabulary (docs/DRIVER.md section 6): no attribute a kind
	// does not list, enumerated values from their lists. Each problem once.
	// The attribute table is closed from mcplife-driver/2 on; a driver of
	// version 1 is held to its own version's rules, so there it is a note.
	seen := map[string]bool{}
	closed := true
	if hello := c.HelloResult(); hello != nil && hello.Protocol == driver.ProtocolVersion1 {
		closed = false
	}
	var notes []string
	for _, e := range c.Events() {
		if err := event.CheckDocumented(e); err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			p := fmt.Sprintf("protocol: event vocabulary (docs/DRIVER.md section 6): event seq %d: %s", e.Seq, strings.ReplaceAll(err.Error(), "\n", "; "))
			if closed {
				errs = append(errs, p)
			} else {
				notes = append(notes, p)
			}
		}
	}
	if len(notes) > 0 {
		ginkgo.AddReportEntry("notes", ginkgo.ReportEntryVisibilityFailureOrVerbose,
			fmt.Sprintf("%s (not a failure: the attribute table is closed from %s on)", strings.Join(notes, "\n"), driver.ProtocolVersion))
	}
	h.lastClient = c
	h.c = nil
	return errs
}
