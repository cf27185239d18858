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
// The embedding surface:
//
//   - runtime.go: Runtime, the shared pool, status, reload, disconnect, Close
//   - session.go: Session, the startup gate, the session's tool registry
//   - options.go, errors.go, state.go: the public vocabulary
//   - limits.go: the bounds on what one server may send, and Limits
//
// One server's lifecycle:
//
//   - server.go: its state, tool publication, the grace window, close, status
//   - connect.go: one connect attempt (resolve, dial, handshake, tools/list)
//     and naming why it failed
//   - era.go: the two protocol eras: the version a connect asks first, the
//     fallback to the other era, the bound on server/discover
//   - toollist.go: tools/list at connect, within the limits
//   - compact.go: what go-sdk keeps of a connection (listed tools, list
//     results' _meta) held small
//   - connection.go: a live connection, its watch and its close
//   - supervisor.go: the restart supervisor (backoff, the restart loop, what
//     a timed-out call gets)
//   - probe.go: the health probe and its gate
//   - idleprobe.go: the optional idle health probe and RetryNow (a
//     backoff wait cut short)
//   - call.go: tool calls, their timeouts and errors
//   - listchanged.go: notifications/tools/list_changed and refreshes
//   - cachehints.go: the cache hints of list results (ttlMs, cacheScope):
//     a live list (tools, resources, prompts) listed again at its first
//     use past ttlMs, a private list kept out of the tool cache, go-sdk's
//     own list cache bypassed
//   - stats.go: the connect concurrency gauge
//
// Transports and sessions:
//
//   - sessions.go: the session strategy, stdio or remote
//   - remote_server.go: the remote strategy (expiry, needs-auth, Retry-After,
//     resending unseen requests)
//   - remote.go: the HTTP layer under go-sdk's transports
//   - resume.go: resuming a dropped response stream
//   - remote_era.go: the HTTP layer of a stateless (2026-07-28) connection:
//     a 404 is no lost session, a lost stream is re-issued, server/discover
//     judged as the era probe
//   - listen.go: the subscriptions/listen stream of a stateless connection:
//     its end, its re-opening, and a server gone while idle
//   - oauth.go: the OAuth client of auth blocks with a grant
//   - transport.go: HTTP clients and their sockets
//   - stray.go, readfail.go, eof.go: what a stdio connection reads that it
//     should not (stray replies, unreadable messages, a peer gone mid-call)
//   - inflight.go, inflight_http.go: the bound on a server's requests in
//     flight
//
// Requests a server sends to the host:
//
//   - handlers.go, handlers_client.go: elicitation, sampling, roots
//   - mrtr.go: the same, asked as multi round-trip input requests of a
//     tool result in the stateless revision (SEP-2322)
//   - handlers_lists.go: progress, resources and prompts
//
// TestDocFileMap checks that this list names every file of the package.
package host
