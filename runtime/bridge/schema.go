package bridge

import (
	"encoding/json"
	"maps"
)

// ConvertSchema returns the input schema to advertise to the model for an
// MCP tool's inputSchema.
//
// JSON Schema passes through unchanged, except that an object schema (its
// "type" is "object", or a type list containing "object") lacking
// "properties" (or with "properties": null) gets "properties": {} — some provider APIs reject object
// schemas without it. Only the top-level schema is patched. A nil schema
// becomes {"type":"object","properties":{}}.
//
// The input is never mutated; when a patch is needed the result is a copy.
// Accepted inputs:
//
//   - map[string]any (what the go-sdk client decodes inputSchema into):
//     returned as is, or as a shallow copy carrying the patch;
//   - json.RawMessage: returned as is when no patch is needed (as a map is),
//     otherwise as a patched copy; bytes that are not a JSON object pass
//     through. Only the top level is decoded to decide;
//   - []byte: returned as a json.RawMessage copy, patched or not (a byte
//     buffer may be reused by its owner);
//   - anything else that marshals to a JSON object (for example a
//     *jsonschema.Schema): returned as is when no patch is needed, otherwise as
//     the patched map[string]any of its JSON encoding. Values that do not
//     marshal to a JSON object pass through untouched.
func ConvertSchema(schema any) any {
	switch s := schema.(type) {
	case nil:
		return map[string]any{"type": "object", "properties": map[string]any{}}
	case map[string]any:
		if s == nil {
			return map[string]any{"type": "object", "properties": map[string]any{}}
		}
		if !needsProperties(s) {
			return s
		}
		out := maps.Clone(s)
		out["properties"] = map[string]any{}
		return out
	case json.RawMessage:
		if patched, ok := patchRaw(s); ok {
			return patched
		}
		return s
	case []byte:
		if patched, ok := patchRaw(s); ok {
			return patched
		}
		return append(json.RawMessage(nil), s...)
	default:
		raw, err := json.Marshal(s)
		if err != nil {
			return schema
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return schema
		}
		if !needsProperties(m) {
			return schema
		}
		m["properties"] = map[string]any{}
		return m
	}
}

// patchRaw returns the encoded schema raw with "properties": {} added at
// its top level, and true, when it is an object schema lacking properties;
// otherwise it returns false. Only the top level is decoded.
func patchRaw(raw []byte) (json.RawMessage, bool) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil || !rawNeedsProperties(top) {
		return nil, false
	}
	top["properties"] = json.RawMessage(`{}`)
	out, err := json.Marshal(top)
	if err != nil {
		return nil, false
	}
	return out, true
}

// rawNeedsProperties is needsProperties of a schema whose top level alone
// is decoded.
func rawNeedsProperties(top map[string]json.RawMessage) bool {
	if p, ok := top["properties"]; ok && string(p) != "null" {
		return false
	}
	var typ any
	if json.Unmarshal(top["type"], &typ) != nil {
		return false
	}
	return needsProperties(map[string]any{"type": typ})
}

// needsProperties reports whether m is an object schema without properties.
func needsProperties(m map[string]any) bool {
	if p, ok := m["properties"]; ok && p != nil {
		return false
	}
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, e := range t {
			if e == "object" {
				return true
			}
		}
	case []string:
		for _, e := range t {
			if e == "object" {
				return true
			}
		}
	}
	return false
}
