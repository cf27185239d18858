package conformance

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/conformance/driver"
)

// doNothingRole makes the test binary a driver that claims every profile
// and capability, answers every request at once with an empty, valid
// result, and does nothing else: it starts no server, emits no event and
// never reports a call's or an acquire's outcome. It is the worst case for
// a suite whose failures wait: every wait must be decided from what the
// implementation does not do.
const doNothingRole = "do-nothing"

// hangShutdownEnv, set to 1, makes the do-nothing driver never answer a
// shutdown after a start and never exit on its own, like a library whose
// close hangs (the harness's probe of the driver, hello then shutdown, is
// answered).
const hangShutdownEnv = "MCPLIFE_DO_NOTHING_HANG_SHUTDOWN"

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
	started := false
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
		started = started || req.Method == driver.MethodStart
		if req.Method == driver.MethodShutdown && started && os.Getenv(hangShutdownEnv) == "1" {
			select {} // until killed
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

// After a spec has failed, a driver of another process gets a short grace
// to shut down, whatever -shutdown-timeout says, and is then killed: a
// failure does not also cost a library's slow close. The report says so.
func TestFailedSpecCutsTeardownShort(t *testing.T) {
	bin := buildHarness(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := runHarness(t.Context(), t.TempDir(), bin, []string{roleEnv + "=" + doNothingRole, hangShutdownEnv + "=1"},
		"-impl="+exe, "-fixture="+buildFixture(t), "-req=CORE-CONNECT-001", "-era=legacy", "-shutdown-timeout=1m", "-v")
	if run.err != nil {
		t.Fatalf("%v\n%s", run.err, tail(run.output, 40))
	}
	if !slices.Equal(run.failing, []string{"CORE-CONNECT-001"}) {
		t.Fatalf("failing %v, want CORE-CONNECT-001 alone\n%s", run.failing, tail(run.output, 40))
	}
	const note = "teardown: the spec had failed, and the driver, still shutting down after 500ms, was killed"
	if !strings.Contains(run.output, note) || strings.Contains(run.output, "the driver did not shut down cleanly") {
		t.Fatalf("want the note %q and no shutdown failure in\n%s", note, tail(run.output, 60))
	}
}
