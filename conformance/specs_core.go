package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/runtime/event"
)

// Requirements of the core profile: every implementation.

// builtinTools are the raw names of the fixture's built-in tools, sorted.
func builtinTools() []string {
	var out []string
	for _, t := range fixture.Tools() {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

// listedCount sums the tools/list pages the fixture answered in one launch.
func listedCount(j JournalEntries, launch int) int {
	n := 0
	for _, e := range j.Of("tools-list") {
		if e.Launch == launch {
			n += e.Int("count")
		}
	}
	return n
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

var _ = Spec(Requirement{
	ID: "CORE-CONNECT-001", Level: Must, Profile: driver.ProfileCore, Area: "connect", Eras: Legacy,
	Statement: "An implementation MUST connect a stdio server with the MCP handshake (initialize, then notifications/initialized, then tools/list) and expose exactly the tools the server listed.",
	Source:    Source{"seed 000", "connectToServer() performs MCP initialize + notifications/initialized ... call listTools(connection)"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	rep := h.Open("main")
	h.Verify(Response, contains(rep.Ready, "fx"), "the start report lists the server as ready", "ready=%v failed=%v", rep.Ready, rep.Failed)
	j := h.AwaitJournal("fx", "tools-list", 1)
	order := []string{}
	for _, e := range j {
		switch e.Kind {
		case "initialize", "initialized", "tools-list":
			if len(order) == 0 || order[len(order)-1] != e.Kind {
				order = append(order, e.Kind)
			}
		}
	}
	h.Verify(Journal, slices.Equal(order, []string{"initialize", "initialized", "tools-list"}),
		"the server saw initialize, initialized and tools/list in that order", "%v", order)
	h.Verify(Journal, j.Count("initialize") == 1 && j.Launches() != nil && len(j.Launches()) == 1,
		"one launch and one handshake", "launches=%d initialize=%d", len(j.Launches()), j.Count("initialize"))
	var raw []string
	for _, t := range h.Tools("main") {
		if t.Server == "fx" {
			raw = append(raw, t.Tool)
		}
	}
	sort.Strings(raw)
	listed := listedCount(j, 1)
	h.Verify(Journal, len(raw) == listed && slices.Equal(raw, builtinTools()),
		"the session exposes exactly the tools the server listed", "listed %d, exposed %v", listed, raw)
})

var _ = Spec(Requirement{
	ID: "CORE-CONNECT-004", Level: Must, Profile: driver.ProfileCore, Area: "connect", Eras: Modern,
	Statement: "An implementation MUST connect a stdio server of the stateless era (2026-07-28) without the initialize handshake, naming the protocol version in the _meta of every request, and expose exactly the tools the server listed.",
	Source:    Source{"MCP 2026-07-28", "no initialize / notifications/initialized handshake: every request carries _meta[\"io.modelcontextprotocol/protocolVersion\"] (changelog, SEP-2575)"},
}, func(h *H) {
	// The fixture speaks the modern era only: it refuses initialize.
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	rep := h.Open("main")
	h.Verify(Response, contains(rep.Ready, "fx"), "the start report lists the server as ready", "ready=%v failed=%v errors=%v", rep.Ready, rep.Failed, rep.Errors)
	j := h.AwaitJournal("fx", "tools-list", 1)
	h.Verify(Journal, j.Count("initialize") == 0 && j.Count("initialized") == 0 && len(j.Launches()) == 1,
		"one launch and no initialize handshake", "launches=%d initialize=%d initialized=%d", len(j.Launches()), j.Count("initialize"), j.Count("initialized"))
	var requests, unversioned []string
	for _, e := range j.Of("received") {
		if e.Str("id") == "" {
			continue // a notification
		}
		requests = append(requests, e.Str("method"))
		if e.Str("protocolVersion") != fixture.ModernProtocolVersion {
			unversioned = append(unversioned, fmt.Sprintf("%s (%q)", e.Str("method"), e.Str("protocolVersion")))
		}
	}
	h.Verify(Journal, contains(requests, "tools/list") && len(unversioned) == 0,
		"every request named "+fixture.ModernProtocolVersion+" in its _meta", "requests %v, without the version: %v", requests, unversioned)
	var raw []string
	for _, t := range h.Tools("main") {
		if t.Server == "fx" {
			raw = append(raw, t.Tool)
		}
	}
	sort.Strings(raw)
	listed := listedCount(j, 1)
	h.Verify(Journal, len(raw) == listed && slices.Equal(raw, builtinTools()),
		"the session exposes exactly the tools the server listed", "listed %d, exposed %v", listed, raw)
})

var _ = Spec(Requirement{
	ID: "CORE-CONNECT-002", Level: Must, Profile: driver.ProfileCore, Area: "connect", Eras: Both,
	Statement: "An implementation MUST follow tools/list pagination and expose the tools of every page.",
	Source:    Source{"seed 000", "Per-server connect pipeline: call listTools(connection); cache tool definitions"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_EXTRA_TOOLS": "25", "MCP_FIXTURE_PAGE_SIZE": "10"})}})
	h.Open("main")
	j := h.AwaitJournal("fx", "tools-list", 4)
	pages := j.Of("tools-list")
	withCursor := len(j.Where("tools-list", "cursor", "true"))
	h.Verify(Journal, len(pages) >= 4 && withCursor >= 3, "the server answered every page, each later page asked for with its cursor",
		"%d pages, %d with a cursor", len(pages), withCursor)
	n := len(h.ToolNames("main", "fx"))
	h.Verify(Journal, n == listedCount(j, 1) && n == 9+25, "the session exposes the tools of every page", "exposed %d of %d listed", n, listedCount(j, 1))
})

var _ = Spec(Requirement{
	ID: "CORE-CONFIG-001", Level: Must, Profile: driver.ProfileCore, Area: "config", Eras: Both,
	Statement: "An implementation MUST skip an invalid server entry with a config.error naming the server and field, list it in status as failed, and still connect the valid servers of the same configuration.",
	Source:    Source{"seed 000", "Invalid server config | Server skipped with validation error entry | Best-effort per server"},
}, func(h *H) {
	bad := h.Fixture("bad", nil).With("url", "http://127.0.0.1:9/mcp") // command and url together
	h.Start(Setup{Servers: map[string]Server{"good": h.Fixture("good", nil), "bad": bad}})
	errs := h.Find(Ev(event.ConfigError, "bad"))
	field := ""
	if len(errs) > 0 {
		field, _ = errs[0].Get("field")
	}
	h.Verify(Events, len(errs) > 0 && field != "", "a config.error names the server and the field", "%d config.error events, field %q", len(errs), field)
	rep := h.Open("main")
	h.AwaitJournal("good", Handshake, 1)
	h.Verify(Journal, contains(rep.Ready, "good"), "the valid server connects", "ready=%v", rep.Ready)
	h.Verify(Journal, len(h.Journal("bad").Launches()) == 0, "the invalid server is never launched", "%d launches", len(h.Journal("bad").Launches()))
	st := h.Status("bad")
	h.Verify(Response, st.State == "failed" && st.Error != "", "status lists the invalid server as failed with an error", "state=%s error=%q", st.State, st.Error)
})

var _ = Spec(Requirement{
	ID: "CORE-CONFIG-002", Level: Must, Profile: driver.ProfileCore, Area: "config", Eras: Both,
	Statement: "An implementation MUST NOT launch a server whose configuration says \"enabled\": false, and status MUST list it as disabled.",
	Source:    Source{"seed 002", "Treat enabled: false as hard-off: server is omitted from runtime connect set"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"on": h.Fixture("on", nil), "off": h.Fixture("off", nil).With("enabled", false)}})
	rep := h.Open("main")
	h.AwaitJournal("on", Handshake, 1)
	h.Verify(Journal, len(h.Journal("off").Launches()) == 0, "the disabled server is never launched while its sibling is",
		"off: %d launches; report ready=%v", len(h.Journal("off").Launches()), rep.Ready)
	h.Verify(Events, h.Count(Ev(event.ServerDisabled, "off")) == 1, "server.disabled is reported", "%d events", h.Count(Ev(event.ServerDisabled, "off")))
	st := h.Status("off")
	h.Verify(Response, st.State == "disabled", "status lists it as disabled", "state=%s", st.State)
	h.Verify(Response, len(h.ToolNames("main", "off")) == 0, "it exposes no tools", "%v", h.ToolNames("main", "off"))
})

var _ = Spec(Requirement{
	ID: "CORE-NAMING-001", Level: Must, Profile: driver.ProfileConventions, Formerly: driver.ProfileCore, Area: "naming", Eras: Both,
	Statement: "An implementation MUST expose each tool as mcp_<server>_<tool> with both parts lower-cased, every run of other characters than [a-z0-9_] replaced by one underscore and no underscore left at the start or end of a part, and route calls of that name to the raw tool.",
	Source:    Source{"reference semantics", "Tool name: lowercase; runs of characters outside [a-z0-9_] become _; repeated _ collapse; leading/trailing _ trimmed (seed 002: mcp_<sanitized_server_name>_<sanitized_tool_name>)"},
}, func(h *H) {
	// Two more raw names start (and one ends) with characters outside
	// [a-z0-9]: nothing of them may survive as an underscore.
	h.Start(Setup{Servers: map[string]Server{"Docs-Server..v2": h.Fixture("docs", Knobs{"MCP_FIXTURE_TOOL_NAMES": "_Leading,--Dash..Run--"})}})
	h.Open("main")
	h.AwaitJournal("docs", "tools-list", 1)
	var got, want []string
	for _, t := range h.Tools("main") {
		if t.Server == "Docs-Server..v2" {
			got = append(got, t.Name)
		}
	}
	for _, raw := range builtinTools() {
		want = append(want, "mcp_docs_server_v2_"+raw)
	}
	want = append(want, "mcp_docs_server_v2_leading", "mcp_docs_server_v2_dash_run")
	sort.Strings(got)
	sort.Strings(want)
	h.Verify(Response, slices.Equal(got, want), "every tool is exposed as mcp_docs_server_v2_<tool>, _Leading as ..._leading and --Dash..Run-- as ..._dash_run", "%v", got)
	r := h.CallNow("main", "mcp_docs_server_v2_echo", map[string]any{"text": "routed"})
	starts := h.AwaitJournal("docs", "call-start", 1).Of("call-start")
	h.Verify(Journal, starts[0].Str("tool") == "echo" && !r.Result.IsError, "the exposed name reaches the raw tool", "server saw %q, isError=%v", starts[0].Str("tool"), r.Result.IsError)
	r = h.CallNow("main", "mcp_docs_server_v2_dash_run", map[string]any{"text": "routed"})
	starts = h.AwaitJournal("docs", "call-start", 2).Of("call-start")
	h.Verify(Journal, starts[1].Str("tool") == "--Dash..Run--" && !r.Result.IsError, "mcp_docs_server_v2_dash_run reaches the raw tool --Dash..Run--", "server saw %q, isError=%v", starts[1].Str("tool"), r.Result.IsError)
})

var _ = Spec(Requirement{
	ID: "CORE-NAMING-002", Level: Must, Profile: driver.ProfileConventions, Formerly: driver.ProfileCore, Area: "naming", Eras: Both,
	Statement: "An implementation MUST strip a redundant <server>_ prefix from a tool name once when building its exposed name.",
	Source:    Source{"seed 002", "redundant <server>_ prefix in tool name is stripped once"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"tool": h.Fixture("tool", Knobs{"MCP_FIXTURE_EXTRA_TOOLS": "2"})}})
	h.Open("main")
	names := h.ToolNames("main", "tool")
	h.Verify(Response, contains(names, "mcp_tool_0001") && contains(names, "mcp_tool_0002") && contains(names, "mcp_tool_echo"),
		"tool_0001 of server tool is exposed as mcp_tool_0001, echo as mcp_tool_echo", "%v", names)
	h.CallNow("main", "mcp_tool_0002", map[string]any{"text": "x"})
	starts := h.AwaitJournal("tool", "call-start", 1).Of("call-start")
	h.Verify(Journal, starts[0].Str("tool") == "tool_0002", "the call reaches the raw tool tool_0002", "server saw %q", starts[0].Str("tool"))
})

var _ = Spec(Requirement{
	ID: "CORE-NAMING-003", Level: Should, Profile: driver.ProfileConventions, Formerly: driver.ProfileCore, Area: "naming", Eras: Both,
	Statement: "An implementation SHOULD list a session's tools sorted by exposed name, whatever order the servers connect and list them in.",
	Source:    Source{"reference semantics", "tools are sorted by name so the bytes sent to the model are stable"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{
		"zeta":  h.Fixture("zeta", nil),
		"alpha": h.Fixture("alpha", Knobs{"MCP_FIXTURE_INIT_DELAY_MS": "30"}),
	}})
	h.Open("main")
	h.AwaitJournal("alpha", "tools-list", 1)
	h.AwaitJournal("zeta", "tools-list", 1)
	names := h.ToolNames("main", "")
	h.Verify(Journal, len(names) == 18 && slices.IsSorted(names), "the 18 tools both servers listed come sorted by exposed name", "%v", names)
})

