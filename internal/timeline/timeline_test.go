package timeline_test

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/timeline"
	"github.com/mcplife/mcplife/runtime/event"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func readTrace(t *testing.T, name string) []event.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := timeline.ReadEvents(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return evs
}

// TestGolden renders every trace in testdata as SVG and HTML and compares
// them with the golden files (go test -update rewrites them).
func TestGolden(t *testing.T) {
	traces, _ := filepath.Glob("testdata/*.jsonl")
	if len(traces) == 0 {
		t.Fatal("no traces in testdata")
	}
	for _, trace := range traces {
		name := strings.TrimSuffix(filepath.Base(trace), ".jsonl")
		t.Run(name, func(t *testing.T) {
			evs := readTrace(t, filepath.Base(trace))
			opts := timeline.Options{Title: name, Axis: "virtual time"}
			for _, out := range []struct {
				ext   string
				write func(io.Writer) error
			}{
				{".svg", func(w io.Writer) error { return timeline.WriteSVG(w, evs, opts) }},
				{".html", func(w io.Writer) error { return timeline.WriteHTML(w, evs, opts) }},
			} {
				var b bytes.Buffer
				if err := out.write(&b); err != nil {
					t.Fatal(err)
				}
				// Rendering twice gives the same bytes.
				var again bytes.Buffer
				if err := out.write(&again); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b.Bytes(), again.Bytes()) {
					t.Fatalf("%s: two renderings differ", out.ext)
				}
				golden := filepath.Join("testdata", name+out.ext)
				if *update {
					if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if !bytes.Equal(b.Bytes(), want) {
					t.Errorf("%s differs from %s (run go test ./internal/timeline -update and review the diff)", out.ext, golden)
				}
			}
		})
	}
}

// TestWellFormed checks that the SVG parses as XML and the HTML page
// embeds it whole.
func TestWellFormed(t *testing.T) {
	evs := readTrace(t, "restart-backoff.jsonl")
	var svg, page bytes.Buffer
	opts := timeline.Options{Title: `a <title> & "quotes"`}
	if err := timeline.WriteSVG(&svg, evs, opts); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(svg.Bytes()))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
	if err := timeline.WriteHTML(&page, evs, opts); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page.Bytes(), svg.Bytes()) {
		t.Error("the HTML page does not embed the SVG")
	}
	if strings.Contains(page.String(), "<script") || strings.Contains(svg.String(), "href=") {
		t.Error("the output must be self-contained: no scripts, no links")
	}
}

// TestModel checks what the lanes show for a probe-failure restart.
func TestModel(t *testing.T) {
	tl := timeline.Build(readTrace(t, "restart-success.jsonl"))
	if len(tl.Lanes) != 2 || tl.Lanes[0].Name != "sessions" || tl.Lanes[1].Name != "fx" {
		t.Fatalf("lanes: got %v, want [sessions fx]", laneNames(tl))
	}
	rows := map[string]*timeline.Row{}
	var names []string
	for _, r := range tl.Lanes[1].Rows {
		rows[r.Name] = r
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "process,connection,tools,calls,probe/restart" {
		t.Fatalf("rows of fx: %s", got)
	}
	// Two processes: the hung one (stopped on purpose at 9s) and its
	// replacement.
	procs := rows["process"].Bars[0]
	if len(procs) != 2 || procs[0].Label != "pid 6672" || procs[0].End.Seconds() != 9 || procs[0].Failed {
		t.Errorf("process bars: %+v", procs)
	}
	// The call spans the whole recovery and succeeds; its timeout is marked.
	calls := rows["calls"].Bars[0]
	if len(calls) != 1 || calls[0].Label != "test" || calls[0].Failed || calls[0].End.Seconds() != 9 {
		t.Errorf("call bars: %+v", calls)
	}
	if m := rows["calls"].Markers; len(m) != 1 || m[0].Style != timeline.StyleFailure || m[0].At.Seconds() != 1 {
		t.Errorf("call markers: %+v", m)
	}
	// Both probe steps failed; the restart attempt followed a 0s backoff.
	var styles []string
	for _, b := range rows["probe/restart"].Bars[0] {
		styles = append(styles, string(b.Style)+":"+b.Label)
	}
	if got := strings.Join(styles, ","); got != "probe:ping,probe:tools/list,backoff:backoff 0s,restart:restart #1" {
		t.Errorf("probe/restart bars: %s", got)
	}
	// The first connection ends when the probe gives up, and the grace
	// window keeps the tools until the restart succeeds.
	var first *timeline.Bar
	for i, b := range rows["connection"].Bars[0] {
		if b.Style == timeline.StyleConnected {
			first = &rows["connection"].Bars[0][i]
			break
		}
	}
	if first == nil || first.Start != 0 || first.End.Seconds() != 7 {
		t.Errorf("first connection: %+v", first)
	}
	if g := rows["tools"].Bars[0]; len(g) != 1 || g[0].Start.Seconds() != 7 || g[0].End.Seconds() != 9 {
		t.Errorf("grace window: %+v", g)
	}
}

func laneNames(tl *timeline.Timeline) []string {
	var out []string
	for _, l := range tl.Lanes {
		out = append(out, l.Name)
	}
	return out
}

func TestReadEvents(t *testing.T) {
	lines := `{"seq":1,"kind":"session.opened","session":"s1","at_ms":0}
{"seq":2,"server":"a","kind":"server.connected","attrs":{"tools":3},"at_ms":1500}
`
	evs, err := timeline.ReadEvents(strings.NewReader(lines))
	if err != nil || len(evs) != 2 || evs[1].At.Milliseconds() != 1500 || evs[1].Attrs["tools"] != int64(3) {
		t.Fatalf("JSON lines: %v %+v", err, evs)
	}
	obj := `{"version": 1, "events": [` + strings.ReplaceAll(strings.TrimSpace(lines), "\n", ",") + `]}`
	evs, err = timeline.ReadEvents(strings.NewReader(obj))
	if err != nil || len(evs) != 2 || evs[0].Kind != event.SessionOpened {
		t.Fatalf("object with events: %v %+v", err, evs)
	}
	for _, c := range []struct{ in, want string }{
		{"", "empty"},
		{`{"wire": []}`, `needs an "events" array`},
		{lines + "{\"seq\": 3,\n", "line 3: not an event"},
		{`{"seq":1}` + "\n", `line 1: not an event: no "kind"`},
	} {
		_, err := timeline.ReadEvents(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadEvents(%q): got %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for ms, want := range map[int64]string{0: "0s", 250: "250ms", 1500: "1.5s", 60_000: "1m", 90_000: "1m30s", 237_000: "3m57s"} {
		if got := timeline.FormatDuration(msDur(ms)); got != want {
			t.Errorf("FormatDuration(%dms) = %q, want %q", ms, got, want)
		}
	}
}

// BenchmarkSVG renders a 10,000-event trace: the restart-backoff trace
// repeated, each copy shifted after the previous one.
func BenchmarkSVG(b *testing.B) {
	f, err := os.Open(filepath.Join("testdata", "restart-backoff.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	base, err := timeline.ReadEvents(f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	span := base[len(base)-1].At + msDur(1000)
	var evs []event.Event
	for i := 0; len(evs) < 10_000; i++ {
		for _, e := range base {
			e.At += time.Duration(i) * span
			e.Seq = uint64(len(evs) + 1)
			evs = append(evs, e)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := timeline.WriteSVG(io.Discard, evs, timeline.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
