// Package host is the reference MCP lifecycle runtime: a Runtime per process
// holds one pool of MCP server connections, and a Session per agent session
// exposes their tools.
//
// The runtime discovers server configs, connects them in parallel under a
// concurrency cap, returns from session start at a bounded startup gate with
// cached deferred tools for slow servers, and keeps tools alive when servers
// hang, crash or exit: tool timeouts run a health probe and restart only when
// it fails, unexpected exits restart at once, and restarts follow a per-server
// backoff policy with a crash-loop breaker. Every wait runs on the injected
// clock and every step emits an event.
//
// # Using it
//
// New creates a Runtime from Options (config discovery, clock, event
// recorder, tool cache, timeouts); Runtime.OpenSession returns a Session
// whose StartReport says which servers were ready at the startup gate and
// whose CallTool runs a tool by its exposed name (see runtime/bridge for
// naming and result mapping). Runtime.Status, Reload, DisconnectServer and
// Acquire serve the embedding host; Close stops every server, so no process
// is left running. Errors a call can end with are *ServerError values
// carrying a stable code (CodeToolTimeout, ...) and wrapping a sentinel
// (ErrToolTimeout, ...).
//
// The package examples, checked by go test, show it end to end: Example
// embeds the runtime in an agent host (the user's config discovered, a
// session opened, a tool of a stdio MCP server listed and called, the
// lifecycle events watched through the host's own event.Recorder, and
// everything closed); the example of [Session.CallTool] shows how a call
// can end badly (an isError result, an unknown tool, a server that dies
// mid-call). Their server is the fixture MCP server of fixtures/mcp-fixture.
//
// # Files
//
//   - runtime.go: Runtime, the shared pool, status, reload, disconnect, Close
//   - session.go: Session, the startup gate, the session's tool registry
//   - server.go: one server's state machine, tool publication, grace window
//   - connection.go, transport.go: connecting over stdio, streamable HTTP and
//     SSE; stopping processes and sockets
//   - call.go, probe.go: tool calls, timeouts and health probes
//   - restart.go: restart policies and backoff
//   - listchanged.go: notifications/tools/list_changed
//   - options.go, errors.go, state.go: the public vocabulary
package host