var _ = Spec(Requirement{
	ID: "CORE-APPROVAL-001", Level: Must, Profile: driver.ProfileConventions, Formerly: driver.ProfileCore, Area: "naming", Eras: Both,
	Statement: "An implementation MUST mark every MCP tool as requiring approval unless its configuration says otherwise.",
	Source:    Source{"seed 004", "Every MCP tool is registered with requiresApproval: true"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	h.AwaitJournal("fx", "tools-list", 1)
	var without []string
	tools := h.Tools("main")
	for _, t := range tools {
		if !t.RequiresApproval {
			without = append(without, t.Name)
		}
	}
	h.Verify(Journal, len(tools) == 9 && len(without) == 0, "all 9 listed tools require approval", "%d tools, without approval: %v", len(tools), without)
})

var _ = Spec(Requirement{
	ID: "CORE-SCHEMA-001", Level: Must, Profile: driver.ProfileConventions, Formerly: driver.ProfileCore, Area: "schema", Eras: Both,
	Statement: "An implementation MUST hand each tool's input schema to the agent as an object schema, adding an empty \"properties\" object where the server's object schema has none.",
	Source:    Source{"seed 002", "convertSchema() keeps MCP JSON Schema mostly as-is but patches object schemas missing properties with {}"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	h.AwaitJournal("fx", "tools-list", 1)
	schemas := map[string]map[string]any{}
	for _, t := range h.Tools("main") {
		var m map[string]any
		_ = json.Unmarshal(t.InputSchema, &m)
		schemas[t.Tool] = m
	}
	inject := schemas["inject"]
	_, hasProps := inject["properties"]
	h.Verify(Journal, inject["type"] == "object" && hasProps, "the argument-less inject tool gets type object with properties", "%v", inject)
	echo := schemas["echo"]
	props, _ := echo["properties"].(map[string]any)
	_, hasText := props["text"]
	h.Verify(Response, hasText, "a schema that has properties keeps them", "%v", echo)
})

var _ = Spec(Requirement{
	ID: "CORE-RESULT-001", Level: Must, Profile: driver.ProfileCore, Area: "results", Eras: Both,
	Statement: "An implementation MUST hand a successful tool result to the agent as a non-error result carrying the server's text.",
	Source:    Source{"seed 002", "MCPTool.execute() calls MCP tools/call, flattens MCP content into displayable text"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "hello from the agent"})
	end := h.AwaitJournal("fx", "call-end", 1).Last("call-end")
	h.Verify(Journal, end.Str("outcome") == "ok" && end.Str("tool") == "echo", "the server answered the call", "call-end %v", end.Fields)
	h.Verify(Response, !r.Result.IsError && r.Error == nil && strings.Contains(r.Result.Text, "hello from the agent"),
		"the agent gets the text as a non-error result", "isError=%v error=%v text=%q", r.Result.IsError, r.Error, r.Result.Text)
})

var _ = Spec(Requirement{
	ID: "CORE-RESULT-002", Level: Must, Profile: driver.ProfileCore, Area: "results", Eras: Both,
	Statement: "An implementation MUST hand a result the server marks isError to the agent as an error result whose text carries the server's message, without treating it as a failure of the server.",
	Source:    Source{"seed 002", "maps server-reported isError to Error: ... text result"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	r := h.CallNow("main", "mcp_fx_fail", map[string]any{"message": "quota exceeded"})
	end := h.AwaitJournal("fx", "call-end", 1).Last("call-end")
	h.Verify(Journal, end.Str("outcome") == "tool-error", "the server answered with an isError result", "call-end %v", end.Fields)
	h.Verify(Response, r.Result.IsError && r.Error == nil && strings.Contains(r.Result.Text, "quota exceeded"),
		"the agent gets an error result with the message and no failure code", "isError=%v error=%v text=%q", r.Result.IsError, r.Error, r.Result.Text)
	r2 := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "still here"})
	j := h.Journal("fx")
	h.Verify(Journal, !r2.Result.IsError && len(j.Launches()) == 1, "the same server process answers the next call", "launches=%d", len(j.Launches()))
})

