// Package bridge turns the tools of MCP servers into agent-callable tools.
//
// It owns the pure, transport-free half of the MCP tool path:
//
//   - naming: ToolName maps (server, tool) to a stable, provider-safe
//     mcp_<server>_<tool> identifier of at most 64 characters;
//   - schemas: ConvertSchema passes JSON Schema through, patching object
//     schemas that lack "properties";
//   - registration: Build filters and converts one server's tools, and
//     Registry holds the tools of every server with deterministic collision
//     handling and stable ordering;
//   - results: MapResult and MapError turn a tools/call outcome into the text
//     given to the agent (render, truncate, scan for injection signals, wrap
//     in untrusted-output boundary markers — in that order).
//
// Nothing in this package performs I/O or keeps package-level mutable state.
package bridge
