package driver

// The acquire method (capability acquire); Conn answers release.

import (
	"context"
	"fmt"

	"github.com/mcplife/mcplife/runtime/host"
)

// acquire accepts an acquire of a configured server; Conn runs the
// AcquireFunc after the accepted response.
func (d *driver) acquire(ctx context.Context, p *AcquireParams) (AcquireFunc, error) {
	rt, err := d.runtime()
	if err != nil {
		return nil, err
	}
	if !configured(rt, p.Server) {
		return nil, rerr(CodeUnknownServer, "no enabled server %q", p.Server)
	}
	return func(ctx context.Context) (func(), error) {
		release, err := rt.Acquire(ctx, p.Server)
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w: %w", err, context.Cause(ctx))
			}
			return nil, Errorf(outcomeCode(err), "%s", err.Error())
		}
		return release, nil
	}, nil
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
