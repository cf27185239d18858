package driver

// The session methods: session.open, session.close and tools.list.

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/mcplife/mcplife/runtime/host"
)

func (d *driver) session(name string) (*host.Runtime, *host.Session, error) {
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sess := d.sessions[name]
	if sess == nil {
		if _, opening := d.sessions[name]; opening {
			return nil, nil, rerr(CodeUnknownSession, "session %q is still opening", name)
		}
		return nil, nil, rerr(CodeUnknownSession, "no open session %q", name)
	}
	return rt, sess, nil
}

func (d *driver) sessionOpen(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p SessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	if p.Session == "" {
		return nil, nil, rerr(CodeBadRequest, "session is required")
	}
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	if _, ok := d.sessions[p.Session]; ok {
		d.mu.Unlock()
		return nil, nil, rerr(CodeSessionExists, "session %q is open or opening", p.Session)
	}
	d.sessions[p.Session] = nil
	d.mu.Unlock()
	sess, err := rt.OpenSession(ctx, host.SessionOptions{Name: p.Session})
	d.mu.Lock()
	if err != nil {
		delete(d.sessions, p.Session)
		d.mu.Unlock()
		return nil, nil, rerr(CodeFailed, "session.open: %v", err)
	}
	d.sessions[p.Session] = sess
	d.mu.Unlock()
	rep := sess.StartReport()
	out := StartReport{
		Ready:     nonNil(rep.Ready),
		Failed:    nonNil(rep.Failed),
		Deferred:  nonNil(rep.Deferred),
		Late:      nonNil(append(slices.Clone(rep.Late), rep.Held...)),
		Errors:    map[string]string{},
		ElapsedMs: rep.Elapsed.Milliseconds(),
	}
	for name, e := range rep.Errors {
		if e != nil {
			out.Errors[name] = e.Error()
		}
	}
	return SessionOpenResult{Report: out}, nil, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (d *driver) sessionClose(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p SessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	_, sess, err := d.session(p.Session)
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	delete(d.sessions, p.Session)
	d.mu.Unlock()
	sess.Close(ctx)
	return Empty{}, nil, nil
}

func (d *driver) toolsList(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p SessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	_, sess, err := d.session(p.Session)
	if err != nil {
		return nil, nil, err
	}
	tools := sess.Tools()
	out := ToolsListResult{Tools: make([]Tool, 0, len(tools))}
	for _, t := range tools {
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil || bytes.Equal(schema, []byte("null")) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out.Tools = append(out.Tools, Tool{
			Name:             t.Name,
			Server:           t.Server,
			Tool:             t.MCPName,
			Description:      t.Description,
			Deferred:         t.Deferred,
			RequiresApproval: t.RequiresApproval,
			InputSchema:      schema,
		})
	}
	return out, nil, nil
}