var _ = Spec(Requirement{
	ID: "CORE-RESULT-003", Level: Must, Profile: driver.ProfileConventions, Formerly: driver.ProfileCore, Area: "results", Eras: Both,
	Statement: "An implementation MUST turn a JSON-RPC error of tools/call into a failed result whose text starts with \"MCP error:\", and keep the server connected.",
	Source:    Source{"seed 002", "maps thrown transport/runtime failures to MCP error: ..."},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	r := h.CallNow("main", "mcp_fx_fail", map[string]any{"message": "backend down", "rpc": true})
	end := h.AwaitJournal("fx", "call-end", 1).Last("call-end")
	h.Verify(Journal, end.Str("outcome") == "rpc-error", "the server answered with a JSON-RPC error", "call-end %v", end.Fields)
	h.Verify(Response, r.Result.IsError && r.Error != nil && strings.Contains(r.Result.Text, "MCP error:") && strings.Contains(r.Result.Text, "backend down"),
		"the agent gets a failed result starting MCP error: with the server's message", "error=%v text=%q", r.Error, r.Result.Text)
	r2 := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "next"})
	h.Verify(Journal, !r2.Result.IsError && len(h.Journal("fx").Launches()) == 1, "the same server process answers the next call", "launches=%d", len(h.Journal("fx").Launches()))
})

var _ = Spec(Requirement{
	ID: "CORE-RESULT-004", Level: Must, Profile: driver.ProfileCore, Area: "results", Eras: Both,
	Statement: "An implementation MUST fail a call of a tool the session does not expose with unknown_tool, without sending anything to any server.",
	Source:    Source{"seed 004", "executeToolUses looks up the tool via MCPManager.getTool(name)"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	r := h.CallNow("main", "mcp_fx_no_such_tool", nil)
	h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeUnknownTool), "the outcome is unknown_tool", "error=%v", r.Error)
	h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "marker"})
	j := h.AwaitJournal("fx", "call-start", 1)
	h.Verify(Journal, j.Count("call-start") == 1 && j.Of("call-start")[0].Str("tool") == "echo", "only the later echo call reached the server", "%d call-start entries", j.Count("call-start"))
})

