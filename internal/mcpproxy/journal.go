package mcpproxy

import "github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"

// JournalKinds lists the kinds of journal entry the proxy writes. The
// journal has the fixture's format (journal.Read reads it); kinds
// shared with the fixture mean the same thing seen from the wire.
func JournalKinds() []journal.Kind {
	return []journal.Kind{
		{Kind: "launch", Fields: "transport, mode, upstream", Meaning: "A proxy launch began; mode is `proxy`, upstream the server's command line or URL."},
		{Kind: "upstream-started", Fields: "upstreamPid", Meaning: "stdio: the upstream server process started (in its own process group)."},
		{Kind: "listening", Fields: "address, url", Meaning: "http: the proxy listens on address; clients use url."},
		{Kind: "open", Fields: "method, protocolVersion, era", Meaning: "The opening request of a session arrived, in either era (the rules' MATCH `open`): initialize (era legacy; protocolVersion as its params ask), or server/discover or the launch's first request at 2026-07-28 or later when the client sent neither (era modern; protocolVersion from its `_meta`). It comes before the request's own entry; a server/discover has no other entry until its answer (`discover`)."},
		{Kind: "discover", Fields: "protocolVersion, versions, error", Meaning: "A server/discover was answered (stdio; over http the proxy reads this one response): protocolVersion is the version the request's `_meta` asked, versions the versions the server named (supportedVersions, or the supported list of an UnsupportedProtocolVersionError), comma-joined; error, when present, the refusal (`CODE message`, `HTTP 405` for a status, `no answer`): a handshake-era server."},
		{Kind: "initialize", Fields: "protocolVersion, client, era", Meaning: "The client sent initialize (era legacy)."},
		{Kind: "initialized", Fields: "protocolVersion, era", Meaning: "The client sent notifications/initialized."},
		{Kind: "ping", Fields: "action, protocolVersion, era", Meaning: "The client sent ping: forwarded, dropped (a hang rule), errored or delayed. The stateless revision has no ping: a modern client sends none."},
		{Kind: "tools-list", Fields: "count, cursor, more", Meaning: "stdio: the server answered tools/list with count tools."},
		{Kind: "call-start", Fields: "tool, args, protocolVersion, era", Meaning: "The client sent tools/call; args is the arguments' JSON, cut to 200 bytes."},
		{Kind: "call-end", Fields: "tool, outcome, bytes, detail", Meaning: "A tools/call was answered (stdio: by the server; any transport: by an error or tool-error rule): outcome ok, tool-error, rpc-error or cancelled."},
		{Kind: "request", Fields: "method, protocolVersion, era", Meaning: "Any other client request or notification (subscriptions/listen included). In every entry of a client message, protocolVersion is the version in its `_meta` (`io.modelcontextprotocol/protocolVersion`; absent when there is none, as in the handshake era) and era is modern for a version of 2026-07-28 or later, legacy for an older one and for initialize, notifications/initialized and ping, and otherwise the era of the launch's last `open` (absent before one)."},
		{Kind: "hang-start", Fields: "ms, blocking, method, tool", Meaning: "A hang rule holds a request (ms is 0: until released)."},
		{Kind: "hang-end", Fields: "cancelled, method, tool", Meaning: "A held request ended: cancelled by the client, or forwarded because no hang rule selects it any more."},
		{Kind: "fault", Fields: "action, rule, method, tool", Meaning: "A rule acted on a message (or a timed exit fired, or POST /exit)."},
		{Kind: "rules", Fields: "op, rules", Meaning: "The control endpoint changed the rules: add, replace or clear."},
		{Kind: "drop", Fields: "stream", Meaning: "A drop rule closed the stream towards the client."},
		{Kind: "stdin-eof", Fields: "ignored", Meaning: "stdio: the client closed the proxy's stdin; the upstream is stopped."},
		{Kind: "signal", Fields: "signal, ignored", Meaning: "SIGTERM, SIGINT or SIGHUP arrived; it is passed on to the upstream's group."},
		{Kind: "upstream-exit", Fields: "code, signal", Meaning: "stdio: the upstream exited on its own (its stdout ended); the proxy exits with its code."},
		{Kind: "exit", Fields: "code, reason", Meaning: "The proxy is about to exit with code, its upstream stopped. reason: stdin-eof, upstream-exit, fault, exit-delay, signal, cancelled or error."},
	}
}
