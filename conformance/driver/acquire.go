package driver

// The acquire and release methods (capability acquire).

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcplife/mcplife/runtime/host"
)

func (d *driver) acquire(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p AcquireParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	if p.AcquireID == "" || p.Server == "" {
		return nil, nil, rerr(CodeBadRequest, "acquireId and server are required")
	}
	rt, err := d.runtime()
	if err != nil {
		return nil, nil, err
	}
	if !configured(rt, p.Server) {
		return nil, nil, rerr(CodeUnknownServer, "no enabled server %q", p.Server)
	}
	actx, cancel := context.WithCancelCause(d.base)
	entry := &acquireEntry{cancel: cancel}
	d.mu.Lock()
	if _, dup := d.acquires[p.AcquireID]; dup {
		d.mu.Unlock()
		cancel(nil)
		return nil, nil, rerr(CodeDuplicateID, "acquireId %q was used before", p.AcquireID)
	}
	d.acquires[p.AcquireID] = entry
	d.mu.Unlock()
	after := func() {
		d.goRun(func() {
			defer cancel(nil)
			release, err := rt.Acquire(actx, p.Server)
			if err == nil && actx.Err() != nil {
				// Released (or shut down) while it was pending.
				release()
				release = nil
				err = context.Cause(actx)
			}
			line := AcquireResultLine{Type: TypeAcquireResult, AcquireID: p.AcquireID, OK: err == nil}
			if err != nil {
				if actx.Err() != nil {
					err = fmt.Errorf("%w: %w", err, context.Cause(actx))
				}
				line.Error = &RemoteError{Code: string(outcomeCode(err)), Message: err.Error()}
			}
			d.mu.Lock()
			entry.done = true
			entry.release = release
			d.mu.Unlock()
			d.flushEvents()
			d.out.write(line)
		})
	}
	return AcceptedResult{Accepted: true}, after, nil
}

func configured(rt *host.Runtime, name string) bool {
	cfg := rt.Config()
	if cfg == nil {
		return false
	}
	for _, s := range cfg.Servers {
		if s.Name == name {
			return true
		}
	}
	return false
}

func (d *driver) release(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p ReleaseParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	if _, err := d.runtime(); err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	entry, ok := d.acquires[p.AcquireID]
	var release func()
	pending := false
	if ok {
		release, entry.release = entry.release, nil
		pending = !entry.done
	}
	d.mu.Unlock()
	switch {
	case !ok:
		return nil, nil, rerr(CodeUnknownID, "no acquire %q", p.AcquireID)
	case pending:
		entry.cancel(errCancelled)
	case release != nil:
		release()
	}
	return Empty{}, nil, nil
}
