package driver

// The request loop's dispatcher: it parses each line, applies the error
// precedence of docs/DRIVER.md (bad envelope, unknown method, missing
// capability, shutting down; then each handler checks its params before
// not_started) and writes the response after the events emitted so far.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// rerr returns a response error.
func rerr(code ErrorCode, format string, args ...any) *RemoteError {
	return &RemoteError{Code: string(code), Message: fmt.Sprintf(format, args...)}
}

// handler runs one method. after, when not nil, runs once the response has
// been written.
type handler func(ctx context.Context, params json.RawMessage) (result any, after func(), err error)

func (d *driver) handlers() map[string]handler {
	return map[string]handler{
		MethodStart:            d.start,
		MethodSessionOpen:      d.sessionOpen,
		MethodSessionClose:     d.sessionClose,
		MethodToolsList:        d.toolsList,
		MethodToolCall:         d.toolCall,
		MethodToolCancel:       d.toolCancel,
		MethodAcquire:          d.acquire,
		MethodRelease:          d.release,
		MethodStatus:           d.status,
		MethodReload:           d.reload,
		MethodServerDisconnect: d.serverDisconnect,
		MethodClockAdvance:     d.clockAdvance,
		MethodClockNow:         d.clockNow,
		MethodClockPending:     d.clockPending,
	}
}

// dispatch handles one request line. It reports whether the driver shut
// down.
func (d *driver) dispatch(line []byte) bool {
	id, method, params, perr := parseRequest(line)
	if perr != nil {
		d.respond(id, nil, perr)
		return false
	}
	d.log.Debug("request", "id", *id, "method", method)
	switch method {
	case MethodHello:
		var p HelloParams
		if err := decodeParams(params, &p); err != nil {
			d.respond(id, nil, err)
			return false
		}
		// A harness of version 1 gets a version-1 answer, without eras
		// (docs/DRIVER.md section 11); every other harness gets this
		// package's version.
		res := &HelloResult{
			Protocol:       ProtocolVersion,
			Implementation: d.opts.Implementation,
			Capabilities:   slices.Clone(d.opts.Capabilities),
			Profiles:       slices.Clone(d.opts.Profiles),
			Eras:           slices.Clone(d.opts.Eras),
		}
		if p.Protocol == ProtocolVersion1 {
			res.Protocol, res.Eras = ProtocolVersion1, nil
		}
		d.respond(id, res, nil)
		return false
	case MethodShutdown:
		if err := decodeParams(params, &Empty{}); err != nil {
			d.respond(id, nil, err)
			return false
		}
		d.teardown()
		d.respond(id, Empty{}, nil)
		return true
	}
	if method == MethodStart {
		// start never waits on the clock; handling it before reading on
		// lets a harness pipeline requests after it.
		res, _, err := d.start(d.base, params)
		d.respond(id, res, err)
		return false
	}
	h, ok := d.handlers()[method]
	if !ok {
		d.respond(id, nil, rerr(CodeUnknownMethod, "unknown method %q", method))
		return false
	}
	for _, m := range Methods() {
		if m.Name == method && m.Capability != "" && !d.caps[m.Capability] {
			d.respond(id, nil, rerr(CodeUnsupported, "%s needs capability %q, which this driver does not announce", method, m.Capability))
			return false
		}
	}
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		d.respond(id, nil, rerr(CodeShuttingDown, "the driver is shutting down"))
		return false
	}
	d.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		res, after, err := h(d.base, params)
		if err != nil && d.base.Err() != nil {
			var re *RemoteError
			switch {
			case !errors.As(err, &re):
				err = rerr(CodeShuttingDown, "interrupted by shutdown: %v", err)
			case re.Code == string(CodeFailed):
				err = rerr(CodeShuttingDown, "interrupted by shutdown: %s", re.Message)
			}
		}
		d.respond(id, res, err)
		if after != nil {
			after()
		}
	}()
	return false
}

// parseRequest reads the envelope of a request line. id is nil when the
// line does not carry a readable id.
func parseRequest(line []byte) (id *int64, method string, params json.RawMessage, err *RemoteError) {
	var env map[string]json.RawMessage
	if e := json.Unmarshal(line, &env); e != nil || env == nil {
		return nil, "", nil, rerr(CodeBadRequest, "not a JSON object: %.200s", bytes.TrimSpace(line))
	}
	rawID, ok := env["id"]
	if !ok {
		return nil, "", nil, rerr(CodeBadRequest, "request without an id")
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(rawID))
	dec.UseNumber()
	if e := dec.Decode(&n); e != nil {
		return nil, "", nil, rerr(CodeBadRequest, "id is not a number: %s", rawID)
	}
	v, e := n.Int64()
	if e != nil || v < 0 {
		return nil, "", nil, rerr(CodeBadRequest, "id is not a non-negative integer: %s", rawID)
	}
	id = &v
	for k := range env {
		if k != "id" && k != "method" && k != "params" {
			return id, "", nil, rerr(CodeBadRequest, "unknown request field %q", k)
		}
	}
	if e := json.Unmarshal(env["method"], &method); e != nil || method == "" {
		return id, "", nil, rerr(CodeBadRequest, "request without a method")
	}
	params = env["params"]
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	if p := bytes.TrimSpace(params); len(p) == 0 || p[0] != '{' {
		return id, method, nil, rerr(CodeBadRequest, "%s: params must be an object", method)
	}
	return id, method, params, nil
}

// decodeParams decodes params strictly: unknown fields are errors.
func decodeParams(params json.RawMessage, v any) *RemoteError {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return rerr(CodeBadRequest, "params: %v", err)
	}
	if dec.More() {
		return rerr(CodeBadRequest, "params: trailing data")
	}
	return nil
}

// respond writes the response to id, after every event emitted so far.
func (d *driver) respond(id *int64, result any, err error) {
	d.flushEvents()
	resp := Response{Type: TypeResponse, ID: id}
	if err != nil {
		var re *RemoteError
		if !errors.As(err, &re) {
			re = rerr(CodeFailed, "%v", err)
		}
		resp.Error = re
	} else {
		if result == nil {
			result = Empty{}
		}
		b, merr := json.Marshal(result)
		if merr != nil {
			resp.Error = rerr(CodeFailed, "encoding the result: %v", merr)
		} else {
			resp.Result = b
		}
	}
	d.out.write(resp)
}

// flushEvents waits until every event emitted so far has been written.
func (d *driver) flushEvents() {
	d.mu.Lock()
	f := d.fwd
	d.mu.Unlock()
	if f != nil {
		f.flush()
	}
}
