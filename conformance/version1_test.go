package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/mcplife/mcplife/conformance/driver"
)

// version1Role makes the test binary a driver of mcplife-driver/1: the
// reference driver behind a filter that asks it for version 1 in hello
// (so it announces no eras and no pending-timers) and adds an attribute
// the event table does not list (version1Attr) to every event, as a
// driver written before the table was closed might.
const version1Role = "version-1"

// version1Attr is the attribute the version-1 driver adds to each event.
const version1Attr = "vendor_detail"

// serveVersion1 runs the version-1 driver on in and out until EOF.
func serveVersion1(ctx context.Context, in io.Reader, out io.Writer) error {
	toDriver, driverIn := io.Pipe()
	driverOut, fromDriver := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := driver.Serve(ctx, toDriver, fromDriver, driver.ServeOptions{})
		fromDriver.CloseWithError(err)
		served <- err
	}()
	forwarded := make(chan error, 1)
	go func() { forwarded <- rewriteLines(driverOut, out, addVersion1Attr) }()
	err := rewriteLines(in, driverIn, askVersion1)
	driverIn.Close()
	if ferr := <-forwarded; err == nil {
		err = ferr
	}
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}

// rewriteLines copies the lines of r to w, each passed through edit.
func rewriteLines(r io.Reader, w io.Writer, edit func([]byte) []byte) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := append(edit(sc.Bytes()), '\n')
		if _, err := w.Write(line); err != nil {
			return fmt.Errorf("writing a line: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading lines: %w", err)
	}
	return nil
}

// askVersion1 turns the harness's hello into a request for version 1.
func askVersion1(line []byte) []byte {
	var req map[string]json.RawMessage
	if json.Unmarshal(line, &req) != nil || string(req["method"]) != `"`+driver.MethodHello+`"` {
		return line
	}
	req["params"] = json.RawMessage(`{"protocol":"` + driver.ProtocolVersion1 + `"}`)
	b, err := json.Marshal(req)
	if err != nil {
		return line
	}
	return b
}

// addVersion1Attr adds version1Attr to an event line's attributes.
func addVersion1Attr(line []byte) []byte {
	var msg struct {
		Type  string         `json:"type"`
		Event map[string]any `json:"event"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Type != "event" || msg.Event == nil {
		return line
	}
	attrs, _ := msg.Event["attrs"].(map[string]any)
	if attrs == nil {
		attrs = map[string]any{}
	}
	attrs[version1Attr] = "x"
	msg.Event["attrs"] = attrs
	b, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return b
}

// TestVersion1AttributeNotes runs requirements through a driver of
// mcplife-driver/1 whose events carry an attribute the table does not
// list: the attribute table is closed from version 2 on, so for version 1
// the specs pass and the report notes the attribute instead of failing
// (docs/DRIVER.md section 11). The same run proves the harness still
// accepts a version-1 driver and judges it in the legacy era only.
func TestVersion1AttributeNotes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in a child process")
	}
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	report := filepath.Join(t.TempDir(), "report.json")
	reqs := []string{"CORE-RESULT-001", "CORE-TEARDOWN-001"}
	impl := "env " + roleEnv + "=" + version1Role + " " + exe
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestConformance$", "-test.count=1", "-ginkgo.no-color",
		"-req="+strings.Join(reqs, ","), "-json="+report, "-impl="+impl)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the run failed: %v\n%s", err, tail(out.String(), 40))
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var reports []types.Report
	if err := json.Unmarshal(b, &reports); err != nil || len(reports) != 1 {
		t.Fatalf("bad JSON report: %v", err)
	}
	type outcome struct {
		state types.SpecState
		notes string
	}
	got := map[string]outcome{} // requirement@era
	for _, sr := range reports[0].SpecReports {
		r, era, ok := reqOf(sr)
		if !ok {
			continue
		}
		o := outcome{state: sr.State}
		for _, e := range sr.ReportEntries {
			if e.Name == "notes" {
				o.notes += e.StringRepresentation()
			}
		}
		got[r.ID+"@"+string(era)] = o
	}
	for _, id := range reqs {
		legacy, ok := got[id+"@"+string(driver.EraLegacy)]
		if !ok || legacy.state != types.SpecStatePassed {
			t.Errorf("%s in the legacy era: %v, want passed\n%s", id, legacy.state, tail(out.String(), 40))
		}
		if want := fmt.Sprintf("carries attribute %q, which the vocabulary does not document", version1Attr); !strings.Contains(legacy.notes, want) {
			t.Errorf("%s: the report notes no undocumented attribute %q: %q", id, version1Attr, legacy.notes)
		}
		if !strings.Contains(legacy.notes, "not a failure") {
			t.Errorf("%s: the note does not say it is not a failure: %q", id, legacy.notes)
		}
		if modern, ok := got[id+"@"+string(driver.EraModern)]; ok && modern.state != types.SpecStateSkipped {
			t.Errorf("%s in the modern era: %v, want skipped (a version-1 driver speaks legacy only)", id, modern.state)
		}
	}
}
