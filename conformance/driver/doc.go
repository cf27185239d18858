// Package driver defines the language-neutral driver protocol through which
// the harness (scenarios, the conformance suite) drives an MCP-client
// implementation under test, and provides both sides of it: Serve, the
// reference driver that puts runtime/host behind the protocol, and Client,
// the harness side.
//
// A driver written in Go is a Handlers — what hello announces and one
// function per method — served by a Conn, which does the protocol:
// bounded line reads, request parsing, strict params checked against the
// schemas, the error precedence, unsupported for capabilities not
// announced, not_started before start, the bookkeeping of tool calls and
// acquires (duplicate ids, tool.cancel, release, aborting at shutdown), the
// order of output lines and the shutdown sequence. Conn.Emit writes the
// implementation's events. The reference driver is one such Handlers.
//
// The protocol is JSON lines over the driver's stdin and stdout. The harness
// sends one request per line; the driver answers each request with one
// response line and streams event, call_result and acquire_result lines as
// things happen. docs/DRIVER.md is the specification; the JSON Schemas of
// every message are embedded in this package (see Schema and Validator).
//
// # Files
//
//   - protocol.go: the vocabulary (methods, capabilities, profiles, error
//     and outcome codes) and the message types
//   - schema.go, schema/*.json: the JSON Schemas and Validator
//   - docs.go: the generated sections of docs/DRIVER.md
//   - client.go: Client, the harness side
//   - handlers.go: Handlers, CallFunc, AcquireFunc, Errorf: the API of a
//     driver written in Go
//   - conn.go: Conn, the protocol's rules for any Go driver (the request
//     loop, parsing, error precedence, calls and acquires, shutdown)
//   - output.go: the serialized line writer and the event forwarder
//   - server.go, dispatch.go: Serve, the reference driver's state and its
//     Handlers
//   - start.go, session.go, call.go, acquire.go, status.go, clock.go: the
//     reference driver's method handlers, one file per concept
//
// Package drivertest holds a canned stand-in driver for tests.
package driver
