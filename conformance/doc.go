// Package conformance is the conformance suite: numbered requirements
// (MUST/SHOULD statements, each traced to a seed or field failure), each
// with a ginkgo spec that drives an MCP-client implementation through the
// driver protocol (conformance/driver, docs/DRIVER.md) and judges it only by
// responses, events, the fixture's journal and the process table.
//
// Requirements belong to profiles (driver.Profiles); a driver claims the
// profiles it means to pass and the suite runs the requirements of those
// profiles whose capabilities the driver announces. Run builds a run from a
// Config (driver command, clock mode, profile filter, baseline of expected
// failures) and returns a Result; docs/CONFORMANCE.md lists every
// requirement (generated from the registry) and explains the verdicts.
//
// Files: requirement.go (the registry and its rendering), spec.go and
// harness.go (the helpers specs use), suite.go and report.go (running and
// judging), command.go (the harness conformance command line), and
// specs_<profile>.go (the requirements of each profile).
package conformance
