package host

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Host-side handlers answer the requests a server sends to the host (the
// client side of MCP). Each is off by default and enabled per server in
// config; a disabled handler advertises no capability.

// elicitationHandler returns the server's elicitation/create handler, or nil
// when the server's config leaves elicitation off (no capability is then
// advertised and go-sdk refuses a request that comes anyway).
func (s *server) elicitationHandler() func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if s.cfg.Elicitation != config.ElicitationDefaults {
		return nil
	}
	return func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		res, reason, err := answerWithDefaults(req.Params)
		if err != nil {
			s.emit(event.ElicitationAnswered, event.String("mode", elicitMode(req.Params)), event.String("action", "error"), event.String("reason", err.Error()))
			return nil, err
		}
		fields := make([]string, 0, len(res.Content))
		for k := range res.Content {
			fields = append(fields, k)
		}
		sort.Strings(fields)
		s.emit(event.ElicitationAnswered, event.String("mode", elicitMode(req.Params)), event.String("action", res.Action),
			event.String("fields", strings.Join(fields, ",")), event.String("reason", reason))
		return res, nil
	}
}

func elicitMode(p *mcp.ElicitParams) string {
	if p.Mode == "" {
		return "form"
	}
	return p.Mode
}

// elicitSchema is the part of a requested schema the defaults handler reads:
// a flat object whose properties may carry a default.
type elicitSchema struct {
	Properties map[string]struct {
		Default json.RawMessage `json:"default"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// answerWithDefaults is the answer of a host without a UI: accept a form
// elicitation with the default of every property that has one, or decline
// it (saying why) when a required property has none. A URL elicitation
// needs a person to visit the URL and is declined.
func answerWithDefaults(p *mcp.ElicitParams) (_ *mcp.ElicitResult, reason string, _ error) {
	if elicitMode(p) == "url" {
		return &mcp.ElicitResult{Action: "decline"}, "url elicitation needs a user", nil
	}
	content := map[string]any{}
	if p.RequestedSchema == nil {
		return &mcp.ElicitResult{Action: "accept", Content: content}, "", nil
	}
	raw, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return nil, "", fmt.Errorf("elicitation: requested schema: %w", err)
	}
	var schema elicitSchema
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, "", fmt.Errorf("elicitation: requested schema is not an object schema: %w", err)
	}
	for name, prop := range schema.Properties {
		if len(prop.Default) == 0 || string(prop.Default) == "null" {
			continue
		}
		var v any
		if err := json.Unmarshal(prop.Default, &v); err != nil {
			return nil, "", fmt.Errorf("elicitation: default of %q: %w", name, err)
		}
		content[name] = v
	}
	var missing []string
	for _, name := range schema.Required {
		if _, ok := content[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return &mcp.ElicitResult{Action: "decline"}, "required field without default: " + strings.Join(missing, ","), nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, "", nil
}
