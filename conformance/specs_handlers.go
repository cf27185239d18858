package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/mcplife/mcplife/runtime/event"
)

// Requirements about the host-side handlers a server may use (issue 14):
// sampling, roots, and the listing of resources and prompts, each off unless
// the server's config entry enables it, as the host-handlers capability
// describes (DRIVER.md). CORE-PROGRESS-001 (specs_core.go) covers progress.
// The fixture's host tools (MCP_FIXTURE_HOST_TOOLS) make the server side of
// each request and journal what it got.

const handlersSource = "issue 14"

// offered reports whether the client offered capability name (elicitation,
// roots, sampling) in server key's last initialize, with that entry.
func (h *H) offered(key, name string) (bool, map[string]any) {
	init := h.AwaitJournal(key, "initialize", 1).Last("initialize")
	return slices.Contains(strings.Split(init.Str("capabilities"), ","), name), init.Fields
}

// startOffered starts "fx", whose config sets key to value, and "off"
// without it, both with the host tools, opens session main, and, in the
// legacy era, checks that initialize offered capability to fx only. In the
// modern era the capabilities travel in each request's _meta:
// offeredInCalls checks them on the calls that asked for input.
func (h *H) startOffered(key string, value any, capability string) {
	ginkgo.GinkgoHelper()
	h.Start(Setup{Servers: map[string]Server{
		"fx":  h.Fixture("fx", hostTools(nil)).With(key, value),
		"off": h.Fixture("off", hostTools(nil)),
	}})
	h.Open("main")
	if h.Modern() {
		return
	}
	on, init := h.offered("fx", capability)
	h.Verify(Journal, on, fmt.Sprintf("the server with %q was offered %s in initialize", key, capability), "initialize %v", init)
	on, init = h.offered("off", capability)
	h.Verify(Journal, !on, fmt.Sprintf("the server without %q was not offered %s", key, capability), "initialize %v", init)
}

// offeredInCalls checks, in the modern era, that the calls of fx and off
// that asked for input (their first input-request entries, which journal
// the _meta io.modelcontextprotocol/clientCapabilities of the call) offered
// capability to fx only.
func (h *H) offeredInCalls(key, capability string) {
	ginkgo.GinkgoHelper()
	if !h.Modern() {
		return
	}
	for _, fx := range []string{"fx", "off"} {
		asked := h.AwaitJournal(fx, "input-request", 1).Of("input-request")[0]
		on := slices.Contains(strings.Split(asked.Str("capabilities"), ","), capability)
		claim := fmt.Sprintf("the server with %q was offered %s in its call's _meta", key, capability)
		if fx == "off" {
			on, claim = !on, fmt.Sprintf("the server without %q was not offered %s in its call's _meta", key, capability)
		}
		h.Verify(Journal, on, claim, "input-request %v", asked.Fields)
	}
}

// callRefused calls tool of session main, whose request to the host must
// be refused, and proves it. Legacy: the server's request failed, so the
// call ends in a tool error whose text contains failure, and the last
// entry of kind in server "off"'s journal satisfies refused (claim). Modern: the
// call ends in a failure; the server asked with a multi round-trip input
// request (input-request), and no retry carried an answer to it
// (input-response answered) nor did the tool journal one (kind).
func (h *H) callRefused(tool string, args map[string]any, failure, kind string, refused func(journal.Entry) bool, claim string) {
	ginkgo.GinkgoHelper()
	r := h.CallNow("main", tool, args)
	if !h.Modern() {
		h.Verify(Response, r.Error == nil && r.Result.IsError && strings.Contains(r.Result.Text, failure),
			"the call of the server without the setting ends in a tool error", "error=%v isError=%v text=%q", r.Error, r.Result.IsError, r.Result.Text)
		got := h.AwaitJournal("off", kind, 1).Last(kind)
		h.Verify(Journal, refused(got), claim, "%s %v", kind, got.Fields)
		return
	}
	h.Verify(Response, r.Result.IsError, "the call of the server without the setting ends in a failure",
		"error=%v isError=%v text=%q", r.Error, r.Result.IsError, r.Result.Text)
	asked := h.AwaitJournal("off", "input-request", 1).Last("input-request")
	// Bound: the call's answer came after the implementation gave up
	// asking the server, and a retry carrying an answer would have come
	// before it.
	j := h.Journal("off")
	answered := j.Where("input-response", "answered", "true")
	h.Verify(Journal, len(answered) == 0 && j.Count(kind) == 0,
		"the server without the setting had its "+kind+" input request refused: no retry carried an answer",
		"input-request %v; %d answered input-response, %d %s entries", asked.Fields, len(answered), j.Count(kind), kind)
}

// hostTools are the fixture knobs of a server with the host tools.
func hostTools(extra Knobs) Knobs {
	k := Knobs{"MCP_FIXTURE_HOST_TOOLS": "1"}
	maps.Copy(k, extra)
	return k
}

