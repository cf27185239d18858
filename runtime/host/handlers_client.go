package host

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SamplingFunc answers a server's sampling/createMessage request: the
// embedding host asks its model. server is the config name of the server
// that asked.
type SamplingFunc func(ctx context.Context, server string, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)

// ProgressUpdate is one notifications/progress a server sent for a tool
// call that carried a progress token.
type ProgressUpdate struct {
	Server string
	// Call is the call id (WithCallID, or the runtime's own) and Tool the
	// exposed tool name, as in tool.call_started.
	Call, Tool string
	Progress   float64
	// Total is 0 when the server did not say.
	Total   float64
	Message string
}

// ErrSamplingOff is the cause of a refused sampling request.
var ErrSamplingOff = errors.New("sampling is not enabled for this server")

// newClient makes the go-sdk client of one connection of s: the host-side
// handlers enabled in s's config, and no capability for the others (go-sdk
// advertises roots by default; the runtime does only for servers with
// "roots"), in initialize and, in the stateless era, in every request's
// _meta alike (go-sdk takes both from the same options). The handlers
// answer a server's requests (observeRequests) and, in the stateless era,
// the input requests of its tool results (multiRoundTrip) by the same
// rules.
func (s *server) newClient(c *connection) *mcp.Client {
	caps := &mcp.ClientCapabilities{}
	s.mu.Lock()
	roots := slices.Clone(s.roots)
	s.mu.Unlock()
	if roots != nil {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	opts := &mcp.ClientOptions{
		Capabilities:           caps,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.toolsChanged(c) },
		Logger:                 s.rt.log,
		ElicitationHandler:     s.elicitationHandler(), // handlers.go
		CreateMessageHandler:   s.samplingHandler(),
		// mrtr.go answers multi round-trip input requests under the
		// runtime's rules; go-sdk's own middleware would bypass them.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}
	if s.cfg.Progress {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			s.progressNotified(req.Params)
		}
	}
	if s.cfg.Resources {
		opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { s.listChanged(c, listResources) }
	}
	if s.cfg.Prompts {
		opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { s.listChanged(c, listPrompts) }
	}
	client := mcp.NewClient(&mcp.Implementation{Name: s.rt.opts.ClientName, Version: "1"}, opts)
	if len(roots) > 0 {
		client.AddRoots(mcpRoots(roots)...)
	}
	client.AddReceivingMiddleware(s.observeRequests)
	client.AddSendingMiddleware(s.multiRoundTrip) // mrtr.go
	client.AddSendingMiddleware(cacheHints)       // cachehints.go: hints read, go-sdk's own list cache bypassed
	return client
}

// observeRequests watches the server requests go-sdk answers itself:
// roots/list is refused for a server without "roots" and reported
// (roots.listed) otherwise; a sampling request to a client without a handler
// is refused with the reason (sampling.answered, outcome refused).
func (s *server) observeRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "sampling/createMessage":
			if s.samplingHandler() == nil {
				messages := 0
				if p, ok := req.GetParams().(*mcp.CreateMessageWithToolsParams); ok && p != nil {
					messages = len(p.Messages)
				}
				return nil, s.samplingRefusal(messages)
			}
		case "roots/list":
			s.mu.Lock()
			off := s.roots == nil
			s.mu.Unlock()
			if off {
				// go-sdk's client answers an empty list even without the
				// capability; a server without "roots" gets a refusal.
				return nil, s.rootsRefusal()
			}
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListRootsResult); ok && err == nil {
				s.emit(event.RootsListed, event.Int("roots", len(lr.Roots)))
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// samplingRefusal is the refusal of a sampling request (of messages
// messages) to a server without a sampling handler: sampling.answered with
// outcome refused, and the JSON-RPC error that names the reason.
func (s *server) samplingRefusal(messages int) error {
	reason := ErrSamplingOff.Error() + ` (set "sampling": true in its config)`
	if s.cfg.Sampling {
		reason = "the host has no sampling callback (host.Options.Sampling)"
	}
	s.emit(event.SamplingAnswered, event.String("outcome", "refused"), event.Int("messages", messages),
		event.String("model", ""), event.String("error", reason))
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("sampling refused by the host for server %q: %s", s.name, reason)}
}

