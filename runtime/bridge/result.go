package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/runtime/config"
)

// DefaultMaxChars is the output limit, in characters (runes), used when
// Options.MaxChars is zero.
const DefaultMaxChars = 50_000

// Options describes the call whose outcome is mapped.
type Options struct {
	// Server is the configured server name.
	Server string
	// Tool is the exposed tool name (mcp_...).
	Tool string
	// MCPTool is the raw MCP tool name.
	MCPTool string
	// Source is where the server's configuration came from.
	Source config.Source
	// MaxChars caps the body, in runes, before wrapping: 0 means
	// DefaultMaxChars, a negative value disables truncation.
	MaxChars int
}

// Result is a tools/call outcome as handed to the agent.
type Result struct {
	// Text is the final text given to the agent: the wrapped body, or empty
	// when Aborted.
	Text string
	// IsError is set when the server reported isError or the call failed.
	IsError bool
	// Aborted is set when the caller cancelled the call; the caller surfaces
	// its own abort error instead of Text.
	Aborted bool
	// Server, Tool and MCPTool identify the call (see Options).
	Server, Tool, MCPTool string
	// Source is where the server's configuration came from.
	Source config.Source
	// Truncated is set when the body exceeded the limit.
	Truncated bool
	// OriginalChars is the body's length in runes before truncation.
	OriginalChars int
	// Signals lists the injection signals found in the (truncated) body.
	Signals []string
	// Code is the runtime error code of a failed call (e.g.
	// "mcp_restart_failed"), if the error carried one.
	Code string
}

// Coder is implemented by runtime errors that carry a stable error code.
type Coder interface {
	ErrorCode() string
}

// MapResult turns a tools/call result into the text for the agent:
//
//  1. render: text blocks verbatim, every other block (image, audio,
//     resource link, embedded resource, ...) as its JSON, joined with "\n";
//     with no content blocks, the JSON of structuredContent if any;
//  2. a server-reported isError prefixes "Error: ";
//  3. truncate to o.MaxChars runes (see Truncate);
//  4. detect injection signals on the truncated body;
//  5. Wrap, so the closing marker always survives truncation.
//
// A nil res maps like an empty result.
func MapResult(res *mcp.CallToolResult, o Options) Result {
	body := ""
	isErr := false
	if res != nil {
		body = renderContent(res)
		isErr = res.IsError
	}
	if isErr {
		if body == "" {
			body = "(no error details)"
		}
		body = "Error: " + body
	}
	r := finish(body, o)
	r.IsError = isErr
	return r
}

// MapError turns a failed tools/call into a Result.
//
// If err is the caller's own abort — errors.Is(err, context.Canceled), and
// not also a deadline (a runtime timeout is never mistaken for an abort) —
// the Result has Aborted set and empty Text. Otherwise the body is
// "MCP error: <err>", with IsError set, truncated, scanned and wrapped like a
// result. When errors.As finds a Coder, its code goes into Result.Code and
// is prefixed to the message unless the message already contains it.
func MapError(err error, o Options) Result {
	if err == nil {
		err = errors.New("unknown error")
	}
	// An error that carries a runtime code (a restart failure, a lost
	// connection) is never the caller's abort, even when its cause chain
	// holds a cancellation.
	var coder Coder
	coded := errors.As(err, &coder) && coder.ErrorCode() != ""
	if !coded && errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return Result{
			Aborted: true,
			IsError: true,
			Server:  o.Server,
			Tool:    o.Tool,
			MCPTool: o.MCPTool,
			Source:  o.Source,
		}
	}
	msg := err.Error()
	var code string
	var c Coder
	if errors.As(err, &c) {
		code = c.ErrorCode()
		if code != "" && !strings.Contains(msg, code) {
			msg = code + ": " + msg
		}
	}
	r := finish("MCP error: "+msg, o)
	r.IsError = true
	r.Code = code
	return r
}

// finish truncates, scans and wraps body.
func finish(body string, o Options) Result {
	body, truncated, orig := Truncate(body, o.MaxChars)
	tool := o.MCPTool
	if tool == "" {
		tool = o.Tool
	}
	return Result{
		Text:          Wrap(o.Server, tool, body),
		Server:        o.Server,
		Tool:          o.Tool,
		MCPTool:       o.MCPTool,
		Source:        o.Source,
		Truncated:     truncated,
		OriginalChars: orig,
		Signals:       DetectInjection(body),
	}
}

// Truncate cuts s to its first limit runes when it is longer, appending
//
//	\n[truncated: output exceeded <limit> characters; original was <n> characters]
//
// It returns the text, whether it cut, and the rune count of s. A limit of 0
// means DefaultMaxChars; a negative limit never cuts. Invalid UTF-8 bytes
// count as one character each.
func Truncate(s string, limit int) (out string, truncated bool, originalChars int) {
	if limit == 0 {
		limit = DefaultMaxChars
	}
	// Fast path: a string of at most limit bytes has at most limit runes.
	if limit < 0 || len(s) <= limit {
		return s, false, utf8.RuneCountInString(s)
	}
	n, cut := 0, -1
	for i := range s {
		if n == limit {
			cut = i
		}
		n++
	}
	if cut < 0 {
		return s, false, n
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: output exceeded %d characters; original was %d characters]", limit, n), true, n
}

// renderContent flattens the content blocks of res.
func renderContent(res *mcp.CallToolResult) string {
	if len(res.Content) == 1 {
		// One text block, the usual result: its text, without building a
		// list to join.
		if t, ok := res.Content[0].(*mcp.TextContent); ok && t != nil {
			return t.Text
		}
	}
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		if isNil(c) {
			continue
		}
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
			continue
		}
		parts = append(parts, marshalBlock(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		parts = append(parts, marshalBlock(res.StructuredContent))
	}
	return strings.Join(parts, "\n")
}

func marshalBlock(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("[unrenderable %T content: %v]", v, err)
	}
	return string(b)
}

// isNil reports whether c is nil or a typed nil pointer, whose MarshalJSON
// would panic.
func isNil(c mcp.Content) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
