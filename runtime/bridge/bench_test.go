package bridge

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func BenchmarkToolName(b *testing.B) {
	cases := []struct{ name, server, tool string }{
		{"short", "github", "search_issues"},
		{"prefixed", "My-Server", "my_server.read-file"},
		{"capped", "a-very-long-server-name-for-testing", "an_extremely_long_tool_name_that_needs_the_hash_cap"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = ToolName(c.server, c.tool)
			}
		})
	}
}

func BenchmarkMapResult(b *testing.B) {
	line := "func main() { fmt.Println(\"hello, world\") } // some typical tool output line\n"
	cases := []struct {
		name string
		text string
	}{
		{"small", strings.Repeat(line, 10)},
		{"1MB", strings.Repeat(line, (1<<20)/len(line)+1)[:1<<20]},
	}
	o := Options{Server: "gh", Tool: "mcp_gh_search", MCPTool: "search"}
	for _, c := range cases {
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: c.text}}}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				_ = MapResult(res, o)
			}
		})
	}
}
