package host

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What go-sdk keeps of a connection for its whole life is held small here:
// the tools a modern connection's client listed stay in its list cache
// (read by CallTool for x-mcp-header annotations), with the list result's
// _meta. go-sdk's decoder makes every JSON object a map sized for 64
// entries and every schema nested maps several times the size of its
// JSON; the runtime only passes these on.

// compactTools holds the tools a connection listed small, in place: input
// and output schemas as their compact JSON (compactJSON), each tool's
// _meta sized to what it holds (compactMeta). The runtime only passes
// schemas on, so holding them as JSON costs nothing but the encoding, once
// per listing; go-sdk's list cache accepts a json.RawMessage schema. A
// schema that does not encode stays as it was.
func compactTools(tools []*mcp.Tool) {
	for _, t := range tools {
		t.InputSchema = compactJSON(t.InputSchema)
		t.OutputSchema = compactJSON(t.OutputSchema)
		t.Meta = compactMeta(t.Meta)
	}
}

// compactJSON returns v encoded as compact JSON, without escaping HTML
// characters, in a slice of its own length, or v itself when it is nil,
// already JSON or does not encode.
func compactJSON(v any) any {
	switch v.(type) {
	case nil, json.RawMessage:
		return v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return v
	}
	encoded := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	raw := make(json.RawMessage, len(encoded))
	copy(raw, encoded)
	return raw
}

// compactMeta returns a copy of m whose objects and arrays, nested ones
// included, are sized to what they hold; nil stays nil. A _meta of one
// entry (every stateless-era result names its server in one) is decoded
// into a map sized for 64.
func compactMeta(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = compactValue(v)
	}
	return out
}

// compactValue returns v with its objects and arrays copied to their size.
func compactValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return compactMeta(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = compactValue(e)
		}
		return out
	}
	return v
}
