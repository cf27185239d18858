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
//   - json.RawMessage and []byte: returned as a json.RawMessage copy, re-encoded
//     only when patched; bytes that are not a JSON object pass through;
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
		return convertRaw(s)
	case []byte:
		return convertRaw(s)
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

// convertRaw handles an encoded schema. It always returns a fresh copy so the
// caller cannot alias the input's backing array.
func convertRaw(raw []byte) json.RawMessage {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil || !needsProperties(m) {
		return append(json.RawMessage(nil), raw...)
	}
	m["properties"] = map[string]any{}
	out, err := json.Marshal(m)
	if err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return out
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