var _ = Spec(Requirement{
	ID: "CORE-TIMEOUT-001", Level: Must, Profile: driver.ProfileCore, Area: "timeout", Timing: true, Eras: Both,
	Statement: "An implementation MUST fail a call that outlasts its tool timeout with mcp_tool_timeout when the timeout passes, and not before.",
	Source:    Source{"seed 001", "MCP client requestTimeoutMs stays padded (>150 % of the tool timeout) so the agent's watchdog fires first and can make this decision deliberately"},
}, func(h *H) {
	timeout := h.D(2000)
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_HANG_MS": "600000"})},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(timeout)},
	})
	h.Open("main")
	id := h.Call("main", "mcp_fx_test", map[string]any{"text": "slow"})
	h.AwaitJournal("fx", "hang-start", 1)
	started := h.Await(Ev(event.ToolCallStarted, "fx"))
	early := timeout - 1
	if !h.Virtual() {
		early = timeout / 2
	}
	h.Pass(early)
	h.AwaitTimerDue(timeout-early, "the call's tool timeout")
	h.Verify(Response, !h.HasResult(id), "the call is still running before its timeout", "%s after %d ms", pick(h.HasResult(id), "finished", "running"), early)
	h.Pass(timeout - early)
	r := h.Result(id)
	h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeToolTimeout), "the call fails with mcp_tool_timeout", "error=%v", r.Error)
	to := h.Await(Ev(event.ToolTimeout, "fx"))
	h.VerifyElapsed(Events, "tool.timeout comes one tool timeout after tool.call_started", to.At-started.At, time.Duration(timeout)*time.Millisecond)
	j := h.Journal("fx")
	h.Verify(Journal, j.Count("call-end") == 0 || j.Last("call-end").Str("outcome") != "ok", "the server never completed the call", "call-end %v", j.Last("call-end").Fields)
})

var _ = Spec(Requirement{
	ID: "CORE-TIMEOUT-002", Level: Must, Profile: driver.ProfileCore, Area: "timeout", Timing: true, Eras: Both,
	Statement: "An implementation MUST apply a per-call timeout to that call only, instead of the default tool timeout.",
	Source:    Source{"field failure 7", "Request timeout default of 60 s kills long tools unless per-call timeouts are set. Needs: separate connect and call timeouts"},
}, func(h *H) {
	short := h.D(1000)
	h.Start(Setup{
		Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_HANG_MS": "600000"})},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(h.D(60000))},
	})
	h.Open("main")
	long := h.Call("main", "mcp_fx_test", map[string]any{"text": "default"})
	quick := h.CallTimeout("main", "mcp_fx_test", map[string]any{"text": "short"}, Ms(short))
	h.AwaitJournal("fx", "hang-start", 2)
	h.Pass(short)
	r := h.Result(quick)
	h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeToolTimeout), "the call with the short timeout fails with mcp_tool_timeout", "error=%v", r.Error)
	// Bound: the short call's result; the long call's timeout is 59 s away.
	h.Verify(Response, !h.HasResult(long), "the call under the default timeout is still running", "%s", pick(h.HasResult(long), "finished", "running"))
	h.Verify(Journal, len(h.Journal("fx").Launches()) == 1 && h.Journal("fx").Count("hang-start") == 2, "both calls reached the one server process", "launches=%d", len(h.Journal("fx").Launches()))
})

var _ = Spec(Requirement{
	ID: "CORE-TIMEOUT-003", Level: Must, Profile: driver.ProfileCore, Area: "timeout", Eras: Both,
	Statement: "An implementation MUST NOT time out the calls of a server whose configuration says \"toolTimeout\": 0 (no tool timeout), while the other servers keep the default tool timeout.",
	Source:    Source{"field failure 7", "Request timeout default of 60 s kills long tools unless per-call timeouts are set. Needs: separate connect and call timeouts"},
	// The virtual clock gives the negative check its bound: the witness
	// call on a server with the default timeout times out at the instant
	// the disabled one would have.
	Needs: []driver.Capability{driver.CapVirtualClock},
}, func(h *H) {
	timeout := h.D(1000)
	h.Start(Setup{
		Servers: map[string]Server{
			"off": h.Fixture("off", nil).With("toolTimeout", 0),
			"fx":  h.Fixture("fx", nil),
		},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(timeout)},
	})
	h.Open("main")
	long := h.Call("main", "mcp_off_sleep", map[string]any{"ms": 600000})
	witness := h.Call("main", "mcp_fx_sleep", map[string]any{"ms": 600000})
	h.AwaitJournal("off", "call-start", 1)
	h.AwaitJournal("fx", "call-start", 1)
	h.Await(Ev(event.ToolCallStarted, "off"))
	h.Await(Ev(event.ToolCallStarted, "fx"))
	h.AwaitTimerDue(timeout, "the witness call's tool timeout")
	h.Pass(timeout)
	r := h.Result(witness)
	h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeToolTimeout), "the call under the default timeout fails with mcp_tool_timeout", "error=%v", r.Error)
	h.Pass(10 * timeout)
	// Bound: a later call answered after the clock passed eleven default
	// timeouts.
	r2 := h.CallNow("main", "mcp_off_echo", map[string]any{"text": "later"})
	h.Verify(Response, r2.Error == nil, "a later call on the server with toolTimeout 0 answers", "error=%v", r2.Error)
	seen := "running"
	if h.HasResult(long) {
		seen = fmt.Sprintf("finished with error=%v", h.Result(long).Error)
	}
	h.Verify(Response, seen == "running", "the call of the server with toolTimeout 0 is still running after eleven default timeouts", "%s", seen)
	h.Verify(Events, h.Count(Ev(event.ToolTimeout, "off")) == 0, "no tool.timeout names the server with toolTimeout 0", "%d tool.timeout events", h.Count(Ev(event.ToolTimeout, "off")))
	h.Verify(Response, h.Cancel(long), "tool.cancel finds that call running", "not running")
	rl := h.Result(long)
	h.Verify(Response, rl.Error != nil && rl.Error.Code == string(driver.OutcomeAborted), "the cancelled call ends aborted", "error=%v", rl.Error)
})

