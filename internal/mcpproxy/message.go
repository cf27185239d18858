package mcpproxy

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// message is the part of a JSON-RPC message the proxy looks at. Everything
// else is forwarded byte for byte.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`

	// open is set by the engine on the opening request of a session
	// (initialize, server/discover, or the launch's first request at
	// 2026-07-28 or later): the MATCH open selects it.
	open bool
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// parseMessage decodes a line; ok is false for anything that is not a single
// JSON-RPC object (a batch, garbage), which the proxy forwards untouched.
func parseMessage(line []byte) (m message, ok bool) {
	b := bytes.TrimLeft(line, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return m, false
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, false
	}
	return m, true
}

func (m *message) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// isRequest reports a request (it has a method and an id).
func (m *message) isRequest() bool { return m.Method != "" && m.hasID() }

// isResponse reports a response (an id and no method).
func (m *message) isResponse() bool { return m.Method == "" && m.hasID() }

// key is the id as a map key.
func (m *message) key() string { return string(m.ID) }

// tool returns the tool name of a tools/call.
func (m *message) tool() string {
	if m.Method != "tools/call" {
		return ""
	}
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return p.Name
}

// args returns the arguments of a tools/call as JSON, cut to 200 bytes as
// the fixture's journal does.
func (m *message) args() string {
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(m.Params, &p)
	s := string(p.Arguments)
	if s == "" {
		s = "{}"
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// cancelledID returns the key of the request a notifications/cancelled
// names.
func (m *message) cancelledID() string {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return string(p.RequestID)
}

// modernProtocol is the first protocol version of the stateless era: no
// initialize handshake, server/discover, the version in each request's
// _meta, no ping.
const modernProtocol = "2026-07-28"

// isModern tells whether protocol version v is of the stateless era.
func isModern(v string) bool { return v >= modernProtocol }

// protocolVersion returns the protocol version a message of the stateless
// revision carries in _meta["io.modelcontextprotocol/protocolVersion"],
// "" when there is none.
func (m *message) protocolVersion() string {
	var p struct {
		Meta struct {
			Version json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(p.Meta.Version, &v)
	return v
}

// errorLine renders a JSON-RPC error response to id.
func errorLine(id json.RawMessage, code int, msg string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{Code: code, Message: msg}})
	return append(b, '\n')
}

// toolErrorLine renders a tools/call result with isError set.
func toolErrorLine(id json.RawMessage, msg string) []byte {
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, struct {
		Content []content `json:"content"`
		IsError bool      `json:"isError"`
	}{[]content{{"text", msg}}, true}})
	return append(b, '\n')
}

// callOutcome summarises a tools/call response as the fixture's call-end
// entry does: outcome, bytes of text and the start of the text or error.
func callOutcome(m *message) (outcome string, n int, detail string) {
	if m.Error != nil {
		return "rpc-error", 0, cut(strconv.Itoa(m.Error.Code) + " " + m.Error.Message)
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(m.Result, &r)
	var text string
	for _, c := range r.Content {
		text += c.Text
	}
	outcome = "ok"
	if r.IsError {
		outcome = "tool-error"
	}
	return outcome, len(text), cut(text)
}

// listOutcome summarises a tools/list response.
func listOutcome(m *message) (count int, more bool) {
	var r struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor string            `json:"nextCursor"`
	}
	_ = json.Unmarshal(m.Result, &r)
	return len(r.Tools), r.NextCursor != ""
}

// discoverOutcome summarises a server/discover response: the versions
// the server named (supportedVersions of a result, or the supported list
// of an UnsupportedProtocolVersionError), comma-joined, and the error of a
// refusal ("" for a result).
func discoverOutcome(m *message) (versions, errText string) {
	if m.Error != nil {
		var d struct {
			Supported []string `json:"supported"`
		}
		_ = json.Unmarshal(m.Error.Data, &d)
		return strings.Join(d.Supported, ","), cut(strconv.Itoa(m.Error.Code) + " " + m.Error.Message)
	}
	var r struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	_ = json.Unmarshal(m.Result, &r)
	return strings.Join(r.SupportedVersions, ","), ""
}

func cut(s string) string {
	if len(s) > 80 {
		return s[:80]
	}
	return s
}
