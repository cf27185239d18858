// Package faultenv tells the runtime packages below runtime/host (bridge,
// proc, wire) which deliberate defects a build with the mcplife_faults tag
// injects. The names come from the MCPLIFE_FAULTS variable and are listed,
// with the runtime/host ones, by host.FaultNames; the conformance suite's
// teeth test (conformance/teeth_test.go) proves that each makes the
// requirements it names fail. The shipped build (no tag) has no fault code:
// On is a constant false.
package faultenv
