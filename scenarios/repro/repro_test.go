package repro

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/scenarios"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ev builds an event.
func ev(seq uint64, server string, kind event.Kind, attrs ...string) event.Event {
	e := event.Event{Seq: seq, Server: server, Kind: kind, At: time.Duration(seq) * time.Millisecond, Attrs: map[string]any{}}
	for i := 0; i+1 < len(attrs); i += 2 {
		e.Attrs[attrs[i]] = attrs[i+1]
	}
	return e
}

func sampleTrace() *Trace {
	return &Trace{
		Format:  Format,
		Servers: map[string]Server{"a": {Transport: "stdio", ToolTimeoutMS: 1500, Proxied: true}, "b": {Transport: "stdio"}, "dead": {Transport: "stdio"}},
		Calls: []Call{
			{ID: "c1", Server: "a", Tool: "x", Exposed: "mcp_a_x", Outcome: "ok"},
			{ID: "c2", Server: "a", Tool: "x", Exposed: "mcp_a_x", Outcome: "ok"},
			{ID: "c3", Server: "b", Tool: "y", Exposed: "mcp_b_y", Outcome: "error", Code: "mcp_connection_lost"},
			{ID: "c4", Server: "b", Tool: "y", Exposed: "mcp_b_y", Outcome: "tool-error"},
			{ID: "c5", Server: "b", Tool: "y", Exposed: "mcp_b_y", Outcome: "error", Code: "mcp_tool_timeout"},
			{ID: "c6", Server: "a", Tool: "z", Exposed: "mcp_a_z", Outcome: "error", Code: "mcp_restart_failed"},
		},
		Events: []event.Event{
			ev(1, "a", event.ServerConnected), ev(2, "b", event.ServerConnected), ev(3, "dead", event.ServerFailed),
			ev(4, "a", event.ToolTimeout, "call", "c2"),
			ev(5, "a", event.ProbeFinished, "method", "ping", "healthy", "false"),
			ev(6, "a", event.ProbeFinished, "method", "tools/list", "healthy", "false"),
			ev(7, "a", event.RestartScheduled, "reason", "probe-failure"),
			ev(8, "a", event.RestartAttempt), ev(9, "a", event.RestartSucceeded),
			ev(10, "b", event.TransportClosed), ev(11, "b", event.RestartAttempt),
			ev(12, "b", event.ToolTimeout, "call", "c5"),
			ev(13, "b", event.ProbeFinished, "method", "ping", "healthy", "true"),
		},
	}
}

func TestClassify(t *testing.T) {
	tr := sampleTrace()
	want := map[string]Class{"c1": ClassOK, "c2": ClassHangRestart, "c3": ClassExitMidCall, "c4": ClassToolError, "c5": ClassTimeoutHealthy, "c6": ClassUnknown}
	for _, c := range tr.Calls {
		if got := Classify(tr, c); got != want[c.ID] {
			t.Errorf("%s: %s, want %s", c.ID, got, want[c.ID])
		}
	}
}

func TestGenerate(t *testing.T) {
	res, err := Generate(sampleTrace(), "950-sample", "sample.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(res.Script)
	for _, want := range []string{
		"open s1 ready=a,b\n",
		"call s1 c2 mcp_a_test '{\"text\":\"c2\"}'", "advance 1500ms", "result c2 outcome=ok text~recovered:c2",
		"call s1 c3 mcp_b_test", "result c3 outcome=error error=mcp_connection_lost",
		"call s1 c4 mcp_b_fail", "result c4 outcome=tool-error",
		"count-journal a.journal 2 launch", "count 1 restart.attempt server=a",
		`"MCP_FIXTURE_BLOCK_EVENT_LOOP": "1"`, `"toolTimeout": 1500`,
		"[!cap:restart-policies] skip",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the scenario lacks %q:\n%s", want, s)
		}
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"server dead never connected", "call c5 on b: timeout-healthy after exit-mid-call", "call c6"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "server b:") {
		t.Errorf("notes mention server b's restarts although the recorded and reproduced counts match:\n%s", notes)
	}
	if _, err := scenarios.Parse("950-sample.txtar", res.Script); err != nil {
		t.Error(err)
	}
}

func TestReadWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.json")
	if err := Write(p, sampleTrace()); err != nil {
		t.Fatal(err)
	}
	tr, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != len(sampleTrace().Events) || tr.Events[3].At != 4*time.Millisecond {
		t.Errorf("round trip lost events: %+v", tr.Events[3])
	}
	os.WriteFile(p, []byte(`{"format":"mcplife-trace/2","servers":{"a":{}}}`), 0o644)
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "mcplife-trace/2") {
		t.Errorf("Read of another version: %v", err)
	}
}

// The trace format is documented in docs/TESTING.md: every JSON field of
// the trace types is named there.
func TestTraceFieldsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/TESTING.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{Trace{}, Server{}, Call{}, Fault{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name != "" && !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("docs/TESTING.md does not document the trace field %s.%s (`%s`)", rt.Name(), rt.Field(i).Name, name)
			}
		}
	}
}
