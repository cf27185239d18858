package host

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/clocktest"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowDualEnv makes the test binary a stdio server of both eras that answers
// server/discover late, the way a server of both eras does that reads its
// first request before it is ready for it: on its first launch it reads
// server/discover and the runtime's two requests (an unknown method, a
// ping) and answers none of them; it answers
// the discover, with a result, only once initialize has arrived, and then
// refuses that initialize as go-sdk does after a discover ("duplicate
// "initialize" received"). Later launches answer discover at once. The
// variable's value is a directory for the launch counter; on the first
// launch the server writes a line to the FIFO "progress" in it for each
// request it read ("server/discover", "ping"), so that a test moves its
// clock only once the server has got that far.
const slowDualEnv = "MCPLIFE_HOST_TEST_SLOW_DUAL"

// serveSlowDual runs the slow dual-era server on stdin and stdout.
func serveSlowDual(dir string) error {
	counter := filepath.Join(dir, "launches")
	b, _ := os.ReadFile(counter)
	launch, _ := strconv.Atoi(string(b))
	launch++
	if err := os.WriteFile(counter, []byte(strconv.Itoa(launch)), 0o644); err != nil {
		return err
	}
	out := json.NewEncoder(os.Stdout)
	reply := func(id json.RawMessage, result string) error {
		return out.Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": json.RawMessage(result)})
	}
	const discovered = `{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"serverInfo":{"name":"slow-dual","version":"1"}}`
	var held json.RawMessage // the first launch's discover, unanswered
	var progress *os.File
	if launch == 1 {
		f, err := os.OpenFile(filepath.Join(dir, "progress"), os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		progress = f
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil || req.ID == nil {
			continue // notifications
		}
		if progress != nil && (req.Method == "server/discover" || req.Method == "ping") {
			if _, err := fmt.Fprintln(progress, req.Method); err != nil {
				return err
			}
		}
		if launch == 1 && (req.Method == "ping" || req.Method == discoverProbeMethod) {
			continue // read, never answered
		}
		if held != nil {
			if err := reply(held, discovered); err != nil {
				return err
			}
			held = nil
		}
		var err error
		switch req.Method {
		case "server/discover":
			if launch == 1 {
				held = req.ID
				continue
			}
			err = reply(req.ID, discovered)
		case "initialize":
			err = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"error": map[string]any{"code": -32603, "message": `duplicate "initialize" received`}})
		case "tools/list":
			err = reply(req.ID, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
		case "subscriptions/listen":
			continue // a stream that stays open
		default:
			err = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"error": map[string]any{"code": -32601, "message": fmt.Sprintf("method %q not found", req.Method)}})
		}
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

// TestLateDiscoverOfDualEraServer: a server of both eras that reads
// server/discover and the ping after it, answers neither for the probe
// timeout, and then answers discover and refuses the initialize the runtime
// went on with, connects in the same attempt: the runtime stops that
// process and asks the stateless revision of a new one
// (server.protocol_fallback reason initialize-refused), no longer bounding
// its discover. Nothing fails and no restart is scheduled.
func TestLateDiscoverOfDualEraServer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	fifo := filepath.Join(state, "progress")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	e := newFixtureEnv(t, func(e *fixtureEnv) map[string]json.RawMessage {
		b, _ := json.Marshal(map[string]any{"command": exe, "env": map[string]string{slowDualEnv: state, "GORACE": "atexit_sleep_ms=0"}})
		return map[string]json.RawMessage{"fx": b}
	}, Options{})
	opened := make(chan error, 1)
	go func() {
		_, err := e.rt.OpenSession(t.Context(), SessionOptions{})
		opened <- err
	}()
	ctx := t.Context()
	// Read and write: the open does not wait for the server, and a server
	// that never writes fails the read at its deadline (a liveness bound:
	// the server writes within milliseconds) instead of hanging the test.
	pf, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if err := pf.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	progress := bufio.NewScanner(pf)
	read := func(want string) {
		t.Helper()
		if !progress.Scan() || progress.Text() != want {
			t.Fatalf("server progress %q (%v), want %q", progress.Text(), progress.Err(), want)
		}
	}
	step := discoverStep(DefaultProbeTimeout)
	stepPending := func(p []time.Duration) bool { return slices.Contains(p, step) }
	// The server has read discover: the watch's next look sends the ping.
	read("server/discover")
	if err := e.clock.WaitFor(ctx, stepPending); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(step)
	// It has read the ping too and answers neither: once the probe timeout
	// has passed since the discover, the watch decides.
	read("ping")
	if err := e.clock.WaitFor(ctx, stepPending); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(DefaultProbeTimeout)
	e.await(m(event.ServerProtocolFallback, "fx", "protocol", ProtocolLegacy, "reason", FallbackDiscoverUnanswered))
	e.await(m(event.ServerProtocolFallback, "fx", "protocol", ProtocolModern, "reason", FallbackInitializeRefused))
	e.await(m(event.ServerConnected, "fx", "protocol", ProtocolModern, "attempt", "0"))
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	for _, ev := range e.rt.Events().Events() {
		if ev.Kind == event.ServerFailed || ev.Kind == event.RestartScheduled {
			t.Errorf("unexpected %s: %v", ev.Kind, ev.Attrs)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(state, "launches")); string(b) != "2" {
		t.Errorf("launches %q, want 2 (the refused try and the stateless one)", b)
	}
}

// TestDiscoverWatchTimeoutBeforeFirstRead: when the probe timeout passes
// before go-sdk's reader first reads (a busy machine), the made-up reply
// still reaches it instead of the read blocking on a server that never
// answers.
func TestDiscoverWatchTimeoutBeforeFirstRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	clk := clocktest.New()
	ct, st := mcp.NewInMemoryTransports()
	expired := make(chan struct{})
	dw := &discoverWatch{inner: ct, clock: clk, timeout: DefaultProbeTimeout, expired: func() { close(expired) }}
	conn, err := dw.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	srv, err := st.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	id, err := jsonrpc.MakeID(float64(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "server/discover", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Read(ctx); err != nil { // the server takes the request and never answers
		t.Fatal(err)
	}
	clk.Advance(DefaultProbeTimeout)
	<-expired // the timeout has passed; go-sdk has not read yet
	msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.ID != id || resp.Error == nil {
		t.Fatalf("read %#v, want the made-up error reply to the discover", msg)
	}
}
