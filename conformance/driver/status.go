package driver

// The status, reload and server.disconnect methods.

import (
	"context"
)

func (d *driver) status(ctx context.Context) ([]ServerStatus, error) {
	rt, err := d.runtime()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	origin := d.origin
	d.mu.Unlock()
	list := rt.Status()
	out := make([]ServerStatus, 0, len(list))
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
		out = append(out, st)
	}
	return out, nil
}

func (d *driver) reload(ctx context.Context) error {
	rt, err := d.runtime()
	if err != nil {
		return err
	}
	if err := rt.Reload(ctx); err != nil {
		return rerr(CodeFailed, "reload: %v", err)
	}
	return nil
}

func (d *driver) serverDisconnect(ctx context.Context, p *ServerParams) error {
	rt, err := d.runtime()
	if err != nil {
		return err
	}
	if !configured(rt, p.Server) {
		return rerr(CodeUnknownServer, "no enabled server %q", p.Server)
	}
	if err := rt.DisconnectServer(ctx, p.Server); err != nil {
		return rerr(CodeFailed, "server.disconnect: %v", err)
	}
	return nil
}