var _ = Spec(Requirement{
	ID: "CORE-PROGRESS-001", Level: Must, Profile: driver.ProfileCore, Area: "handlers", Eras: Both,
	Statement: "An implementation MUST send a progress token with each tool call to a server whose configuration says \"progress\": true and report each notifications/progress for that call as tool.progress naming the call; it MUST NOT send a token to a server without the setting.",
	Source:    Source{"issue 14", "progress notifications, off by default and enabled per server"},
	Needs:     []driver.Capability{driver.CapHostHandlers},
}, func(h *H) {
	host := Knobs{"MCP_FIXTURE_HOST_TOOLS": "1"}
	h.Start(Setup{Servers: map[string]Server{
		"fx":  h.Fixture("fx", host).With("progress", true),
		"off": h.Fixture("off", host),
	}})
	h.Open("main")
	// Twelve steps: the values are reported as the server sent them
	// (DRIVER.md, tool.progress), "12" and not a rounded "1e+01".
	const steps = 12
	id := h.Call("main", "mcp_fx_progress", map[string]any{"steps": steps})
	r := h.Result(id)
	h.Verify(Response, r.Error == nil && !r.Result.IsError, "the progress call answers", "error=%v isError=%v", r.Error, r.Result.IsError)
	sent := h.AwaitJournal("fx", "progress-sent", 1).Last("progress-sent")
	h.Verify(Journal, sent.Bool("token") && sent.Int("steps") == steps, "the call carried a progress token and the server sent 12 notifications", "progress-sent %v", sent.Fields)
	for i := 1; i <= steps; i++ {
		e := h.Await(Ev(event.ToolProgress, "fx", "tool", "mcp_fx_progress", "progress", fmt.Sprint(i), "total", fmt.Sprint(steps)))
		// The call is the harness's callId where the implementation can
		// carry it (DRIVER.md, tool.progress), else its own.
		call, _ := e.Get("call")
		h.Verify(Events, call != "", fmt.Sprintf("tool.progress %d of %d names the call", i, steps), "call %q (the harness's id was %q)", call, id)
	}
	r2 := h.CallNow("main", "mcp_off_progress", map[string]any{"steps": 3})
	h.Verify(Response, r2.Error == nil, "the call to the server without the setting answers", "error=%v", r2.Error)
	off := h.AwaitJournal("off", "progress-sent", 1).Last("progress-sent")
	h.Verify(Journal, !off.Bool("token"), "the server without the setting got no progress token", "progress-sent %v", off.Fields)
	h.Verify(Events, h.Count(Ev(event.ToolProgress, "off")) == 0, "no tool.progress names the server without the setting", "%d tool.progress events", h.Count(Ev(event.ToolProgress, "off")))
})

var _ = Spec(Requirement{
	ID: "CORE-CANCEL-001", Level: Must, Profile: driver.ProfileCore, Area: "cancel", Eras: Both,
	Statement: "An implementation MUST end a call the caller cancels with aborted, handing the agent no result text, tell the server to cancel the request, and keep the server running.",
	Source:    Source{"seed 000", "convert transport/tool errors into MCP error: ... tool content (abort remains abort)"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	id := h.Call("main", "mcp_fx_sleep", map[string]any{"ms": 600000})
	h.AwaitJournal("fx", "call-start", 1)
	running := h.Cancel(id)
	h.Verify(Response, running, "tool.cancel finds the call running", "running=%v", running)
	r := h.Result(id)
	h.Verify(Response, r.Result.Aborted && r.Error != nil && r.Error.Code == string(driver.OutcomeAborted), "the call ends aborted", "aborted=%v error=%v", r.Result.Aborted, r.Error)
	// Abort remains abort: no "MCP error:" body was built for the agent,
	// not even one left out of the text afterwards (originalChars measures
	// the body before truncation).
	h.Verify(Response, r.Result.Text == "" && r.Result.OriginalChars == 0 && !r.Result.Truncated, "the aborted call hands the agent no body: empty text, originalChars 0",
		"text %q, originalChars %d, truncated %v", r.Result.Text, r.Result.OriginalChars, r.Result.Truncated)
	end := h.AwaitJournal("fx", "call-end", 1).Last("call-end")
	h.Verify(Journal, end.Str("outcome") == "cancelled", "the server saw the request cancelled", "call-end %v", end.Fields)
	r2 := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "after"})
	h.Verify(Journal, !r2.Result.IsError && len(h.Journal("fx").Launches()) == 1, "the same process answers the next call", "launches=%d", len(h.Journal("fx").Launches()))
})

var _ = Spec(Requirement{
	ID: "CORE-FAILFAST-001", Level: Must, Profile: driver.ProfileCore, Area: "failfast", Eras: Both,
	Statement: "An implementation MUST fail a call in flight with mcp_connection_lost as soon as its stdio server dies, not when the call's timeout passes.",
	Source:    Source{"field failure 3", "A dead stdio server is detected within half a second, but calls already in flight hang until their 30-minute tool timeout. Needs: in-flight calls fail fast"},
}, func(h *H) {
	timeout := h.startWithToolTimeout(h.Fixture("fx", nil))
	h.Open("main")
	h.crashEndsCallAtOnce(timeout, "the call ends without waiting for its timeout")
})

var _ = Spec(Requirement{
	ID: "CORE-FAILFAST-002", Level: Must, Profile: driver.ProfileCore, Area: "failfast", Eras: Both,
	Statement: "An implementation MUST notice a stdio server's death by the process's exit, not by the end of its output pipes: when a process the server started outside its process group still holds the server's stdout and stderr, a call in flight when the server dies MUST fail with mcp_connection_lost as soon as it dies, and process.exited MUST be reported.",
	Source:    Source{"field failure 3", "A dead stdio server is detected within half a second, but calls already in flight hang until their 30-minute tool timeout. Needs: in-flight calls fail fast"},
}, func(h *H) {
	timeout := h.startWithToolTimeout(h.Fixture("fx", Knobs{"MCP_FIXTURE_ESCAPED_CHILD": "1"}).With("restart", "never"))
	h.Open("main")
	j := h.AwaitJournal("fx", "child-started", 1)
	pid, child := j.PIDs()[0], j.Last("child-started").Int("childPid") // teardown kills it (killEscaped)
	h.AwaitJournal("fx", "tools-list", 1)
	h.Verify(Journal, child > 0 && h.Alive(child), "the server left a process outside its group that holds its stdout and stderr", "child %d", child)
	h.crashEndsCallAtOnce(timeout, "the call ends while the escaped process still holds the pipes")
	h.Verify(Process, h.Alive(child), "the escaped process was still running, holding the pipes, when the call ended", "child %d", child)
	h.Await(Ev(event.ProcessExited, "fx", "pid", fmt.Sprint(pid)))
})

var _ = Spec(Requirement{
	ID: "CORE-STATUS-003", Level: Must, Profile: driver.ProfileCore, Area: "status", Eras: Both,
	Statement: "An implementation MUST say how a stdio server's process ended: process.exited's status is exit status <code> for a process that exited with a code and killed by <signal> for one a signal ended, with planned false when the implementation did not stop it.",
	Source:    Source{"field failure 12", "After sleep/wake the UI says \"connected\" while the child is gone ... Needs: status that tracks the process"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{
		"code":   h.Fixture("code", nil).With("restart", "never"),
		"killed": h.Fixture("killed", nil).With("restart", "never"),
	}})
	h.Open("main")
	codePID := h.AwaitJournal("code", "tools-list", 1).PIDs()[0]
	killedPID := h.AwaitJournal("killed", "tools-list", 1).PIDs()[0]
	id := h.Call("main", "mcp_code_crash", map[string]any{"code": 3})
	exit := h.AwaitJournal("code", "exit", 1).Last("exit")
	h.Verify(Journal, exit.Int("code") == 3, "server code exited with code 3", "exit %v", exit.Fields)
	h.Kill(killedPID, syscall.SIGKILL)
	h.Verify(Process, h.AwaitGone(killedPID), "server killed was killed by SIGKILL", "pid %d", killedPID)
	for _, c := range []struct {
		server, status string
		pid            int
	}{
		{"code", "exit status 3", codePID},
		{"killed", "killed by SIGKILL", killedPID},
	} {
		e := h.Await(Ev(event.ProcessExited, c.server, "pid", fmt.Sprint(c.pid)))
		status, _ := e.Get("status")
		planned, _ := e.Get("planned")
		h.Verify(Events, status == c.status, fmt.Sprintf("process.exited of server %s says %s", c.server, c.status), "status %q", status)
		h.Verify(Events, planned == "false", fmt.Sprintf("and planned false for server %s", c.server), "planned %q", planned)
	}
	h.Result(id)
})

