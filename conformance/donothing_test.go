package conformance

import (
	"bufio"
	"encoding/json"
	"io"

	"github.com/mcplife/mcplife/conformance/driver"
)

// doNothingRole makes the test binary a driver that claims every profile
// and capability, answers every request at once with an empty, valid
// result, and does nothing else: it starts no server, emits no event and
// never reports a call's or an acquire's outcome. It is the worst case for
// a suite whose failures wait: every wait must be decided from what the
// implementation does not do.
const doNothingRole = "do-nothing"

// serveDoNothing runs the do-nothing driver on r and w until EOF or
// shutdown.
func serveDoNothing(r io.Reader, w io.Writer) error {
	var caps []driver.Capability
	for _, c := range driver.Capabilities() {
		caps = append(caps, c.Name)
	}
	var profiles []driver.Profile
	for _, p := range driver.Profiles() {
		profiles = append(profiles, p.Name)
	}
	enc := json.NewEncoder(w)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var now int64
	for sc.Scan() {
		var req struct {
			ID     *int64          `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil || req.ID == nil {
			continue
		}
		var result any = struct{}{}
		switch req.Method {
		case driver.MethodHello:
			result = driver.HelloResult{Protocol: driver.ProtocolVersion, Implementation: driver.Implementation{Name: "do-nothing", Version: "1"}, Capabilities: caps, Profiles: profiles, Eras: Both}
		case driver.MethodSessionOpen:
			result = driver.SessionOpenResult{Report: driver.StartReport{Ready: []string{}, Failed: []string{}, Deferred: []string{}, Late: []string{}, Errors: map[string]string{}}}
		case driver.MethodToolsList:
			result = map[string]any{"tools": []any{}}
		case driver.MethodToolCall, driver.MethodAcquire:
			result = map[string]any{"accepted": true}
		case driver.MethodToolCancel:
			result = map[string]any{"running": false}
		case driver.MethodStatus:
			result = map[string]any{"servers": []any{}}
		case driver.MethodClockAdvance:
			var p driver.AdvanceParams
			_ = json.Unmarshal(req.Params, &p)
			now += p.Ms
			result = driver.ClockResult{NowMs: now}
		case driver.MethodClockNow:
			result = driver.ClockResult{NowMs: now}
		case driver.MethodClockPending:
			result = driver.PendingResult{TimersMs: []int64{}}
		}
		if err := enc.Encode(map[string]any{"type": driver.TypeResponse, "id": *req.ID, "result": result}); err != nil {
			return err
		}
		if req.Method == driver.MethodShutdown {
			return nil
		}
	}
	return sc.Err()
}
