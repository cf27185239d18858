package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
)

// modernLine is a request of the stateless revision (2026-07-28): its
// version and client capabilities in _meta.
func modernLine(id int, method, params string) string {
	if params != "" {
		params += ","
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`+"\n", id, method, params)
}

// harness proxy in front of a modern-only fixture (issue 26), driven over
// its stdin by a client of the stateless revision: fail-init fails the
// server's start at server/discover, exit-after=discover exits right after
// the discover reply, and without rules the journal shows the era of every
// request.
func TestProxyCLIModern(t *testing.T) {
	fx := testFixture(t)
	for _, tc := range []struct {
		name  string
		rules []string
		send  []string // one line each; the proxy's reply is read after each request
		code  int
		check [][]string // journal entries that must be there: kind, then field/value pairs
	}{
		{"fail-init", []string{"fail-init"}, []string{modernLine(1, "server/discover", "")}, 5, [][]string{
			{"open", "method", "server/discover", "era", "modern", "protocolVersion", "2026-07-28"},
			{"fault", "method", "server/discover", "rule", "fail-init"},
			{"exit", "code", "5", "reason", "fault"},
		}},
		{"exit-after=discover", []string{"exit-after=discover,code=4"}, []string{modernLine(1, "server/discover", "")}, 4, [][]string{
			{"open", "method", "server/discover", "era", "modern"},
			{"discover", "protocolVersion", "2026-07-28", "versions", "2026-07-28"},
			{"exit", "code", "4", "reason", "fault"},
		}},
		{"journal", nil, []string{modernLine(1, "tools/list", ""), modernLine(2, "tools/call", `"name":"echo","arguments":{"text":"hi"}`)}, 0, [][]string{
			{"open", "method", "tools/list", "era", "modern", "protocolVersion", "2026-07-28"},
			{"request", "method", "tools/list", "era", "modern", "protocolVersion", "2026-07-28"},
			{"tools-list"},
			{"call-start", "tool", "echo", "era", "modern", "protocolVersion", "2026-07-28"},
			{"call-end", "tool", "echo", "outcome", "ok"},
			{"exit", "code", "0", "reason", "stdin-eof"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jpath := filepath.Join(t.TempDir(), "px.journal")
			args := []string{"proxy", "-journal", jpath}
			for _, r := range tc.rules {
				args = append(args, "-fault", r)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe(t), append(args, "--", fx)...)
			cmd.Env = append(os.Environ(), roleEnv+"=cli", "GORACE=atexit_sleep_ms=0", "MCP_FIXTURE_ERA=modern")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(stdout)
			var replies []string
			for _, line := range tc.send {
				if _, err := io.WriteString(stdin, line); err != nil {
					break
				}
				reply, err := r.ReadString('\n')
				if err != nil {
					break // the proxy exited without an answer
				}
				replies = append(replies, reply)
			}
			if tc.code == 0 {
				stdin.Close() // ends the session
			}
			// A rule's exit closes stdout; stdin stays open until then,
			// so that the exit is the rule's, not stdin EOF's.
			_, _ = io.Copy(io.Discard, r)
			err = cmd.Wait()
			stdin.Close()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Fatalf("proxy exit %d, want %d\nreplies: %q\nstderr:\n%s", code, tc.code, replies, stderr.String())
			}
			es, err := journal.Read(jpath)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.check {
				found := false
				for _, e := range es {
					ok := e.Kind == want[0]
					for i := 1; ok && i+1 < len(want); i += 2 {
						ok = fmt.Sprint(e.Fields[want[i]]) == want[i+1]
					}
					found = found || ok
				}
				if !found {
					t.Errorf("no %v entry in the proxy's journal:\n%v", want, es)
				}
			}
			for _, e := range es {
				if e.Kind == "initialize" || e.Kind == "ping" || e.Fields["era"] == "legacy" {
					t.Errorf("a legacy entry in a modern session: %v", e)
				}
			}
		})
	}
}