var _ = Spec(Requirement{
	ID: "CORE-STATUS-004", Level: Must, Profile: driver.ProfileCore, Area: "status", Eras: Both,
	Statement: "An implementation MUST keep a bounded tail of a stdio server's stderr and, when a server that wrote more than it keeps fails to start, quote the last line the server wrote in the start report's error, in the status and in server.failed, in whole characters: a tail of valid UTF-8 never begins inside a multi-byte character.",
	Source:    Source{"field failure 15", "Startup failures reach only a log file, never the user. Needs: per-server errors in the status surface with the child's stderr tail"},
}, func(h *H) {
	const last = "fatal: lost the database at 10.0.0.7"
	const flood = 1 << 20
	h.Start(Setup{Servers: map[string]Server{
		"fx": h.Fixture("fx", Knobs{
			"MCP_FIXTURE_STDERR_BYTES":     fmt.Sprint(flood),
			"MCP_FIXTURE_STDERR_MULTIBYTE": "1",
			"MCP_FIXTURE_STDERR_AT_EXIT":   last,
			"MCP_FIXTURE_EXIT_AFTER":       "initialize-request",
			"MCP_FIXTURE_EXIT_CODE":        "3",
		}).With("restart", "never"),
	}})
	rep := h.Open("main")
	j := h.AwaitJournal("fx", "exit", 1)
	written := j.Last("stderr-flood").Int("bytes")
	h.Verify(Journal, written == flood && j.Last("exit").Int("code") == 3, "the server wrote 1 MiB to stderr, then its last line, and exited 3 during the handshake", "flood %d bytes, exit %v", written, j.Last("exit").Fields)
	h.Verify(Response, contains(rep.Failed, "fx") && strings.Contains(rep.Errors["fx"], last), "the start report's error quotes the last line", "failed=%v error=%q", rep.Failed, tailOf(rep.Errors["fx"], 200))
	failed := h.Await(Ev(event.ServerFailed, "fx"))
	evErr, _ := failed.Get("error")
	evStderr, _ := failed.Get("stderr")
	h.Verify(Events, strings.Contains(evErr, last) || strings.Contains(evStderr, last), "server.failed quotes the last line", "error %q, stderr %q", tailOf(evErr, 200), tailOf(evStderr, 200))
	st := h.AwaitStatus("fx", "failed", func(s driver.ServerStatus) bool { return s.State == "failed" })
	h.Verify(Response, strings.Contains(st.Error, last) || strings.Contains(st.Stderr, last), "the status quotes the last line", "error %q, stderr %q", tailOf(st.Error, 200), tailOf(st.Stderr, 200))
	longest := max(len(rep.Errors["fx"]), len(evErr), len(evStderr), len(st.Error), len(st.Stderr))
	h.Verify(Response, longest < flood/2, "each quotes a bounded tail, not the whole stream", "longest quote %d bytes of the %d written", longest, flood)
	// The flood mixes characters of one, two and four bytes (MCP_FIXTURE_STDERR_MULTIBYTE), so a tail of it
	// most likely begins inside one: a tail must begin on a whole one.
	quotes := map[string]string{"start report error": rep.Errors["fx"], "server.failed error": evErr, "server.failed stderr": evStderr, "status error": st.Error, "status stderr": st.Stderr}
	broken := "none"
	for _, name := range slices.Sorted(maps.Keys(quotes)) {
		if i := brokenRuneAt(quotes[name]); i >= 0 {
			broken = fmt.Sprintf("the %s has a broken character (U+FFFD or invalid UTF-8) at byte %d: %s", name, i, around(quotes[name], i, 24))
			break
		}
	}
	h.Verify(Response, broken == "none", "each quote is whole characters: the server wrote valid UTF-8 of one- to four-byte characters, and a tail begins on a character's first byte", "%s", broken)
})

var _ = Spec(Requirement{
	ID: "CORE-STATUS-005", Level: Must, Profile: driver.ProfileCore, Area: "status", Eras: Both,
	Statement: "An implementation MUST show a stdio server that died after connecting as no longer connected in status, with an error and the tail of its stderr, up to the last line the server wrote before it died.",
	Source:    Source{"field failure 15", "Startup failures reach only a log file, never the user. Needs: per-server errors in the status surface with the child's stderr tail"},
}, func(h *H) {
	const last = "fatal: lost the database at 10.0.0.7"
	h.Start(Setup{Servers: map[string]Server{
		"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_STDERR_AT_EXIT": last}).With("restart", "never"),
	}})
	h.Open("main")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	r := h.CallNow("main", "mcp_fx_crash", map[string]any{"code": 3})
	exit := h.AwaitJournal("fx", "exit", 1).Last("exit")
	h.Verify(Journal, exit.Str("reason") == "crash", "the server wrote its last line to stderr and died mid-call", "exit %v", exit.Fields)
	h.Verify(Response, r.Error != nil || r.Result.IsError, "the call in flight fails", "error=%v text=%q", r.Error, r.Result.Text)
	h.Await(Ev(event.ProcessExited, "fx", "pid", fmt.Sprint(pid)))
	st := h.AwaitStatus("fx", "no longer connected", func(s driver.ServerStatus) bool { return s.State != "connected" })
	h.Verify(Response, st.Error != "", "the status has an error", "state %s, error %q", st.State, st.Error)
	h.Verify(Response, strings.Contains(st.Error, last) || strings.Contains(st.Stderr, last), "the status quotes the last line of its stderr", "error %q, stderr %q", tailOf(st.Error, 200), tailOf(st.Stderr, 200))
})

