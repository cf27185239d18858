package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcplife/mcplife/internal/fixturelink"
)

// eraWrapperMark is the second line of an era wrapper: writeEraWrapper
// recognises its own wrappers by it and never wraps one again.
const eraWrapperMark = "# mcplife scenarios: mcp-fixture in protocol era "

// writeEraWrapper writes dir/mcp-fixture, a shell script that runs the
// fixture target in protocol era era: it sets MCP_FIXTURE_ERA unless the
// server's own environment sets MCP_FIXTURE_ERA or
// MCP_FIXTURE_PROTOCOL_VERSIONS, then execs target (same pid, as the
// journal and the runtime expect). A target that is itself such a wrapper
// is read for its own target, so wrappers never nest.
func writeEraWrapper(dir, era, target string) (string, error) {
	if inner, ok := wrappedTarget(target); ok {
		target = inner
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("era wrapper: %w", err)
	}
	script := "#!/bin/sh\n" + eraWrapperMark + era + "\n" +
		"if [ -z \"${MCP_FIXTURE_ERA}${MCP_FIXTURE_PROTOCOL_VERSIONS}\" ]; then\n" +
		"\tMCP_FIXTURE_ERA=" + era + "\n\texport MCP_FIXTURE_ERA\nfi\n" +
		"# target: " + target + "\n" +
		"exec " + shellQuote(target) + " \"$@\"\n"
	p := filepath.Join(dir, fixturelink.Name)
	// No fork while the file is open for writing: a child forked then
	// would hold the write descriptor until its exec, and an exec of the
	// wrapper meanwhile fails with ETXTBSY (text file busy). Forks take
	// syscall.ForkLock for writing.
	syscall.ForkLock.RLock()
	err := os.WriteFile(p, []byte(script), 0o755)
	syscall.ForkLock.RUnlock()
	if err != nil {
		return "", fmt.Errorf("era wrapper: %w", err)
	}
	return p, nil
}

// wrappedTarget returns the fixture an era wrapper at path runs, and
// whether path is one.
func wrappedTarget(path string) (string, bool) {
	data, err := os.ReadFile(path)
	if err != nil || len(data) > 4096 || !strings.Contains(string(data), eraWrapperMark) {
		return "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if t, ok := strings.CutPrefix(line, "# target: "); ok {
			return t, true
		}
	}
	return "", false
}

// shellQuote quotes s for sh in single quotes; a quote inside s closes
// the quoted text, is written escaped, and reopens it.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// eraPath returns PATH with a directory first whose mcp-fixture runs the
// first mcp-fixture of PATH in era (writeEraWrapper, in dir). Without an
// mcp-fixture on PATH it returns PATH unchanged.
func eraPath(dir, era, path string) (string, error) {
	target, err := lookPathIn(fixturelink.Name, path)
	if err != nil {
		return path, nil // nothing to wrap: a script that launches no fixture
	}
	if _, err := writeEraWrapper(dir, era, target); err != nil {
		return "", err
	}
	return dir + string(os.PathListSeparator) + path, nil
}
