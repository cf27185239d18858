package bridge

import (
	"encoding/json"
	"reflect"
	"testing"
)

// schemaStruct stands in for typed schemas such as *jsonschema.Schema.
type schemaStruct struct {
	Type       string         `json:"type,omitempty"`
	Properties map[string]any `json:"properties,omitempty"`
	Required   []string       `json:"required,omitempty"`
}

func TestConvertSchemaMap(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{
			"object without properties is patched",
			map[string]any{"type": "object"},
			map[string]any{"type": "object", "properties": map[string]any{}},
		},
		{
			"null properties is patched",
			map[string]any{"type": "object", "properties": nil},
			map[string]any{"type": "object", "properties": map[string]any{}},
		},
		{
			"type list containing object is patched",
			map[string]any{"type": []any{"object", "null"}},
			map[string]any{"type": []any{"object", "null"}, "properties": map[string]any{}},
		},
		{
			"type list with object alone is patched",
			map[string]any{"type": []any{"object"}},
			map[string]any{"type": []any{"object"}, "properties": map[string]any{}},
		},
		{
			"type list without object passes through",
			map[string]any{"type": []any{"string", "null"}},
			map[string]any{"type": []any{"string", "null"}},
		},
		{
			"object with properties passes through",
			map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}},
			map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}},
		},
		{
			"non-object passes through",
			map[string]any{"type": "string"},
			map[string]any{"type": "string"},
		},
		{
			"no type passes through",
			map[string]any{"anyOf": []any{map[string]any{"type": "object"}}},
			map[string]any{"anyOf": []any{map[string]any{"type": "object"}}},
		},
		{
			"extra keywords kept",
			map[string]any{"type": "object", "additionalProperties": false, "$schema": "x"},
			map[string]any{"type": "object", "additionalProperties": false, "$schema": "x", "properties": map[string]any{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := deepCopyJSON(t, tc.in)
			got := ConvertSchema(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
			if !reflect.DeepEqual(tc.in, before) {
				t.Errorf("input mutated: %#v, was %#v", tc.in, before)
			}
		})
	}
}

func TestConvertSchemaRaw(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"patched", `{"type":"object"}`, `{"properties":{},"type":"object"}`},
		{"unchanged bytes kept verbatim", `{"type": "object", "properties": {"b":{}, "a":{}}}`, `{"type": "object", "properties": {"b":{}, "a":{}}}`},
		{"not an object", `true`, `true`},
		{"invalid json", `{"type":`, `{"type":`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := json.RawMessage(tc.in)
			got := ConvertSchema(in)
			raw, ok := got.(json.RawMessage)
			if !ok {
				t.Fatalf("got %T, want json.RawMessage", got)
			}
			if string(raw) != tc.want {
				t.Errorf("got %s, want %s", raw, tc.want)
			}
			if string(in) != tc.in {
				t.Errorf("input mutated: %s", in)
			}
			// Unpatched, the input itself (as a map is returned as is);
			// patched, a copy.
			if same := &raw[0] == &in[0]; same != (tc.in == tc.want) {
				t.Errorf("result is the input: %v, want %v", same, tc.in == tc.want)
			}
			// A []byte, patched or not, is always copied: its owner may
			// reuse the buffer.
			b := []byte(tc.in)
			got = ConvertSchema(b)
			if raw, ok := got.(json.RawMessage); !ok || string(raw) != tc.want || &raw[0] == &b[0] {
				t.Errorf("[]byte: got %T %s, want a json.RawMessage copy %s", got, got, tc.want)
			}
		})
	}
}

// TestConvertSchemaRawTopLevel: only the top level of an encoded schema
// decides, whatever its nested schemas lack, and a patch keeps the nested
// values as they were (compacted).
func TestConvertSchemaRawTopLevel(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"type":"object","properties":{"a":{"type":"object"}}}`, `{"type":"object","properties":{"a":{"type":"object"}}}`},
		{`{"type":["null","object"],"items":{ "x" : 1 }}`, `{"items":{"x":1},"properties":{},"type":["null","object"]}`},
		{`{"type":"object","properties":null}`, `{"properties":{},"type":"object"}`},
		{`{"type":"string"}`, `{"type":"string"}`},
		{`{"type":{"not":"a type"}}`, `{"type":{"not":"a type"}}`},
		{`{}`, `{}`},
		{`null`, `null`},
	}
	for _, tc := range tests {
		got, ok := ConvertSchema(json.RawMessage(tc.in)).(json.RawMessage)
		if !ok || string(got) != tc.want {
			t.Errorf("ConvertSchema(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestConvertSchemaOther(t *testing.T) {
	t.Run("nil", func(t *testing.T) {
		want := map[string]any{"type": "object", "properties": map[string]any{}}
		if got := ConvertSchema(nil); !reflect.DeepEqual(got, want) {
			t.Errorf("got %#v", got)
		}
		if got := ConvertSchema(map[string]any(nil)); !reflect.DeepEqual(got, want) {
			t.Errorf("nil map: got %#v", got)
		}
	})
	t.Run("struct needing patch", func(t *testing.T) {
		in := &schemaStruct{Type: "object", Required: []string{}}
		got := ConvertSchema(in)
		want := map[string]any{"type": "object", "properties": map[string]any{}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %#v, want %#v", got, want)
		}
		if in.Properties != nil {
			t.Errorf("input mutated: %#v", in)
		}
	})
	t.Run("struct passes through", func(t *testing.T) {
		in := &schemaStruct{Type: "object", Properties: map[string]any{"a": map[string]any{}}}
		if got := ConvertSchema(in); got != any(in) {
			t.Errorf("got %#v, want the input itself", got)
		}
	})
	t.Run("unmarshalable passes through", func(t *testing.T) {
		ch := make(chan int)
		if got := ConvertSchema(ch); got != any(ch) {
			t.Errorf("got %#v", got)
		}
	})
}

func deepCopyJSON(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