var _ = Spec(Requirement{
	ID: "CORE-CONNECT-003", Level: Must, Profile: driver.ProfileCore, Area: "connect", Eras: Both,
	Statement: "An implementation MUST fail a server whose handshake outlasts its connect timeout (the server's \"timeout\") when that timeout passes, not before, and report it failed with an error that says the connect timed out.",
	Source:    Source{"field failure 7", "Request timeout default of 60 s kills long tools unless per-call timeouts are set. Needs: separate connect and call timeouts"},
	// The virtual clock bounds "not before": the connect timeout's timer
	// is pending 1 ms before it fires.
	Needs: []driver.Capability{driver.CapVirtualClock},
}, func(h *H) {
	const timeout = 2000
	hold, _ := h.InitHold("slow") // never released: initialize is never answered
	h.Start(Setup{Servers: map[string]Server{
		"slow": h.Fixture("slow", Knobs{"MCP_FIXTURE_INIT_WAIT_FILE": hold}).With("timeout", timeout).With("restart", "never"),
		"fx":   h.Fixture("fx", nil),
	}})
	open := h.OpenAsync("main")
	h.AwaitJournal("slow", "init-wait", 1)
	h.AwaitJournal("fx", Handshake, 1)
	h.Advance(timeout - 1)
	h.AwaitTimerDue(1, "the connect timeout of server slow")
	st := h.Status("slow")
	h.Verify(Response, st.State != "failed", "1 ms before its connect timeout the server has not failed", "state %s, error %q", st.State, st.Error)
	h.Advance(1)
	failed := h.Await(Ev(event.ServerFailed, "slow"))
	open.Report()
	msg, _ := failed.Get("error")
	st = h.AwaitStatus("slow", "failed", func(s driver.ServerStatus) bool { return s.State == "failed" })
	saysTimeout := func(s string) bool {
		s = strings.ToLower(s)
		return strings.Contains(s, "timed out") || strings.Contains(s, "timeout")
	}
	h.Verify(Events, saysTimeout(msg), "server.failed says the connect timed out", "error %q", msg)
	h.Verify(Response, saysTimeout(st.Error), "the status error says the connect timed out", "error %q", st.Error)
	h.Verify(Journal, h.Journal("slow").Count(Handshake) == 0, "the server never completed the handshake", "%d initialized", h.Journal("slow").Count(Handshake))
})

var _ = Spec(Requirement{
	ID: "CORE-HANDSHAKE-001", Level: Must, Profile: driver.ProfileCore, Area: "connect", Eras: Both,
	Statement: "An implementation MUST report a server that exits during the handshake as failed as soon as it exits, not at the connect timeout.",
	Source:    Source{"field failure 10", "an immediate exit of the child is not noticed until initialize times out. Needs: exit detection during the handshake"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{
		"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_EXIT_AFTER": "initialize-request", "MCP_FIXTURE_EXIT_CODE": "3"}).With("restart", "never"),
	}})
	rep := h.Open("main")
	exit := h.AwaitJournal("fx", "exit", 1).Of("exit")[0]
	h.Verify(Journal, exit.Int("code") == 3, "the server died during initialize", "exit %v", exit.Fields)
	h.Verify(Response, contains(rep.Failed, "fx") && rep.Errors["fx"] != "", "session.open reports it failed with an error", "failed=%v errors=%v late=%v", rep.Failed, rep.Errors, rep.Late)
	if h.Virtual() {
		h.Verify(Response, rep.ElapsedMs == 0, "without waiting on the clock", "elapsedMs=%d", rep.ElapsedMs)
	}
})

var _ = Spec(Requirement{
	ID: "CORE-STATUS-001", Level: Must, Profile: driver.ProfileCore, Area: "status", Eras: Both,
	Statement: "An implementation MUST report in status, for a connected stdio server, the state connected, the transport, the number of tools and the real pid of its process.",
	Source:    Source{"seed 004", "getServerStatus() returns name, status, toolCount, transport, error, connectedSinceMs"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", nil)}})
	h.Open("main")
	j := h.AwaitJournal("fx", "tools-list", 1)
	st := h.Status("fx")
	h.Verify(Journal, st.PID == j.PIDs()[0], "the status pid is the process the fixture journaled", "status pid %d, journal pid %d", st.PID, j.PIDs()[0])
	h.Verify(Journal, st.Tools == listedCount(j, 1), "the tool count is what the server listed", "status %d, listed %d", st.Tools, listedCount(j, 1))
	h.Verify(Response, st.State == "connected" && st.Transport == "stdio" && st.ConnectedAtMs != nil, "state connected over stdio since a time", "%+v", st)
	started := h.Find(Ev(event.ProcessStarted, "fx", "pid", fmt.Sprint(j.PIDs()[0])))
	h.Verify(Events, len(started) == 1, "process.started carries the same pid", "%d matching events", len(started))
})

var _ = Spec(Requirement{
	ID: "CORE-STATUS-002", Level: Must, Profile: driver.ProfileCore, Area: "status", Eras: Both,
	Statement: "An implementation MUST show a server that fails to start as failed in the start report and status, with an error that quotes the tail of the server's stderr.",
	Source:    Source{"field failure 15", "Startup failures reach only a log file, never the user. Needs: per-server errors in the status surface with the child's stderr tail"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{
		"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_FAIL_ON_START": "1", "MCP_FIXTURE_STDERR": "boot failed: missing token XYZ"}).With("restart", "never"),
	}})
	rep := h.Open("main")
	exit := h.AwaitJournal("fx", "exit", 1).Of("exit")[0]
	h.Verify(Journal, exit.Int("code") == 5, "the server exited 5 before the handshake", "exit %v", exit.Fields)
	h.Verify(Response, contains(rep.Failed, "fx") && strings.Contains(rep.Errors["fx"], "missing token XYZ"),
		"the start report's error quotes the stderr", "failed=%v error=%q", rep.Failed, rep.Errors["fx"])
	st := h.Status("fx")
	h.Verify(Response, (st.State == "failed" || st.State == "restarting") &&
		(strings.Contains(st.Error, "missing token XYZ") || strings.Contains(st.Stderr, "missing token XYZ")),
		"status shows it failed with the stderr tail", "state=%s error=%q stderr=%q", st.State, st.Error, st.Stderr)
})

var _ = Spec(Requirement{
	ID: "CORE-SESSION-001", Level: Must, Profile: driver.ProfileCore, Area: "session", Eras: Both,
	Statement: "An implementation MUST open a session even when one of its servers fails, reporting that server failed and the others ready with their tools.",
	Source:    Source{"seed 000", "startup does not fail the whole agent session when individual MCP servers fail"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{
		"good": h.Fixture("good", nil),
		"bad":  h.Fixture("bad", Knobs{"MCP_FIXTURE_FAIL_ON_START": "1"}).With("restart", "never"),
	}})
	rep := h.Open("main")
	h.AwaitJournal("bad", "exit", 1)
	h.AwaitJournal("good", "tools-list", 1)
	h.Verify(Journal, contains(rep.Failed, "bad") && rep.Errors["bad"] != "", "the failing server is reported failed", "failed=%v errors=%v", rep.Failed, rep.Errors)
	h.Verify(Journal, contains(rep.Ready, "good") && len(h.ToolNames("main", "good")) == 9, "the healthy server is ready with its tools", "ready=%v", rep.Ready)
	r := h.CallNow("main", "mcp_good_echo", map[string]any{"text": "ok"})
	h.Verify(Response, !r.Result.IsError, "its tools work", "%+v", r.Result)
})

