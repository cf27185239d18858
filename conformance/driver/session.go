package driver

// The session methods: session.open, session.close and tools.list.

import (
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

func (d *driver) sessionOpen(ctx context.Context, p *SessionParams) (StartReport, error) {
	rt, err := d.runtime()
	if err != nil {
		return StartReport{}, err
	}
	d.mu.Lock()
	if _, ok := d.sessions[p.Session]; ok {
		d.mu.Unlock()
		return StartReport{}, rerr(CodeSessionExists, "session %q is open or opening", p.Session)
	}
	d.sessions[p.Session] = nil
	d.mu.Unlock()
	sess, err := rt.OpenSession(ctx, host.SessionOptions{Name: p.Session})
	d.mu.Lock()
	if err != nil {
		delete(d.sessions, p.Session)
		d.mu.Unlock()
		return StartReport{}, rerr(CodeFailed, "session.open: %v", err)
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
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (d *driver) sessionClose(ctx context.Context, p *SessionParams) error {
	_, sess, err := d.session(p.Session)
	if err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.sessions, p.Session)
	d.mu.Unlock()
	sess.Close(ctx)
	return nil
}

// toolsList lists the session's tools; Conn sends a tool without a schema
// with {"type":"object"}.
func (d *driver) toolsList(ctx context.Context, p *SessionParams) ([]Tool, error) {
	_, sess, err := d.session(p.Session)
	if err != nil {
		return nil, err
	}
	tools := sess.Tools()
	out := make([]Tool, 0, len(tools))
	for _, t := range tools {
		var schema json.RawMessage
		if t.InputSchema != nil {
			schema, _ = json.Marshal(t.InputSchema)
		}
		out = append(out, Tool{
			Name:             t.Name,
			Server:           t.Server,
			Tool:             t.MCPName,
			Description:      t.Description,
			Deferred:         t.Deferred,
			RequiresApproval: t.RequiresApproval,
			InputSchema:      schema,
		})
	}
	return out, nil
}
