package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/runtime/event"
)

// TestErrorPrecedence checks the order docs/DRIVER.md (section 5, "Which
// error wins") gives for requests to which several errors apply.
func TestErrorPrecedence(t *testing.T) {
	ctx := testCtx(t)
	// A driver without virtual-clock and acquire, so unsupported applies.
	c, err := StartInProcess(context.Background(), ServeOptions{Capabilities: []Capability{CapStatus}, Profiles: []Profile{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Error(err)
		}
		checkExchange(t, c)
	})
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	// 1. A bad envelope beats an unknown method.
	if err := c.SendLine(ctx, []byte(`{"id":7001,"method":"no.such","jsonrpc":"2.0"}`)); err != nil {
		t.Fatal(err)
	}
	r, err := c.AwaitUnmatched(ctx, func(r Response) bool { return r.ID != nil && *r.ID == 7001 })
	if err != nil {
		t.Fatal(err)
	}
	if r.Error == nil || r.Error.Code != string(CodeBadRequest) {
		t.Errorf("bad envelope with an unknown method: got %+v, want bad_request", r.Error)
	}
	for i, tc := range []struct {
		why  string
		req  Request
		want ErrorCode
	}{
		{"2. unknown method beats not_started", Request{Method: "no.such", Params: json.RawMessage(`{"bogus":1}`)}, CodeUnknownMethod},
		{"3. unsupported beats bad params and not_started", Request{Method: MethodClockAdvance, Params: json.RawMessage(`{"ms":"soon","bogus":1}`)}, CodeUnsupported},
		{"3. unsupported beats bad params (acquire)", Request{Method: MethodAcquire, Params: json.RawMessage(`{}`)}, CodeUnsupported},
		{"5. bad params beat not_started", Request{Method: MethodSessionOpen, Params: json.RawMessage(`{"bogus":1}`)}, CodeBadRequest},
		{"5. missing required field beats not_started", Request{Method: MethodToolCall, Params: json.RawMessage(`{"session":"s"}`)}, CodeBadRequest},
		{"6. not_started beats unknown_session", Request{Method: MethodToolsList, Params: json.RawMessage(`{"session":"ghost"}`)}, CodeNotStarted},
		{"6. not_started beats unknown_id", Request{Method: MethodToolCancel, Params: json.RawMessage(`{"callId":"ghost"}`)}, CodeNotStarted},
	} {
		t.Run(tc.why, func(t *testing.T) {
			wantCode(t, rawRequest(t, c, 7100+int64(i), tc.req), tc.want)
		})
	}

	// With virtual-clock announced but a real clock started, bad params
	// still come before the clock mode's unsupported.
	full := inProcess(t)
	started(t, full, ClockReal, nil, nil)
	wantCode(t, rawRequest(t, full, 7200, Request{Method: MethodClockAdvance, Params: json.RawMessage(`{"ms":-1}`)}), CodeBadRequest)
	wantCode(t, rawRequest(t, full, 7201, Request{Method: MethodClockAdvance, Params: json.RawMessage(`{"ms":1}`)}), CodeUnsupported)
}

