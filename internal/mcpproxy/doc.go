// Package mcpproxy is a man-in-the-middle MCP server: it forwards JSON-RPC
// messages between a client and a real MCP server and injects faults with
// the vocabulary of the fixture's knobs (hang a method or a tool, delay,
// fail a server's start, exit after N calls or after a delay, drop the
// stream, return errors, go silent to pings). Think toxiproxy, for MCP.
//
// Both protocol eras pass through: the handshake era (initialize, ping,
// sessions) and the stateless revision 2026-07-28 (server/discover, the
// version in each request's _meta, subscriptions/listen streams, no
// session). The rule MATCH open selects the opening request of a session
// in either era, and the journal gives every client message its era.
//
// It works at the JSON-RPC message level, line-delimited for stdio
// (RunStdio) and per HTTP request for streamable HTTP and SSE (RunHTTP), so
// it is transparent to any server. Rules (Rule, ParseRule) are matched on
// the method and the tool name of each message the client sends, and can be
// switched at run time through a loopback HTTP control endpoint (Control).
// What the proxy sees is appended to a journal in the fixture's format
// (package journal reads it), so scenario tooling reads it unchanged.
package mcpproxy