// rootsRefusal is the refusal of a roots request of a server without
// "roots".
func (s *server) rootsRefusal() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf(`roots are not configured for server %q (set "roots" in its config)`, s.name)}
}

// samplingHandler returns the sampling/createMessage handler, or nil when
// the server's config leaves sampling off or the host has no callback.
func (s *server) samplingHandler() func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	cb := s.rt.opts.Sampling
	if !s.cfg.Sampling || cb == nil {
		return nil
	}
	return func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		res, err := cb(ctx, s.name, req.Params)
		if err == nil && res == nil {
			err = errors.New("the sampling callback returned no result")
		}
		if err != nil {
			s.emit(event.SamplingAnswered, event.String("outcome", "error"), event.Int("messages", len(req.Params.Messages)),
				event.String("model", ""), event.Err(err))
			return nil, fmt.Errorf("sampling for server %q: %w", s.name, err)
		}
		s.emit(event.SamplingAnswered, event.String("outcome", "ok"), event.Int("messages", len(req.Params.Messages)),
			event.String("model", res.Model), event.String("error", ""))
		return res, nil
	}
}

func mcpRoots(roots []config.Root) []*mcp.Root {
	out := make([]*mcp.Root, len(roots))
	for i, r := range roots {
		out[i] = &mcp.Root{URI: r.URI, Name: r.Name}
	}
	return out
}

// Roots returns the roots the runtime advertises to the named server: its
// configured roots, or the last SetRoots.
func (rt *Runtime) Roots(name string) ([]config.Root, error) {
	targets := rt.running(name)
	if len(targets) == 0 {
		if cfg := rt.serverConfig(name); cfg != nil {
			return slices.Clone(cfg.Roots), nil
		}
		return nil, fmt.Errorf("roots: no server named %q", name)
	}
	s := targets[0]
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.roots), nil
}

// SetRoots replaces the roots advertised to the named running server and
// sends notifications/roots/list_changed to its connection (roots.changed).
// Only a server whose config has "roots" advertises the roots capability;
// others are refused. The roots last until the server is closed (a restart
// keeps them; a Reload goes back to the config's).
func (rt *Runtime) SetRoots(name string, roots []config.Root) error {
	targets := rt.running(name)
	if len(targets) == 0 {
		return fmt.Errorf("roots: no running server named %q", name)
	}
	for _, r := range roots {
		if _, err := config.ParseRoot(r.URI, ""); err != nil {
			return fmt.Errorf("roots of server %q: %w", name, err)
		}
	}
	for _, s := range targets {
		if s.cfg.Roots == nil {
			return fmt.Errorf("roots of server %q: the server's config has no \"roots\", so the roots capability is not advertised", name)
		}
	}
	for _, s := range targets {
		s.setRoots(roots)
	}
	return nil
}

func (s *server) setRoots(roots []config.Root) {
	s.mu.Lock()
	old := s.roots
	s.roots = slices.Clone(roots)
	if s.roots == nil {
		s.roots = []config.Root{}
	}
	var client *mcp.Client
	if s.conn != nil {
		client = s.conn.client
	}
	s.mu.Unlock()
	if client != nil {
		uris := make([]string, len(old))
		for i, r := range old {
			uris[i] = r.URI
		}
		// go-sdk notifies the session on each change: remove the old roots
		// and add the new ones (one notification each when both change).
		client.RemoveRoots(uris...)
		client.AddRoots(mcpRoots(roots)...)
	}
	s.emit(event.RootsChanged, event.Int("roots", len(roots)))
}

// running returns the running servers named name: the pool's and the
// private ones of open sessions.
func (rt *Runtime) running(name string) []*server {
	var targets []*server
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if s, ok := rt.servers[name]; ok {
		targets = append(targets, s)
	}
	for sess := range rt.sessions {
		for _, s := range sess.privateServers() {
			if s.name == name {
				targets = append(targets, s)
			}
		}
	}
	return targets
}
