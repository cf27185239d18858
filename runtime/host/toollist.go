package host

import (
	"context"
	"fmt"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listTools lists the tools of cs within the limits of s: listing stops
// once more than MaxTools arrived, and tools with over-long names or
// over-deep input schemas are dropped. Each limit that bites emits
// tools.limited.
func (s *server) listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	limit := s.rt.opts.MaxTools
	var tools []*mcp.Tool
	seen := 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		seen++
		if seen > limit {
			break
		}
		tools = append(tools, t)
	}
	if seen > limit {
		s.emit(event.ToolsLimited, event.String("reason", "too-many"), event.Int("tools", seen), event.Int("limit", limit), event.String("sample", ""))
	}
	tools = s.dropTools(tools, "name-too-long", s.rt.opts.MaxToolNameBytes, func(t *mcp.Tool) bool {
		return len(t.Name) > s.rt.opts.MaxToolNameBytes
	})
	tools = s.dropTools(tools, "schema-too-deep", s.rt.opts.MaxSchemaDepth, func(t *mcp.Tool) bool {
		return depthExceeds(t.InputSchema, s.rt.opts.MaxSchemaDepth)
	})
	compactTools(tools)
	return tools, nil
}

// dropTools removes the tools bad accepts, reporting them as reason.
func (s *server) dropTools(tools []*mcp.Tool, reason string, limit int, bad func(*mcp.Tool) bool) []*mcp.Tool {
	kept := tools[:0]
	dropped := 0
	sample := ""
	for _, t := range tools {
		if !bad(t) {
			kept = append(kept, t)
			continue
		}
		if dropped == 0 {
			sample = wire.Sample([]byte(t.Name))
		}
		dropped++
	}
	clear(tools[len(kept):]) // let the dropped tools be collected
	if dropped > 0 {
		s.emit(event.ToolsLimited, event.String("reason", reason), event.Int("tools", dropped), event.Int("limit", limit), event.String("sample", sample))
	}
	return kept
}

// depthExceeds reports whether v (decoded JSON) nests objects and arrays
// deeper than limit. The top-level object counts as depth 1. The walk stops
// at limit+1, so its cost is bounded by the part of v within the limit.
func depthExceeds(v any, limit int) bool {
	type item struct {
		v     any
		depth int
	}
	stack := []item{{v, 1}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := it.v.(type) {
		case map[string]any:
			if it.depth > limit {
				return true
			}
			for _, c := range x {
				stack = append(stack, item{c, it.depth + 1})
			}
		case []any:
			if it.depth > limit {
				return true
			}
			for _, c := range x {
				stack = append(stack, item{c, it.depth + 1})
			}
		}
	}
	return false
}
