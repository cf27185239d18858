package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/doctor"
	"github.com/mcplife/mcplife/internal/fixturelink"
)

// doctorConfig writes a config of fixture servers, extra entries as JSON.
func doctorConfig(t *testing.T, entries map[string]string) string {
	t.Helper()
	var parts []string
	for name, e := range entries {
		parts = append(parts, `"`+name+`": `+e)
	}
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, []byte("{\"mcpServers\": {\n"+strings.Join(parts, ",\n")+"\n}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDoctorExitCodesAndTable(t *testing.T) {
	fx := fixturelink.ForTest(t)
	good := `{"command": "` + fx + `", "env": {"GORACE": "atexit_sleep_ms=0"}}`
	cfg := doctorConfig(t, map[string]string{"alpha": good, "beta": good})
	code, out, errs := harness(t, "doctor", "-width", "80", "-config", cfg)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"alpha ", "beta ", "2 servers: 2 ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if len([]rune(line)) > 80 {
			t.Errorf("line wider than 80 columns: %q", line)
		}
	}

	broken := doctorConfig(t, map[string]string{"alpha": good, "zeta": good, "bad": `{"command": 7}`, "gone": `{"command": "/nonexistent/mcplife-server"}`})
	code, out, errs = harness(t, "doctor", "-width", "200", "-config", broken)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{broken + ":", "command: must be a string, got number", "/nonexistent/mcplife-server", "4 servers: 2 ok, 1 failed, 1 invalid"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = harness(t, "doctor", "-json", "-config", broken)
	var rep doctor.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-json output: %v\n%s", err, out)
	}
	if code != 1 || rep.Schema != doctor.Schema || len(rep.Servers) != 4 || rep.Failed != 2 {
		t.Errorf("-json: exit %d, report %+v", code, rep)
	}

	for _, args := range [][]string{
		{"doctor", "-config", filepath.Join(t.TempDir(), "absent.json")},
		{"doctor", "-nope"},
		{"doctor", "extra"},
	} {
		if code, _, errs := harness(t, args...); code != 2 || !strings.Contains(errs, "harness doctor:") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}

// TestDoctorWatch runs harness doctor -watch with a server that exits after
// every handshake and ends it (as SIGINT would, through the context) once
// two restarts were streamed. It waits for output, never for time.
func TestDoctorWatch(t *testing.T) {
	fx := fixturelink.ForTest(t)
	cfg := doctorConfig(t, map[string]string{
		"crashy": `{"command": "` + fx + `", "restartDelays": [0], "env": {"GORACE": "atexit_sleep_ms=0", "MCP_FIXTURE_EXIT_AFTER": "tools-list"}}`,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	var lines []string
	var mu sync.Mutex
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		restarts := 0
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if strings.Contains(sc.Text(), "restart.succeeded") {
				if restarts++; restarts == 2 {
					stop()
				}
			}
		}
	}()
	var errb strings.Builder
	code := runDoctorContext(wctx, []string{"-watch", "-config", cfg}, doctorInput{}, pw, &errb)
	pw.Close()
	<-read
	stop()
	out := strings.Join(lines, "\n")
	if ctx.Err() != nil {
		t.Fatalf("no second restart streamed:\n%s", out)
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb.String())
	}
	for _, want := range []string{"crashy  ok", "watching lifecycle events", "process.exited", "restart.scheduled", "restart.succeeded", "stopping the servers"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
