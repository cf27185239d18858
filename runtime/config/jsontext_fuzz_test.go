package config

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzJSONText reads arbitrary text with the order-keeping JSON reader:
// blanking comments and trailing commas keeps the length, every newline and
// every byte it does not turn into a space; valid JSON is never changed in
// meaning; and on any text encoding/json accepts after blanking, the reader's
// tree (objects with their last duplicate, arrays, strings, numbers, bools,
// null) equals what encoding/json decodes, and every value's byte range holds
// valid JSON.
func FuzzJSONText(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":[1,2,{"b":"c\"//not a comment"},],"a":"/* nor this */",}`))
	f.Add([]byte("[1 // one\r\n,2 /* two */]"))
	f.Add([]byte(`{"k\u0000":"\ud800","":-0.0e+1,"t":true,"f":false,"n":null}`))
	f.Add([]byte(`"just a string"`))
	f.Add([]byte(`{"a":1,/**/}`))
	f.Add([]byte(`/*/ {} */ {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := blankJSONC(data)
		if len(b) != len(data) {
			t.Fatalf("blanking changed the length %d -> %d", len(data), len(b))
		}
		for i := range data {
			if b[i] != data[i] && (b[i] != ' ' || data[i] == '\n' || data[i] == '\r') {
				t.Fatalf("blanking changed byte %d %q into %q", i, data[i], b[i])
			}
		}
		if !bytes.Equal(blankJSONC(data), b) {
			t.Fatal("blankJSONC is not deterministic")
		}
		if json.Valid(data) {
			var x, y any
			if json.Unmarshal(data, &x) == nil {
				if err := json.Unmarshal(b, &y); err != nil || !reflect.DeepEqual(x, y) {
					t.Fatalf("blanking changed valid JSON: %q -> %q", data, b)
				}
			}
		}
		if checkJSON(b) != nil {
			return
		}
		var want any
		if json.Unmarshal(b, &want) != nil {
			return // e.g. a number out of float64 range: valid JSON, not decodable
		}
		got := treeOf(t, topValue(b))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("reader tree %#v, encoding/json %#v", got, want)
		}
	})
}

// treeOf converts v to the generic form encoding/json decodes into, checking
// that every value's range is valid JSON.
func treeOf(t *testing.T, v jval) any {
	t.Helper()
	if !json.Valid(v.raw()) {
		t.Fatalf("value range %d:%d is not JSON: %q", v.off, v.end, v.raw())
	}
	line, col := position(v.data, v.off)
	if line < 1 || col < 1 {
		t.Fatalf("position %d:%d", line, col)
	}
	switch v.kind() {
	case "object":
		m := map[string]any{}
		for _, mem := range v.members() {
			m[mem.key] = treeOf(t, mem.val)
		}
		return m
	case "array":
		out := []any{}
		for _, e := range v.elems() {
			out = append(out, treeOf(t, e))
		}
		return out
	case "string":
		s, ok := v.str()
		if !ok {
			t.Fatalf("string %q does not decode", v.raw())
		}
		return s
	case "boolean":
		b, ok := v.boolean()
		if !ok {
			t.Fatalf("boolean %q", v.raw())
		}
		return b
	case "null":
		return nil
	default:
		n, ok := v.number()
		if !ok {
			t.Fatalf("number %q", v.raw())
		}
		return n
	}
}
