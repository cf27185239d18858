//go:build !mcplife_faults

package bridge

// keptNameLen is the longest exposed name ToolName keeps uncapped. Builds
// with the mcplife_faults tag can shorten it by one (faults_on.go).
func keptNameLen() int { return MaxToolNameLen }