var _ = Spec(Requirement{
	ID: "CORE-SAMPLING-001", Level: Must, Profile: driver.ProfileCore, Area: "handlers", Eras: Both,
	Statement: "An implementation MUST answer a server's sampling/createMessage through the host's sampling handler when the server's configuration says \"sampling\": true (the driver's model answers `echo: <text>`, sampling.answered), and MUST NOT offer sampling to a server without the setting: its request fails and nothing answers it. In the modern era the request is a multi round-trip input request of a tool result and the capabilities travel in each request's _meta.",
	Source:    Source{handlersSource, "sampling through a pluggable callback, off by default and enabled per server"},
	Needs:     []driver.Capability{driver.CapHostHandlers},
}, func(h *H) {
	h.startOffered("sampling", true, "sampling")
	r := h.CallNow("main", "mcp_fx_sample", map[string]any{"text": "hello"})
	h.Verify(Response, r.Error == nil && !r.Result.IsError && strings.Contains(r.Result.Text, "echo: hello"),
		"the sampling server's call answers with the host's completion", "error=%v isError=%v text=%q", r.Error, r.Result.IsError, r.Result.Text)
	got := h.AwaitJournal("fx", "sampling", 1).Last("sampling")
	h.Verify(Journal, got.Str("outcome") == "ok" && got.Str("model") == "mcplife-driver",
		"the server got the completion of model mcplife-driver", "sampling %v", got.Fields)
	h.Await(Ev(event.SamplingAnswered, "fx", "outcome", "ok"))

	h.callRefused("mcp_off_sample", map[string]any{"text": "hello"}, "sampling failed", "sampling",
		func(e journal.Entry) bool { return e.Str("outcome") == "error" }, "the server without the setting got no completion")
	h.offeredInCalls("sampling", "sampling")
	// Bound: the call's answer came after the server's request failed.
	h.Verify(Events, h.Count(Ev(event.SamplingAnswered, "off", "outcome", "ok")) == 0,
		"no sampling.answered with outcome ok names the server without the setting", "%d", h.Count(Ev(event.SamplingAnswered, "off", "outcome", "ok")))
})

var _ = Spec(Requirement{
	ID: "CORE-ROOTS-001", Level: Must, Profile: driver.ProfileCore, Area: "handlers", Eras: Both,
	Statement: "An implementation MUST advertise the roots of a server's \"roots\" configuration and answer its roots/list with them (roots.listed); a server without roots MUST NOT be offered the roots capability: its roots/list fails. In the modern era roots/list is a multi round-trip input request of a tool result and the capabilities travel in each request's _meta.",
	Source:    Source{handlersSource, "roots, off by default and enabled per server"},
	Needs:     []driver.Capability{driver.CapHostHandlers},
}, func(h *H) {
	h.startOffered("roots", []string{"/srv/data", "file:///opt/shared"}, "roots")
	r := h.CallNow("main", "mcp_fx_roots", map[string]any{})
	h.Verify(Response, r.Error == nil && !r.Result.IsError, "the roots call of the server with roots answers", "error=%v text=%q", r.Error, r.Result.Text)
	got := h.AwaitJournal("fx", "roots", 1).Last("roots")
	uris := strings.Split(got.Str("uris"), ",")
	slices.Sort(uris)
	h.Verify(Journal, got.Int("count") == 2 && slices.Equal(uris, []string{"file:///opt/shared", "file:///srv/data"}),
		"the server got its two roots as file URIs", "roots %v", got.Fields)
	h.Await(Ev(event.RootsListed, "fx", "roots", "2"))

	h.callRefused("mcp_off_roots", map[string]any{}, "roots failed", "roots",
		func(e journal.Entry) bool { return e.Str("error") != "" }, "the server without roots had its roots/list refused")
	h.offeredInCalls("roots", "roots")
})

var _ = Spec(Requirement{
	ID: "CORE-LISTS-001", Level: Must, Profile: driver.ProfileCore, Area: "handlers", Eras: Both,
	Statement: "An implementation MUST list the resources and prompts of a server whose configuration says \"resources\": true and \"prompts\": true after connect (resources.listed, prompts.listed) and again after their list_changed, and MUST NOT list them for a server without the settings.",
	Source:    Source{handlersSource, "resources and prompts listing, off by default and enabled per server"},
	Needs:     []driver.Capability{driver.CapHostHandlers},
}, func(h *H) {
	listing := hostTools(Knobs{"MCP_FIXTURE_RESOURCES": "2", "MCP_FIXTURE_PROMPTS": "1"})
	h.Start(Setup{Servers: map[string]Server{
		"fx":  h.Fixture("fx", listing).With("resources", true).With("prompts", true),
		"off": h.Fixture("off", listing),
	}})
	h.Open("main")
	h.Await(Ev(event.ResourcesListed, "fx", "resources", "2", "error", ""))
	h.Await(Ev(event.PromptsListed, "fx", "prompts", "1", "error", ""))
	r := h.CallNow("main", "mcp_fx_add_listing", map[string]any{"resources": []string{"extra"}, "prompts": []string{"extra"}})
	h.Verify(Response, r.Error == nil && !r.Result.IsError, "the call that adds a resource and a prompt answers", "error=%v text=%q", r.Error, r.Result.Text)
	h.Await(Ev(event.ResourcesChanged, "fx"))
	h.Await(Ev(event.PromptsChanged, "fx"))
	if h.Virtual() {
		// The refreshes wait for the list_changed debounce on the clock.
		if p := h.Pending(); len(p) > 0 {
			h.Advance(max(p[0].Milliseconds(), 1))
		}
	}
	h.Await(Ev(event.ResourcesListed, "fx", "resources", "3"))
	h.Await(Ev(event.PromptsListed, "fx", "prompts", "2"))

	// Bound: the other server's own list_changed came and was answered
	// (its call returned) after its connect, so a listing it got would be
	// recorded by now.
	r2 := h.CallNow("main", "mcp_off_add_listing", map[string]any{"resources": []string{"extra"}})
	h.Verify(Response, r2.Error == nil, "the other server's call answers", "error=%v", r2.Error)
	h.Verify(Events, h.Count(Ev(event.ResourcesListed, "off")) == 0 && h.Count(Ev(event.PromptsListed, "off")) == 0,
		"the server without the settings was never listed", "%d resources.listed, %d prompts.listed",
		h.Count(Ev(event.ResourcesListed, "off")), h.Count(Ev(event.PromptsListed, "off")))
})
