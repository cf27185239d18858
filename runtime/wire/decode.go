package wire

import (
	"encoding/json"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxDepth is the deepest nesting of objects and arrays a message may have:
// go-sdk's jsonrpc.DecodeMessage refuses a message nested deeper.
const MaxDepth = 1000

// parseFlags are go-sdk's: its decoder matches struct fields by their exact
// name, never case-insensitively.
const parseFlags = segjson.DontMatchCaseInsensitiveStructFields

// envelope is a JSON-RPC message on the wire. Method stays raw so that a
// "method" key with an empty value is told apart from no key at all, as
// go-sdk does.
type envelope struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// decodeMessage decodes one JSON-RPC message, raw, whose objects and arrays
// nest depth levels deep at most. It accepts what go-sdk's
// jsonrpc.DecodeMessage accepts and builds the same message from it, with
// the same parser and flags, but without the 32 KiB read buffer go-sdk's
// decoder allocates for every message it decodes (33 KB of garbage per
// message; go-sdk's own layers still allocate such buffers, e.g. for each
// tool of a tools/list result). Anything it would refuse (a message nested past
// MaxDepth, bad JSON, a wrong version tag, a bad id, a response without an
// id) is handed to jsonrpc.DecodeMessage itself, so the error is go-sdk's,
// word for word.
func decodeMessage(raw []byte, depth int) (jsonrpc.Message, error) {
	if msg, ok := decodeFast(raw, depth); ok {
		return msg, nil
	}
	return jsonrpc.DecodeMessage(raw)
}

// decodeFast is decodeMessage's common case. ok is false for anything
// go-sdk would refuse, and for a message that may nest too deeply: depth
// may be an upper bound, and go-sdk then decides.
func decodeFast(raw []byte, depth int) (jsonrpc.Message, bool) {
	if depth > MaxDepth {
		return nil, false
	}
	var w envelope
	if _, err := segjson.Parse(raw, &w, parseFlags); err != nil || w.VersionTag != "2.0" {
		return nil, false
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, false
	}
	if len(w.Method) > 0 {
		var method string
		if _, err := segjson.Parse(w.Method, &method, parseFlags); err != nil {
			return nil, false
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: w.Params}, true
	}
	if !id.IsValid() {
		return nil, false
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		// Not resp.Error = w.Error when nil: a typed nil in an error.
		resp.Error = w.Error
	}
	return resp, true
}
