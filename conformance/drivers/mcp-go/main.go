// Command mcp-go is an mcplife-driver/2 driver (docs/DRIVER.md) for the Go
// MCP client library github.com/mark3labs/mcp-go. It is the small host a Go
// host author writes around that library: one client.Client per configured
// server (stdio, streamable HTTP or SSE transport), tools exposed as
// mcp_<server>_<tool>, calls bounded by a context deadline and cancelled by
// cancelling their context. Processes, the protocol era (server/discover
// first, then initialize), timeouts inside the library and closing are
// mcp-go's own; the driver adds no restart, probe or pool. See README.md for
// what it claims and why.
//
// The protocol's message types, vocabulary and error codes come from
// github.com/mcplife/mcplife/conformance/driver; this file is the request
// loop (framing, error precedence, the serialized writer).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/runtime/event"
)

// libraryPath is the module whose client the driver wraps; its version,
// read from the build info, is the implementation version hello announces.
const libraryPath = "github.com/mark3labs/mcp-go"

// maxLine bounds one request line (the protocol asks for at least 16 MiB).
const maxLine = 64 << 20

func main() {
	// stdout carries protocol lines only: the library's slog output goes to
	// stderr.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "mcp-go driver: %v\n", err)
		os.Exit(1)
	}
}

// libraryVersion returns the version of mcp-go linked into the binary.
func libraryVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == libraryPath {
				return m.Version
			}
		}
	}
	return "unknown"
}

// hello is what the driver announces: the core profile on the real clock,
// and both protocol eras (mcp-go's Client.Initialize sends server/discover
// first and falls back to initialize, client/protocol.go negotiateModern).
func hello() driver.HelloResult {
	return driver.HelloResult{
		Protocol:       driver.ProtocolVersion,
		Implementation: driver.Implementation{Name: libraryPath, Version: libraryVersion()},
		Capabilities:   []driver.Capability{driver.CapStatus, driver.CapJournalPID},
		Profiles:       []driver.Profile{driver.ProfileCore},
		Eras:           []driver.Era{driver.EraLegacy, driver.EraModern},
	}
}

// wire is the serialized writer of protocol lines and the event counter.
type wire struct {
	mu  sync.Mutex
	out *bufio.Writer
	seq uint64
	t0  time.Time
}

// write encodes v as one line and flushes it.
func (w *wire) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcp-go driver: encoding a line: %v\n", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(b)
	w.out.WriteByte('\n')
	w.out.Flush()
}

// now is the offset of the driver's (real) clock from its start.
func (w *wire) now() time.Duration { return time.Since(w.t0) }

// event writes one event line; seq follows output order.
func (w *wire) event(kind event.Kind, server, session string, attrs map[string]any) {
	e := event.Event{At: w.now(), Server: server, Session: session, Kind: kind}
	if len(attrs) > 0 {
		e.Attrs = attrs
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	e.Seq = w.seq
	b, err := json.Marshal(driver.EventLine{Type: driver.TypeEvent, Event: e})
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcp-go driver: encoding an event: %v\n", err)
		return
	}
	w.out.Write(b)
	w.out.WriteByte('\n')
	w.out.Flush()
}

// rerr returns a response error with a stable code.
func rerr(code driver.ErrorCode, format string, args ...any) *driver.RemoteError {
	return &driver.RemoteError{Code: string(code), Message: fmt.Sprintf(format, args...)}
}

// respond writes the response to id. Events are written synchronously, so
// every event emitted before it is already out.
func (w *wire) respond(id *int64, result any, err error) {
	resp := driver.Response{Type: driver.TypeResponse, ID: id}
	if err != nil {
		var re *driver.RemoteError
		if !errors.As(err, &re) {
			re = rerr(driver.CodeFailed, "%v", err)
		}
		resp.Error = re
	} else {
		if result == nil {
			result = driver.Empty{}
		}
		b, merr := json.Marshal(result)
		if merr != nil {
			resp.Error = rerr(driver.CodeFailed, "encoding the result: %v", merr)
		} else {
			resp.Result = b
		}
	}
	w.write(resp)
}

