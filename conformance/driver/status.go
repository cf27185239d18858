package driver

// The status, reload and server.disconnect methods.

import (
	"context"
	"encoding/json"
)

func (d *driver) status(ctx context.Context, params json.RawMessage) (any, func(), error) {
	if err := decodeParams(params, &Empty{}); err != nil {
		return nil, nil, err
	}
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	origin := d.origin
	d.mu.Unlock()
	list := rt.Status()
	out := StatusResult{Servers: make([]ServerStatus, 0, len(list))}
	for _, s := range list {
		st := ServerStatus{
			Name:            s.Name,
			State:           string(s.State),
			Transport:       string(s.Transport),
			Tools:           s.Tools,
			Deferred:        s.Deferred,
			Error:           s.Error,
			Stderr:          s.Stderr,
			Source:          Source{File: s.Source.File, Level: string(s.Source.Level), Provider: s.Source.Provider},
			Shared:          s.Shared,
			Refs:            s.Refs,
			PID:             s.PID,
			RestartAttempts: s.RestartAttempts,
			Policy:          s.Policy,
			Warnings:        s.Warnings,
			SessionReinits:  s.SessionReinits,
			StreamResumes:   s.StreamResumes,
		}
		if !s.ConnectedSince.IsZero() {
			at := max(s.ConnectedSince.Sub(origin).Milliseconds(), 0)
			st.ConnectedAtMs = &at
		}
		out.Servers = append(out.Servers, st)
	}
	return out, nil, nil
}

func (d *driver) reload(ctx context.Context, params json.RawMessage) (any, func(), error) {
	if err := decodeParams(params, &Empty{}); err != nil {
		return nil, nil, err
	}
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	if err := rt.Reload(ctx); err != nil {
		return nil, nil, rerr(CodeFailed, "reload: %v", err)
	}
	return Empty{}, nil, nil
}

func (d *driver) serverDisconnect(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p ServerParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	if !configured(rt, p.Server) {
		return nil, nil, rerr(CodeUnknownServer, "no enabled server %q", p.Server)
	}
	if err := rt.DisconnectServer(ctx, p.Server); err != nil {
		return nil, nil, rerr(CodeFailed, "server.disconnect: %v", err)
	}
	return Empty{}, nil, nil
}