// workedExample returns the request and driver lines of section 12 of
// docs/DRIVER.md; lines cut short with "..." are left out.
func workedExample(t *testing.T) []TranscriptLine {
	t.Helper()
	doc, err := os.ReadFile("../../docs/DRIVER.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(doc, []byte("\n## 12. Worked example\n"))
	if !ok {
		t.Fatal("docs/DRIVER.md has no section 12. Worked example")
	}
	sec, _, _ := bytes.Cut(rest, []byte("\n## 13."))
	var out []TranscriptLine
	for _, l := range strings.Split(string(sec), "\n") {
		dir := Received
		switch {
		case strings.HasPrefix(l, "> "):
			dir = Sent
		case strings.HasPrefix(l, "< "):
		default:
			continue
		}
		if strings.Contains(l, " ... ") {
			continue
		}
		out = append(out, TranscriptLine{Dir: dir, Line: []byte(l[2:])})
	}
	return out
}

// TestWorkedExample checks the worked example of docs/DRIVER.md against the
// schemas and the event vocabulary: every event carries exactly the
// attributes its kind documents, with documented types and values, and seq
// counts up by one.
func TestWorkedExample(t *testing.T) {
	lines := workedExample(t)
	if len(lines) < 20 {
		t.Fatalf("found only %d lines in the worked example", len(lines))
	}
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range v.ValidateTranscript(lines) {
		t.Error(err)
	}
	seq := uint64(0)
	for _, l := range lines {
		var m struct {
			Type  string       `json:"type"`
			Event *event.Event `json:"event"`
		}
		if l.Dir != Received || json.Unmarshal(l.Line, &m) != nil || m.Type != TypeEvent || m.Event == nil {
			continue
		}
		e := *m.Event
		seq++
		if e.Seq != seq {
			t.Errorf("%s: seq %d, want %d", l.Line, e.Seq, seq)
		}
		if err := event.CheckDocumented(e); err != nil {
			t.Errorf("%s: %v", l.Line, err)
		}
		attrs, err := event.Attributes(e.Kind)
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, a := range attrs {
			want = append(want, a.Name)
		}
		for k := range e.Attrs {
			got = append(got, k)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Errorf("%s: attributes %v, the vocabulary documents %v", l.Line, got, want)
		}
	}
}

// TestStatusAsDocumented checks what section 5 of docs/DRIVER.md says about
// status: the source of an inline server, and one entry per private server
// whatever the number of sessions holding it.
func TestStatusAsDocumented(t *testing.T) {
	c := inProcess(t)
	ctx := testCtx(t)
	private := testServer(t, nil)
	var m map[string]any
	if err := json.Unmarshal(private, &m); err != nil {
		t.Fatal(err)
	}
	m["shared"] = false
	private, _ = json.Marshal(m)
	started(t, c, ClockReal, map[string]json.RawMessage{"p": private}, nil)
	st := statusOf(t, c, "p")
	if st.Source != (Source{File: "", Level: "inline", Provider: "inline"}) || st.State != "disconnected" || st.Refs != 0 {
		t.Errorf("status of an unheld inline private server = %+v", st)
	}
	for _, s := range []string{"s1", "s2"} {
		if _, err := c.OpenSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "p" || list[0].Refs != 1 {
		t.Errorf("status with two sessions holding a private server = %+v, want one entry with refs 1", list)
	}
}

// TestGoDriverSample checks that the Go driver shown in section 14 of
// docs/DRIVER.md is, verbatim, the driver of ExampleConn in
// example_test.go, which runs it and checks its output.
func TestGoDriverSample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/DRIVER.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(doc, []byte("\n## 14. The Go side\n"))
	if !ok {
		t.Fatal("docs/DRIVER.md has no section 14. The Go side")
	}
	sec, _, _ := bytes.Cut(rest, []byte("\n## 15."))
	const begin, end = "<!-- BEGIN EXAMPLE: conformance/driver/example_test.go -->\n```go\n", "```\n<!-- END EXAMPLE -->"
	_, after, ok := bytes.Cut(sec, []byte(begin))
	if !ok {
		t.Fatalf("section 14 has no %q", begin)
	}
	sample, _, ok := bytes.Cut(after, []byte(end))
	if !ok {
		t.Fatalf("section 14 has no %q", end)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"type echoDriver struct", "driver.Handlers{", "func (d *echoDriver) call("} {
		if !bytes.Contains(sample, []byte(want)) {
			t.Errorf("the sample of section 14 has no %q", want)
		}
	}
	if !bytes.Contains(example, sample) {
		t.Errorf("the sample of section 14 of docs/DRIVER.md is not the driver of ExampleConn in example_test.go; copy it from there:\n%s", sample)
	}
}
