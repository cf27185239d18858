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
func ev(seq uint64, server string, kind event.Kind, attrs ...any) event.Event {
	e := event.Event{Seq: seq, Server: server, Kind: kind, At: time.Duration(seq) * time.Millisecond, Attrs: map[string]any{}}
	for i := 0; i+1 < len(attrs); i += 2 {
		e.Attrs[attrs[i].(string)] = attrs[i+1]
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
			ev(4, "a", event.ToolCallStarted, "call", "c1"),
			ev(5, "a", event.ToolCallStarted, "call", "c2"),
			ev(6, "a", event.ToolTimeout, "call", "c2"),
			ev(7, "a", event.ProbeFinished, "method", "ping", "healthy", "false"),
			ev(8, "a", event.ProbeFinished, "method", "tools/list", "healthy", "false"),
			ev(9, "a", event.RestartScheduled, "reason", "probe-failure", "attempt", "1", "delay_ms", int64(0)),
			ev(10, "a", event.RestartAttempt), ev(11, "a", event.RestartSucceeded),
			ev(12, "b", event.ToolCallStarted, "call", "c3"),
			ev(13, "b", event.TransportClosed), ev(14, "b", event.RestartScheduled, "reason", "transport-exit", "delay_ms", int64(0)),
			ev(15, "b", event.RestartAttempt), ev(16, "b", event.RestartSucceeded),
			ev(17, "b", event.ToolCallStarted, "call", "c4"),
			ev(18, "b", event.ToolCallStarted, "call", "c5"),
			ev(19, "b", event.ToolTimeout, "call", "c5"),
			ev(20, "b", event.ProbeFinished, "method", "ping", "healthy", "true"),
			ev(21, "a", event.ToolCallStarted, "call", "c6"),
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
		"call s1 c2 mcp_a_test '{\"text\":\"c2\"}'", "[cap:virtual-clock] advance 1500ms", "result c2 outcome=ok text~recovered:c2",
		"await -after mc2 restart.scheduled server=a attempt=1 delay_ms=0",
		"call s1 c3 mcp_b_test", "result c3 outcome=error error=mcp_connection_lost",
		"await -after mc3 restart.succeeded server=b attempt=1",
		"call s1 c4 mcp_b_fail", "result c4 outcome=tool-error",
		`"MCP_FIXTURE_BLOCK_EVENT_LOOP": "1"`, `"toolTimeout": 1500`,
		"[!cap:restart-policies] skip",
		"# Failures in the trace: 6, reproduced: 3.",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the scenario lacks %q:\n%s", want, s)
		}
	}
	// a's and b's failures are not all reproduced: the scenario asserts no
	// launch or restart count that would differ from the trace.
	for _, unwanted := range []string{"count-journal a.journal", "count-journal b.journal"} {
		if strings.Contains(s, unwanted) {
			t.Errorf("the scenario asserts %q although the server's failures are not all reproduced:\n%s", unwanted, s)
		}
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"server dead never connected", "call c5 (mcp_b_y): timeout-healthy, outcome error mcp_tool_timeout: timeout-healthy after exit-mid-call", "call c6"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if !res.Partial() || res.Calls != 4 || len(res.Failures) != 6 || res.Reproduced() != 3 {
		t.Errorf("partial %v, %d calls, %d failures, %d reproduced; want true, 4, 6, 3", res.Partial(), res.Calls, len(res.Failures), res.Reproduced())
	}
	for _, n := range res.Notes {
		if !strings.Contains(s, "# Not reproduced: "+strings.TrimSuffix(n, ".")) {
			t.Errorf("the header does not say %q", n)
		}
	}
	if _, err := scenarios.Parse("950-sample.txtar", res.Script); err != nil {
		t.Error(err)
	}
}

// idleExitTrace is a stdio server killed while idle (a fault set through
// its proxy's control endpoint) and restarted at once, as harness record
// writes it.
func idleExitTrace(transport string, failed int, recovered bool) *Trace {
	tr := &Trace{
		Format:  Format,
		Servers: map[string]Server{"everything": {Transport: transport, Proxied: true}},
		Faults:  []Fault{{Server: "everything", Rule: "exit-delay=200,code=9", AtMS: 3040, Op: "add", Source: "control", Launch: 1}},
	}
	seq := uint64(0)
	add := func(kind event.Kind, attrs ...any) {
		seq++
		tr.Events = append(tr.Events, ev(seq, "everything", kind, attrs...))
	}
	add(event.ServerConnected)
	add(event.TransportClosed, "error", "connection closed by the server")
	add(event.ProcessExited, "pid", int64(42), "planned", false, "status", "exit status 9")
	delays := []int64{0, 1000, 2000, 5000}
	for i := 0; i <= failed; i++ {
		add(event.RestartScheduled, "reason", "transport-exit", "attempt", int64(i+1), "delay_ms", delays[i])
		if i == failed && !recovered {
			break
		}
		add(event.RestartAttempt, "reason", "transport-exit", "attempt", int64(i+1))
		if i < failed {
			add(event.RestartFailed, "reason", "transport-exit", "attempt", int64(i+1), "error", "connection refused")
		} else {
			add(event.RestartSucceeded, "reason", "transport-exit", "attempt", int64(i+1))
		}
	}
	return tr
}