// serve runs the request loop until shutdown, EOF on in, or ctx ends.
func serve(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &wire{out: bufio.NewWriter(out), t0: time.Now()}
	h := newHost(w)
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(in, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				if len(line) > maxLine {
					line = []byte("{}") // answered as a request without an id
				}
				lines <- line
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			h.shutdown()
			return nil
		case err := <-readErr:
			// EOF means shutdown without a response.
			h.shutdown()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading requests: %w", err)
		case line := <-lines:
			if h.dispatch(line, &wg) {
				return nil
			}
		}
	}
}

// dispatch handles one request line, applying the error precedence of
// docs/DRIVER.md section 5. It reports whether the driver shut down.
func (h *host) dispatch(line []byte, wg *sync.WaitGroup) bool {
	id, method, params, perr := parseRequest(line)
	if perr != nil {
		h.w.respond(id, nil, perr)
		return false
	}
	info, known := methodInfo(method)
	if !known {
		h.w.respond(id, nil, rerr(driver.CodeUnknownMethod, "unknown method %q", method))
		return false
	}
	if info.Capability != "" && !slices.Contains(hello().Capabilities, info.Capability) {
		h.w.respond(id, nil, rerr(driver.CodeUnsupported, "%s needs capability %q, which this driver does not announce", method, info.Capability))
		return false
	}
	switch method {
	case driver.MethodHello:
		var p driver.HelloParams
		if err := decodeParams(params, &p); err != nil {
			h.w.respond(id, nil, err)
			return false
		}
		res := hello()
		if p.Protocol == driver.ProtocolVersion1 {
			res.Protocol, res.Eras = driver.ProtocolVersion1, nil
		}
		h.w.respond(id, res, nil)
		return false
	case driver.MethodShutdown:
		if err := decodeParams(params, &driver.Empty{}); err != nil {
			h.w.respond(id, nil, err)
			return false
		}
		h.shutdown()
		h.w.respond(id, driver.Empty{}, nil)
		return true
	}
	if h.isClosing() {
		h.w.respond(id, nil, rerr(driver.CodeShuttingDown, "the driver is shutting down"))
		return false
	}
	if method == driver.MethodStart {
		// start never waits: handled before the next line is read.
		res, err := h.start(params)
		h.w.respond(id, res, err)
		return false
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, err := h.handle(method, params)
		h.w.respond(id, res, err)
	}()
	return false
}

// methodInfo looks a method up in the protocol's vocabulary.
func methodInfo(method string) (driver.MethodInfo, bool) {
	for _, m := range driver.Methods() {
		if m.Name == method {
			return m, true
		}
	}
	return driver.MethodInfo{}, false
}

// parseRequest reads the envelope of a request line. id is nil when the
// line carries no readable id. (conformance/driver has the same function,
// unexported.)
func parseRequest(line []byte) (id *int64, method string, params json.RawMessage, err *driver.RemoteError) {
	var env map[string]json.RawMessage
	if e := json.Unmarshal(line, &env); e != nil || env == nil {
		return nil, "", nil, rerr(driver.CodeBadRequest, "not a JSON object: %.200s", bytes.TrimSpace(line))
	}
	rawID, ok := env["id"]
	if !ok {
		return nil, "", nil, rerr(driver.CodeBadRequest, "request without an id")
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(rawID))
	dec.UseNumber()
	if e := dec.Decode(&n); e != nil {
		return nil, "", nil, rerr(driver.CodeBadRequest, "id is not a number: %s", rawID)
	}
	v, e := n.Int64()
	if e != nil || v < 0 {
		return nil, "", nil, rerr(driver.CodeBadRequest, "id is not a non-negative integer: %s", rawID)
	}
	id = &v
	for k := range env {
		if k != "id" && k != "method" && k != "params" {
			return id, "", nil, rerr(driver.CodeBadRequest, "unknown request field %q", k)
		}
	}
	if e := json.Unmarshal(env["method"], &method); e != nil || method == "" {
		return id, "", nil, rerr(driver.CodeBadRequest, "request without a method")
	}
	params = env["params"]
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if p := bytes.TrimSpace(params); len(p) == 0 || p[0] != '{' {
		return id, method, nil, rerr(driver.CodeBadRequest, "%s: params must be an object", method)
	}
	return id, method, params, nil
}

// decodeParams decodes params strictly: unknown fields are errors.
func decodeParams(params json.RawMessage, v any) *driver.RemoteError {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return rerr(driver.CodeBadRequest, "params: %v", err)
	}
	if dec.More() {
		return rerr(driver.CodeBadRequest, "params: trailing data")
	}
	return nil
}
