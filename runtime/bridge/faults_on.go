//go:build mcplife_faults

package bridge

import (
	"os"
	"slices"
	"strings"
)

// keptNameLen is the longest exposed name ToolName keeps uncapped. With the
// name-cap-off-by-one fault of MCPLIFE_FAULTS (see runtime/host's
// faults_on.go) a name of exactly MaxToolNameLen characters is capped too.
func keptNameLen() int {
	if slices.Contains(strings.Split(os.Getenv("MCPLIFE_FAULTS"), ","), "name-cap-off-by-one") {
		return MaxToolNameLen - 1
	}
	return MaxToolNameLen
}