var _ = Spec(Requirement{
	ID: "CORE-TEARDOWN-001", Level: Must, Profile: driver.ProfileCore, Area: "teardown", Eras: Both,
	Statement: "An implementation MUST leave no process of a stdio server behind when it shuts down, including processes the server spawned in its process group.",
	Source:    Source{"field failure 1", "Orphaned server processes after the client exits, including whole generations of children left by wrappers. Needs: process groups, kill escalation, nothing left after Close"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_SPAWN_CHILD": "1"})}})
	h.Open("main")
	j := h.AwaitJournal("fx", "tools-list", 1)
	child := j.Last("child-started").Int("childPid")
	parent := j.PIDs()[0]
	h.Verify(Journal, child > 0 && h.Alive(child) && h.Alive(parent), "the server and the child it spawned run", "parent %d child %d", parent, child)
	h.StopDriver()
	h.Verify(Process, h.AwaitGone(parent), "the server process is gone after shutdown", "pid %d", parent)
	h.Verify(Process, h.AwaitGone(child), "the child it spawned is gone too", "pid %d", child)
})

var _ = Spec(Requirement{
	ID: "CORE-TEARDOWN-002", Level: Must, Profile: driver.ProfileCore, Area: "teardown", Needs: []driver.Capability{driver.CapSharedPool}, Eras: Both,
	Statement: "An implementation MUST stop a server that ignores stdin EOF and SIGTERM by escalating from closing stdin to SIGTERM to SIGKILL, each after a bounded wait.",
	Source:    Source{"field failure 10", "Stdio Close blocks forever waiting for the child. Needs: bounded close with escalation"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{
		"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_IGNORE_STDIN_EOF": "1", "MCP_FIXTURE_IGNORE_SIGTERM": "1"}).With("shared", false),
	}})
	h.Open("main")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	done := h.closeInBackground("main")
	eof := h.AwaitJournal("fx", "stdin-eof", 1).Last("stdin-eof")
	h.Verify(Journal, eof.Bool("ignored"), "stdin was closed first (and ignored)", "stdin-eof %v", eof.Fields)
	// The fixture may see EOF before the implementation has armed the
	// step's wait: each step is announced once its wait is armed
	// (process.signaled), so the clock is advanced only after that.
	if h.Virtual() {
		h.Await(Ev(event.ProcessSignaled, "fx", "step", "stdin-closed"))
		h.AdvanceToNext()
	}
	sig := h.AwaitJournal("fx", "signal", 1).Last("signal")
	h.Verify(Journal, sig.Str("signal") == "SIGTERM" && sig.Bool("ignored"), "then SIGTERM (ignored)", "signal %v", sig.Fields)
	if h.Virtual() {
		h.Await(Ev(event.ProcessSignaled, "fx", "step", "SIGTERM"))
		h.AdvanceToNext()
	}
	h.Verify(Process, h.AwaitGone(pid), "then the process is killed", "pid %d", pid)
	h.awaitClosed(done)
})

var _ = Spec(Requirement{
	ID: "CORE-TEARDOWN-003", Level: Must, Profile: driver.ProfileCore, Area: "teardown", Needs: []driver.Capability{driver.CapSharedPool}, Eras: Both,
	Statement: "An implementation MUST send the SIGTERM of stopping a stdio server to the server's whole process group, so that the processes the server spawned get their chance to end cleanly before the SIGKILL.",
	Source:    Source{"field failure 1", "Orphaned server processes after the client exits, including whole generations of children left by wrappers. Needs: process groups, kill escalation, nothing left after Close"},
}, func(h *H) {
	h.Start(Setup{Servers: map[string]Server{
		"fx": h.Fixture("fx", Knobs{"MCP_FIXTURE_IGNORE_STDIN_EOF": "1", "MCP_FIXTURE_IGNORE_SIGTERM": "1", "MCP_FIXTURE_SPAWN_CHILD": "1"}).With("shared", false),
	}})
	h.Open("main")
	j := h.AwaitJournal("fx", "tools-list", 1)
	pid, child := j.PIDs()[0], j.Last("child-started").Int("childPid")
	h.Verify(Journal, child > 0 && h.Alive(child), "the server spawned a child in its process group, which journals the SIGTERM it gets and lives on", "child %d", child)
	done := h.closeInBackground("main")
	h.AwaitJournal("fx", "stdin-eof", 1)
	if h.Virtual() {
		h.Await(Ev(event.ProcessSignaled, "fx", "step", "stdin-closed"))
		h.AdvanceToNext()
	}
	sig := h.AwaitJournal("fx", "signal", 1).Last("signal")
	h.Verify(Journal, sig.Str("signal") == "SIGTERM" && sig.PID == pid, "the server got SIGTERM (and ignored it)", "signal %v", sig.Fields)
	// The signal to the group reached the child too once the SIGTERM step
	// is announced (virtual clock) or the server has journaled it (real
	// clock): the child journals it at once, or the implementation goes
	// idle without it (a child killed with its group before, on the real
	// clock, journaled nothing).
	if h.Virtual() {
		h.Await(Ev(event.ProcessSignaled, "fx", "step", "SIGTERM"))
	}
	j = h.AwaitJournalFunc("fx", "the child's SIGTERM, or its end", func(j JournalEntries) bool {
		return len(childSignals(j, child, "SIGTERM")) > 0 || !h.Alive(child)
	})
	h.Verify(Journal, len(childSignals(j, child, "SIGTERM")) > 0, "the child got the SIGTERM too", "the child's signals: %v (alive %v)", childSignals(j, child, ""), h.Alive(child))
	if h.Virtual() {
		h.AdvanceToNext()
	}
	h.Verify(Process, h.AwaitGone(pid), "then the server is killed", "pid %d", pid)
	h.Verify(Process, h.AwaitGone(child), "and so is its child", "pid %d", child)
	h.awaitClosed(done)
})

// childSignals returns the signals of the child-signal entries the child
// pid journaled, in order; with name set, only those of that signal.
func childSignals(j JournalEntries, pid int, name string) []string {
	var out []string
	for _, e := range j.Of("child-signal") {
		if e.PID == pid && (name == "" || e.Str("signal") == name) {
			out = append(out, e.Str("signal"))
		}
	}
	return out
}
