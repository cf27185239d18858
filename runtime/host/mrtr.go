package host

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Multi round-trip requests (SEP-2322). In the stateless revision
// 2026-07-28 a server sends no request of its own: a tools/call it cannot
// finish without the host answers input_required, with input requests
// (roots/list, sampling/createMessage, elicitation/create) and an opaque
// requestState, and the client retries the call with the answers
// (inputResponses) and the state echoed. go-sdk's client does this by
// default, but it calls its own handlers directly, past the receiving
// middleware that holds the runtime's rules (observeRequests): its roots
// answer would give a server without "roots" an empty list, and a refused
// sampling request would emit nothing. So every connection's client runs
// with go-sdk's middleware off and multiRoundTrip instead, which answers
// each input request with the same handlers, rules and events as the
// server-to-client request of the handshake era.

// maxInputRounds bounds the input_required answers of one tools/call: the
// call that gets the tenth fails, as go-sdk's own middleware bounds it.
const maxInputRounds = 10

// multiRoundTrip is the sending middleware of every connection's client
// that answers the input requests of a tools/call and retries it until the
// server completes it (see above). The runtime sends no prompts/get or
// resources/read, the other requests the revision lets a server answer
// input_required, so only tools/call is handled. A result is input
// required only by its resultType, which a handshake-era result never has:
// those pass through unchanged.
//
// An input request the runtime refuses (roots for a server without
// "roots", sampling that is off or failed, elicitation that is off) is not
// answered and the call is not retried: the revision has no way to answer
// one with an error, and a server asks again for what it did not get. The
// call ends as a tool error naming the refusal, as the server's own tool
// error does in the handshake era when its request is refused. A server
// that asks maxInputRounds times fails the call with a JSON-RPC error (the
// connection stays).
func (s *server) multiRoundTrip(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		for round := 1; ; round++ {
			res, err := next(ctx, method, req)
			r, ok := res.(*mcp.CallToolResult)
			if err != nil || !ok || r == nil || !r.NeedsInput() {
				return res, err
			}
			if round >= maxInputRounds {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: fmt.Sprintf("server %q still asked for input after %d rounds of multi round-trip requests: the call is given up", s.name, round)}
			}
			responses, refusal := s.answerInput(ctx, req, r.InputRequests)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			if refusal != "" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: refusal}}}, nil
			}
			if req, err = retryRequest(req, responses, r.RequestState); err != nil {
				return nil, err
			}
		}
	}
}

// answerInput answers the input requests of one input_required result, in
// the order of their keys, or returns why the first it refuses was
// refused.
func (s *server) answerInput(ctx context.Context, req mcp.Request, requests mcp.InputRequestMap) (mcp.InputResponseMap, string) {
	cs, _ := req.GetSession().(*mcp.ClientSession)
	responses := make(mcp.InputResponseMap, len(requests))
	for _, key := range slices.Sorted(maps.Keys(requests)) {
		var (
			resp   mcp.InputResponse
			err    error
			method string
		)
		switch p := requests[key].(type) {
		case *mcp.ListRootsParams:
			method = "roots/list"
			resp, err = s.answerRoots()
		case *mcp.CreateMessageWithToolsParams: // go-sdk reads every sampling input request as this type
			method = "sampling/createMessage"
			resp, err = s.answerSampling(ctx, cs, p)
		case *mcp.ElicitParams:
			method = "elicitation/create"
			resp, err = s.answerElicitation(ctx, cs, p)
		default:
			method = fmt.Sprintf("%T", p)
			err = fmt.Errorf("an input request of unknown type %T", p)
		}
		if err != nil {
			return nil, fmt.Sprintf("the host refused input request %q (%s) of server %q: %v", key, method, s.name, err)
		}
		responses[key] = resp
	}
	return responses, ""
}

// answerRoots answers a roots/list input request as observeRequests does
// the request: the server's roots (roots.listed), or a refusal for a
// server without "roots".
func (s *server) answerRoots() (*mcp.ListRootsResult, error) {
	s.mu.Lock()
	roots := mcpRoots(s.roots)
	off := s.roots == nil
	s.mu.Unlock()
	if off {
		return nil, s.rootsRefusal()
	}
	slices.SortFunc(roots, func(a, b *mcp.Root) int { return cmp.Compare(a.URI, b.URI) }) // go-sdk lists them by URI
	s.emit(event.RootsListed, event.Int("roots", len(roots)))
	return &mcp.ListRootsResult{Roots: roots}, nil
}

// answerSampling answers a sampling/createMessage input request with the
// server's sampling handler (sampling.answered ok or error), or refuses it
// (sampling.answered refused) as observeRequests does the request.
func (s *server) answerSampling(ctx context.Context, cs *mcp.ClientSession, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageResult, error) {
	h := s.samplingHandler()
	if h == nil {
		return nil, s.samplingRefusal(len(p.Messages))
	}
	base, err := samplingBase(p)
	if err != nil {
		s.emit(event.SamplingAnswered, event.String("outcome", "error"), event.Int("messages", len(p.Messages)),
			event.String("model", ""), event.Err(err))
		return nil, err
	}
	return h(ctx, &mcp.CreateMessageRequest{Session: cs, Params: base})
}

// answerElicitation answers an elicitation/create input request with the
// server's elicitation handler (elicitation.answered), or refuses it when
// the server's config leaves elicitation off.
func (s *server) answerElicitation(ctx context.Context, cs *mcp.ClientSession, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h := s.elicitationHandler()
	if h == nil {
		return nil, fmt.Errorf(`elicitation is not enabled for server %q (set "elicitation": "defaults" in its config)`, s.name)
	}
	return h(ctx, &mcp.ElicitRequest{Session: cs, Params: p})
}

// retryRequest is the next round of a tools/call: a copy of its params
// with the answers and the server's requestState (go-sdk never mutates the
// caller's params either).
func retryRequest(req mcp.Request, responses mcp.InputResponseMap, state string) (mcp.Request, error) {
	p, ok := req.GetParams().(*mcp.CallToolParams)
	cs, isClient := req.GetSession().(*mcp.ClientSession)
	if !ok || p == nil || !isClient {
		return nil, fmt.Errorf("multi round-trip: cannot retry a tools/call with params %T", req.GetParams())
	}
	cp := *p
	cp.InputResponses = responses
	cp.RequestState = state
	return &mcp.ClientRequest[mcp.Params]{Session: cs, Params: &cp}, nil
}

// samplingBase turns the sampling params an input request carries into
// those of the host's callback (one content block per message), as go-sdk
// does for a sampling/createMessage request.
func samplingBase(p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageParams, error) {
	msgs := make([]*mcp.SamplingMessage, 0, len(p.Messages))
	for _, m := range p.Messages {
		if len(m.Content) > 1 {
			return nil, fmt.Errorf("sampling message has %d content blocks; the host's sampling callback takes one", len(m.Content))
		}
		var content mcp.Content
		if len(m.Content) > 0 {
			content = m.Content[0]
		}
		msgs = append(msgs, &mcp.SamplingMessage{Content: content, Role: m.Role})
	}
	return &mcp.CreateMessageParams{Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens, Messages: msgs,
		Metadata: p.Metadata, ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences,
		SystemPrompt: p.SystemPrompt, Temperature: p.Temperature}, nil
}
