package host

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestCompactJSON: what compactJSON keeps as it was.
func TestCompactJSON(t *testing.T) {
	raw := json.RawMessage(`{ "a" : 1 }`)
	if got := compactJSON(raw); string(got.(json.RawMessage)) != `{ "a" : 1 }` {
		t.Errorf("JSON = %s, want it untouched", got)
	}
	if got := compactJSON(nil); got != nil {
		t.Errorf("nil = %#v", got)
	}
	ch := make(chan int)
	if got := compactJSON(ch); got != any(ch) {
		t.Errorf("a value that does not encode = %#v, want it as it was", got)
	}
	if got := compactJSON(map[string]any{"b": "<&>", "a": []any{}}); string(got.(json.RawMessage)) != `{"a":[],"b":"<&>"}` {
		t.Errorf("map = %s", got)
	}
}

// TestCompactJSONOwnSlice: the JSON of a schema is held in a slice of its
// own length, not in the encoder's grown buffer.
func TestCompactJSONOwnSlice(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string", "description": "the text to answer with"}}}
	raw := compactJSON(schema).(json.RawMessage)
	if cap(raw) != len(raw) {
		t.Fatalf("len %d, cap %d: the encoder's buffer is kept", len(raw), cap(raw))
	}
}

// TestCompactMeta: compactMeta copies every object and array, nested ones
// included, and keeps what they hold.
func TestCompactMeta(t *testing.T) {
	if compactMeta(nil) != nil {
		t.Fatal("nil _meta became a map")
	}
	inner := make(map[string]any, 64)
	inner["name"] = "fx"
	list := make([]any, 1, 64)
	list[0] = map[string]any{"k": 1.0}
	m := map[string]any{"io.modelcontextprotocol/serverInfo": inner, "list": list, "n": 2.0}
	got := compactMeta(m)
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("compactMeta = %#v, want %#v", got, m)
	}
	if l := got["list"].([]any); cap(l) != len(l) {
		t.Fatalf("array cap %d for %d elements", cap(l), len(l))
	}
	// Copies, not the decoded values themselves.
	got["io.modelcontextprotocol/serverInfo"].(map[string]any)["name"] = "changed"
	got["list"].([]any)[0].(map[string]any)["k"] = 2.0
	if inner["name"] != "fx" || list[0].(map[string]any)["k"] != 1.0 {
		t.Fatal("compactMeta shares objects with its input")
	}
}
