package main

import (
	"strings"
	"testing"
)

// harness proxy -upstream refuses a -listen address off loopback unless
// -allow-non-loopback says so, and says how to allow it.
func TestProxyListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.0.2.1:0"} {
		code, out, errs := harness(t, "proxy", "-upstream", "http://127.0.0.1:9/mcp", "-listen", addr)
		if code != 2 || !strings.Contains(errs, "not a loopback address") || !strings.Contains(errs, "-allow-non-loopback") || strings.Contains(out, "listening") {
			t.Errorf("proxy -listen %s: exit %d, stdout %q, stderr %q; want exit 2 and a refusal naming -allow-non-loopback", addr, code, out, errs)
		}
	}
	// The control endpoint was never loopback-optional.
	code, _, errs := harness(t, "proxy", "-control", "0.0.0.0:0", "-upstream", "http://127.0.0.1:9/mcp")
	if code != 2 || !strings.Contains(errs, "not a loopback address") {
		t.Errorf("proxy -control 0.0.0.0:0: exit %d, stderr %q", code, errs)
	}
}
