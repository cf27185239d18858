package bridge

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/docsection"
)

// renderExamples renders examples of ToolName, MapResult and MapError for
// docs/DRIVER.md, so the naming and wrapping rules there are shown by the
// code itself.
func renderExamples() string {
	var b strings.Builder
	b.WriteString("<!-- Rendered from runtime/bridge (doc_test.go); do not edit by hand. -->\n\n")
	b.WriteString("| Server | MCP tool | Exposed name |\n|---|---|---|\n")
	for _, ex := range [][2]string{
		{"fixture", "echo"},
		{"github", "github_search"},
		{"My Server", "Get-Data!"},
		{"db", "__"},
		{"a.b", "x..y"},
		{"very-long-server-name-for-testing", "a_really_long_tool_name_that_goes_past_the_limit"},
	} {
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` |\n", ex[0], ex[1], ToolName(ex[0], ex[1]))
	}
	o := Options{Server: "fixture", Tool: "mcp_fixture_fail", MCPTool: "fail"}
	b.WriteString("\nA server's `isError` result with text `boom`, a JSON-RPC error `backend down`, and a tool timeout (an error carrying the runtime code `mcp_tool_timeout`):\n\n```text\n")
	b.WriteString(MapResult(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "boom"}}}, o).Text)
	b.WriteString("\n")
	b.WriteString(MapError(errors.New("backend down"), o).Text)
	b.WriteString("\n")
	b.WriteString(MapError(&docCoded{"mcp_tool_timeout", `mcp_tool_timeout:fixture: tool "fail" timed out after 2s`}, o).Text)
	b.WriteString("\n```\n")
	return b.String()
}

type docCoded struct{ code, msg string }

func (e *docCoded) Error() string     { return e.msg }
func (e *docCoded) ErrorCode() string { return e.code }

func TestExamplesDocumented(t *testing.T) {
	if err := docsection.Check("../../docs/DRIVER.md", "bridge-examples", renderExamples()); err != nil {
		t.Fatal(err)
	}
}