// issue 31: a recorded idle exit (no call at all) becomes a kill of the
// idle fixture and the restart that follows, with the trace's counts; the
// scenario never asserts a single launch.
func TestGenerateIdleExit(t *testing.T) {
	res, err := Generate(idleExitTrace("stdio", 0, true), "950-idle", "idle.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(res.Script)
	for _, want := range []string{
		"# e1: everything went away while idle (recorded: restart for transport-exit, recovered; the process: exit status 9)",
		"# Fault at 3040ms on everything (set through the control endpoint, proxy launch 1): exit-delay=200,code=9.",
		"mark me1\nsignal everything.journal SIGKILL\nawait -after me1 transport.closed server=everything\n",
		"await -after me1 restart.scheduled server=everything attempt=1 delay_ms=0\n",
		"await -after me1 restart.succeeded server=everything attempt=1\n",
		"count-journal everything.journal 2 launch\ncount 1 restart.attempt server=everything\n",
		"# Failures in the trace: 1, reproduced: 1.",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the scenario lacks %q:\n%s", want, s)
		}
	}
	if res.Partial() || len(res.Failures) != 1 || !res.Failures[0].Reproduced() || res.Failures[0].Step != "e1" {
		t.Errorf("notes %q, failures %+v", res.Notes, res.Failures)
	}
	if _, err := scenarios.Parse("950-idle.txtar", res.Script); err != nil {
		t.Error(err)
	}
}

// An http server that stayed down for three attempts and came back is
// stopped, left down through three attempts on the scenario's clock, and
// served again before the fourth.
func TestGenerateIdleExitHTTP(t *testing.T) {
	res, err := Generate(idleExitTrace("http", 3, true), "951-idle-http", "idle.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(res.Script)
	for _, want := range []string{
		"fixture-serve EVERYTHING MCP_FIXTURE_ERA=legacy MCP_FIXTURE_JOURNAL=${WORK}/everything.journal MCP_FIXTURE_TRANSPORT=http\nstart -inline servers.json -env EVERYTHING_URL\n",
		"fixture-stop EVERYTHING SIGKILL\nawait -after me1 transport.closed server=everything\n",
		"await -after me1 restart.scheduled server=everything attempt=1 delay_ms=0\nawait -after me1 restart.failed server=everything attempt=1\n",
		"attempt=2 delay_ms=1000\n[cap:virtual-clock] advance 1s\nawait -after me1 restart.failed server=everything attempt=2\n",
		"attempt=3 delay_ms=2000\n[cap:virtual-clock] advance 2s\nawait -after me1 restart.failed server=everything attempt=3\nfixture-serve EVERYTHING",
		"attempt=4 delay_ms=5000\n[cap:virtual-clock] advance 5s\nawait -after me1 restart.succeeded server=everything attempt=4\n",
		"count-journal everything.journal 2 launch\ncount 4 restart.attempt server=everything\n",
		`"url": "${EVERYTHING_URL}"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the scenario lacks %q:\n%s", want, s)
		}
	}
	if res.Partial() {
		t.Errorf("notes: %q", res.Notes)
	}
	// Still down when the trace ends: so is the scenario.
	res, err = Generate(idleExitTrace("http", 2, false), "952-down", "down.json")
	if err != nil {
		t.Fatal(err)
	}
	s = string(res.Script)
	if !strings.Contains(s, "await -after me1 restart.scheduled server=everything attempt=3 delay_ms=2000\n\ncount-journal everything.journal 1 launch\ncount 2 restart.attempt") || res.Partial() {
		t.Errorf("notes %q; scenario:\n%s", res.Notes, s)
	}
}

// What the fixture cannot do is named: a stdio server whose restarts
// failed twice, and an http server that came back at once.
func TestGeneratePartial(t *testing.T) {
	res, err := Generate(idleExitTrace("stdio", 2, true), "953-partial", "p.json")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial() || !strings.Contains(strings.Join(res.Notes, "\n"), "2 failed restart attempts are recorded; the fixture relaunches at the first") {
		t.Errorf("notes: %q", res.Notes)
	}
	if strings.Contains(string(res.Script), "count-journal") {
		t.Errorf("a partial server's counts are asserted:\n%s", res.Script)
	}
	res, err = Generate(idleExitTrace("http", 0, true), "954-partial", "p.json")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial() || !strings.Contains(strings.Join(res.Notes, "\n"), "the recorded first attempt connected at once") {
		t.Errorf("notes: %q", res.Notes)
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

// A trace may come from anyone: the text it carries (errors, arguments,
// rules, tool names) reaches the scenario's comments and repro's notes
// with its terminal controls escaped.
func TestGenerateHostileTrace(t *testing.T) {
	tr := idleExitTrace("stdio", 2, true)
	tr.Faults[0].Rule = "exit-delay=200,message=\x1b]0;pwned\x07"
	tr.Events[1].Attrs["error"] = "boom \x1b[2J\u202e"
	tr.Calls = []Call{{ID: "c1", Server: "nosuch", Exposed: "mcp_x\x1b[31m", Outcome: "error", Args: []byte(`{"a":"\u001b[0m"}`)}}
	// The protocol it names reaches the scenario's header only when it is
	// a version.
	srv := tr.Servers["everything"]
	srv.Protocol, srv.Era = "2026-07-28\n[exec] kill \x1b[2J", "modern\nskip"
	tr.Servers["everything"] = srv
	res, err := Generate(tr, "955-hostile", "h.json")
	if err != nil {
		t.Fatal(err)
	}
	all := string(res.Script) + strings.Join(res.Notes, "\n")
	for _, bad := range []string{"\x1b", "\x07", "\u202e", "[exec]", "\nskip"} {
		if strings.Contains(all, bad) {
			t.Errorf("%q reaches the scenario or the notes:\n%s", bad, all)
		}
	}
}
