package wire

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeSeeds are messages go-sdk takes and messages it refuses, each for
// its own reason.
var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"boom","data":{"x":[1,2]}}}`,
	`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	`{"jsonrpc":"2.0","id":2,"method":""}`,
	`{"jsonrpc":"2.0","id":2.5,"result":{}}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":true,"result":{}}`,
	`{"jsonrpc":"1.0","id":1,"result":{}}`,
	`{"JSONRPC":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","ID":1,"Method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":7}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1,2,3]}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`,
	`{"jsonrpc":"2.0","id":1,"result":{},"extra":{"deep":[[[]]]}}`,
	`{"jsonrpc":"2.0","id":1,"result":"\u00e9\ud83d\ude00 \\\" }"}`,
	`{"jsonrpc":"2.0","id":1,"result":{"a":tru}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"a":1,}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"error":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":{}} `,
	`{}`,
	`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
	`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`,
	`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("[", 2000) + `"}`,
}

// viaReader decodes in as Transport does: the value Reader.Next returns,
// with the depth the Reader counted. ok is false when in is not one JSON
// value to Reader.
func viaReader(in []byte) (msgs []jsonrpc.Message, raw []byte, err error, ok bool) {
	g := NewReader(bytes.NewReader(in), Options{})
	raw, rerr := g.Next()
	if rerr != nil {
		return nil, nil, nil, false
	}
	raw = bytes.Clone(raw)
	msgs, err = decode(raw, g.deepest)
	return msgs, raw, err, true
}

// sameAsGoSDK fails t unless decode gave for raw what go-sdk's
// jsonrpc.DecodeMessage gives: the same message or the same error.
func sameAsGoSDK(t *testing.T, raw []byte, msgs []jsonrpc.Message, err error) {
	t.Helper()
	if raw[0] == '[' {
		return // a batch: its elements are checked on their own
	}
	want, wantErr := jsonrpc.DecodeMessage(raw)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%q: err %v, go-sdk's %v", raw, err, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Fatalf("%q: error %q, go-sdk's %q", raw, err, wantErr)
		}
	case len(msgs) != 1 || !reflect.DeepEqual(msgs[0], want):
		t.Fatalf("%q: decoded %#v, go-sdk %#v", raw, msgs, want)
	}
}

// TestDecodeLikeGoSDK: every seed decodes to what go-sdk decodes it to, or
// fails with go-sdk's error, word for word.
func TestDecodeLikeGoSDK(t *testing.T) {
	for _, s := range decodeSeeds {
		msgs, raw, err, ok := viaReader([]byte(s))
		if !ok {
			t.Fatalf("%.60q: Reader.Next found no value", s)
		}
		sameAsGoSDK(t, raw, msgs, err)
	}
}

// TestDecodeDepthBoundary: the 1,000th level is taken, the 1,001st is
// refused with go-sdk's error, also inside a batch.
func TestDecodeDepthBoundary(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	ok := `{"jsonrpc":"2.0","id":1,"result":` + nest(MaxDepth-1) + `}`
	deep := `{"jsonrpc":"2.0","id":1,"result":` + nest(MaxDepth) + `}`
	if _, _, err, _ := viaReader([]byte(ok)); err != nil {
		t.Fatalf("%d levels: %v", MaxDepth, err)
	}
	_, _, err, _ := viaReader([]byte(deep))
	if err == nil || !strings.Contains(err.Error(), "exceeded maximum nesting depth of 1000") {
		t.Fatalf("%d levels: %v, want go-sdk's depth error", MaxDepth+1, err)
	}
	msgs, _, err, _ := viaReader([]byte(`[` + ok + `,{"jsonrpc":"2.0","method":"ping"}]`))
	if err != nil || len(msgs) != 2 {
		t.Fatalf("batch holding %d levels: %v, %d messages", MaxDepth, err, len(msgs))
	}
	if _, _, err, _ := viaReader([]byte(`[{"jsonrpc":"2.0","method":"ping"},` + deep + `]`)); err == nil {
		t.Fatalf("batch holding %d levels: no error", MaxDepth+1)
	}
}

// FuzzDecodeLikeGoSDK feeds arbitrary bytes through Reader.Next and the
// Transport's decoder: every value Reader hands over decodes to what
// go-sdk's jsonrpc.DecodeMessage gives for it, the same message or the
// same error text.
func FuzzDecodeLikeGoSDK(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		msgs, raw, err, ok := viaReader(in)
		if !ok {
			return
		}
		sameAsGoSDK(t, raw, msgs, err)
	})
}

// BenchmarkDecode compares decoding a tool call's result with go-sdk's
// jsonrpc.DecodeMessage and with the Transport's decoder; -benchmem shows
// the 32 KiB go-sdk's decoder allocates per message.
func BenchmarkDecode(b *testing.B) {
	raw := []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"echo: ping"}],"structuredContent":{"text":"ping"}}}`)
	b.Run("go-sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonrpc.DecodeMessage(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeMessage(raw, 3); err != nil {
				b.Fatal(err)
			}
		}
	})
}
