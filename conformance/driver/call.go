package driver

// The tool.call method and the mapping of a call's outcome onto a
// call_result line (Conn answers tool.cancel).

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/host"
)

// toolCall accepts a call in an open session; Conn runs the CallFunc after
// the accepted response.
func (d *driver) toolCall(ctx context.Context, p *ToolCallParams) (CallFunc, error) {
	args := map[string]any{}
	if len(p.Arguments) > 0 {
		if err := json.Unmarshal(p.Arguments, &args); err != nil || args == nil {
			return nil, rerr(CodeBadRequest, "arguments must be a JSON object")
		}
	}
	_, sess, err := d.session(p.Session)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (CallOutcome, error) {
		ctx = host.WithCallID(ctx, p.CallID)
		if p.TimeoutMs != nil {
			ctx = host.WithCallTimeout(ctx, ms(*p.TimeoutMs))
		}
		res, err := sess.CallTool(ctx, p.Tool, args)
		return callOutcome(res, err)
	}, nil
}

// callOutcome maps a host call outcome onto the protocol; Conn marks a
// failed call isError, and an aborted one aborted without text.
func callOutcome(r bridge.Result, err error) (CallOutcome, error) {
	out := CallOutcome{
		Text:          r.Text,
		IsError:       r.IsError,
		Aborted:       r.Aborted,
		Code:          r.Code,
		Truncated:     r.Truncated,
		OriginalChars: r.OriginalChars,
		Signals:       slices.Clone(r.Signals),
		Server:        r.Server,
		Tool:          r.Tool,
	}
	if err == nil {
		return out, nil
	}
	var se *host.ServerError
	if out.Code == "" && errors.As(err, &se) {
		out.Code = se.Code
	}
	return out, Errorf(outcomeCode(err), "%s", err.Error())
}

// outcomeCode classifies a call or acquire failure.
func outcomeCode(err error) OutcomeCode {
	var se *host.ServerError
	coded := errors.As(err, &se)
	if errors.Is(err, host.ErrAborted) || errors.Is(err, ErrCancelled) ||
		(!coded && errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)) {
		return OutcomeAborted
	}
	if coded {
		for _, c := range OutcomeCodes() {
			if string(c.Code) == se.Code && strings.HasPrefix(se.Code, "mcp_") {
				return c.Code
			}
		}
	}
	switch {
	case errors.Is(err, host.ErrUnknownTool):
		return OutcomeUnknownTool
	case errors.Is(err, host.ErrClosed):
		return OutcomeClosed
	case errors.Is(err, host.ErrToolTimeout):
		return OutcomeToolTimeout
	case errors.Is(err, host.ErrBlocked):
		return OutcomeBlocked
	case errors.Is(err, host.ErrUnavailable), errors.Is(err, host.ErrDisconnected):
		return OutcomeUnavailable
	case errors.Is(err, host.ErrConnectionLost):
		return OutcomeConnectionLost
	case errors.Is(err, host.ErrRestartInProgress):
		return OutcomeRestartInProgress
	case errors.Is(err, host.ErrRestartFailed):
		return OutcomeRestartFailed
	case errors.Is(err, host.ErrFailed):
		return OutcomeServerFailed
	}
	return OutcomeFailed
}
