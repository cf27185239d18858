// Package driver defines the language-neutral driver protocol through which
// the harness (scenarios, the conformance suite) drives an MCP-client
// implementation under test, and provides both sides of it: Serve, the
// reference driver that puts runtime/host behind the protocol, and Client,
// the harness side.
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
//   - server.go: Serve, the request loop and shutdown of the reference driver
//   - dispatch.go: parsing requests, error precedence, writing responses
//   - output.go: the serialized line writer and the event forwarder
//   - start.go, session.go, call.go, acquire.go, status.go, clock.go: the
//     reference driver's method handlers, one file per concept
//
// Package drivertest holds a canned stand-in driver for tests.
package driver
