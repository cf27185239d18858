package driver

// The tool call methods (tool.call, tool.cancel) and the mapping of a
// call's outcome onto a call_result line.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/runtime/bridge"
	"github.com/mcplife/mcplife/runtime/host"
)

func (d *driver) toolCall(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p ToolCallParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	switch {
	case p.CallID == "":
		return nil, nil, rerr(CodeBadRequest, "callId is required")
	case p.Tool == "":
		return nil, nil, rerr(CodeBadRequest, "tool is required")
	case p.TimeoutMs != nil && *p.TimeoutMs < 0:
		return nil, nil, rerr(CodeBadRequest, "timeoutMs must be >= 0")
	}
	args := map[string]any{}
	if len(p.Arguments) > 0 {
		if err := json.Unmarshal(p.Arguments, &args); err != nil || args == nil {
			return nil, nil, rerr(CodeBadRequest, "arguments must be a JSON object")
		}
	}
	_, sess, err := d.session(p.Session)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithCancelCause(d.base)
	cctx = host.WithCallID(cctx, p.CallID)
	if p.TimeoutMs != nil {
		cctx = host.WithCallTimeout(cctx, ms(*p.TimeoutMs))
	}
	entry := &callEntry{cancel: cancel}
	d.mu.Lock()
	if _, dup := d.calls[p.CallID]; dup {
		d.mu.Unlock()
		cancel(nil)
		return nil, nil, rerr(CodeDuplicateID, "callId %q was used before", p.CallID)
	}
	d.calls[p.CallID] = entry
	d.mu.Unlock()
	after := func() {
		d.goRun(func() {
			defer cancel(nil)
			res, err := sess.CallTool(cctx, p.Tool, args)
			line := callResultLine(p.CallID, p.Tool, res, err)
			d.mu.Lock()
			entry.done = true
			d.mu.Unlock()
			d.flushEvents()
			d.out.write(line)
		})
	}
	return AcceptedResult{Accepted: true}, after, nil
}

// callResultLine maps a host call outcome onto the protocol.
func callResultLine(callID, tool string, r bridge.Result, err error) CallResultLine {
	out := CallOutcome{
		Text:          r.Text,
		IsError:       r.IsError,
		Aborted:       r.Aborted,
		Code:          r.Code,
		Truncated:     r.Truncated,
		OriginalChars: r.OriginalChars,
		Signals:       nonNil(slices.Clone(r.Signals)),
		Server:        r.Server,
		Tool:          r.Tool,
	}
	if out.Tool == "" {
		out.Tool = tool
	}
	line := CallResultLine{Type: TypeCallResult, CallID: callID, Result: out}
	if err == nil {
		return line
	}
	code := outcomeCode(err)
	line.Result.IsError = true
	if code == OutcomeAborted {
		line.Result.Aborted = true
		line.Result.Text = ""
	}
	var se *host.ServerError
	if line.Result.Code == "" && errors.As(err, &se) {
		line.Result.Code = se.Code
	}
	line.Error = &RemoteError{Code: string(code), Message: err.Error()}
	return line
}

// outcomeCode classifies a call or acquire failure.
func outcomeCode(err error) OutcomeCode {
	var se *host.ServerError
	coded := errors.As(err, &se)
	if errors.Is(err, host.ErrAborted) || errors.Is(err, errCancelled) ||
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

func (d *driver) toolCancel(ctx context.Context, params json.RawMessage) (any, func(), error) {
	var p CancelParams
	if err := decodeParams(params, &p); err != nil {
		return nil, nil, err
	}
	if _, err := d.runtime(); err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	entry, ok := d.calls[p.CallID]
	running := ok && !entry.done
	d.mu.Unlock()
	if !ok {
		return nil, nil, rerr(CodeUnknownID, "no tool call %q", p.CallID)
	}
	if running {
		entry.cancel(errCancelled)
	}
	return CancelResult{Running: running}, nil, nil
}
