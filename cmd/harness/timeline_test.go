package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const traceLines = `{"seq":1,"kind":"session.opened","session":"s1","at_ms":0}
{"seq":2,"server":"fx","kind":"server.connecting","attrs":{"attempt":0,"transport":"stdio"},"at_ms":0}
{"seq":3,"server":"fx","kind":"process.started","attrs":{"pid":42},"at_ms":0}
{"seq":4,"server":"fx","kind":"server.connected","attrs":{"tools":9,"transport":"stdio"},"at_ms":20}
{"seq":5,"server":"fx","kind":"process.exited","attrs":{"pid":42,"planned":false},"at_ms":900}
{"seq":6,"server":"fx","kind":"restart.scheduled","attrs":{"attempt":1,"delay_ms":1000},"at_ms":900}
{"seq":7,"server":"fx","kind":"restart.attempt","attrs":{"attempt":1},"at_ms":1900}
`

func TestTimelineCommand(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "crash.jsonl")
	if err := os.WriteFile(trace, []byte(traceLines), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := harness(t, "timeline", trace)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "crash.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg ", ">crash<", ">fx<", "backoff 1s", "restart.scheduled"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// A recorded trace: a JSON object with an "events" array, to HTML.
	obj := filepath.Join(dir, "rec.json")
	body := `{"format": "some-trace", "events": [` + strings.Join(strings.Split(strings.TrimSpace(traceLines), "\n"), ",") + `]}`
	if err := os.WriteFile(obj, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "out.html")
	if code, out, errs := harness(t, "timeline", "-o", html, obj); code != 0 || !strings.Contains(out, "7 events") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(html); !strings.HasPrefix(string(b), "<!DOCTYPE html>") || !strings.Contains(string(b), "<svg ") {
		t.Errorf("HTML output:\n%.300s", b)
	}
	// Bad input names the file and line.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(traceLines+"not json\n"), 0o644)
	if code, _, errs := harness(t, "timeline", bad); code != 1 || !strings.Contains(errs, "bad.jsonl: line 8") {
		t.Errorf("bad trace: exit %d, stderr %q", code, errs)
	}
	if code, _, _ := harness(t, "timeline"); code != 2 {
		t.Errorf("no TRACE: exit %d, want 2", code)
	}
}

func TestRunTimeline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tl")
	code, out, errs := harness(t, "run", "-run", "^071-", "-timeline", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// Both eras (the default): one file set per era.
	// The modern probe has no ping step: 3 s shorter.
	for era, span := range map[string]string{"legacy": "9s", "modern": "6s"} {
		for _, ext := range []string{".jsonl", ".svg", ".html"} {
			b, err := os.ReadFile(filepath.Join(dir, "071-restart-success."+era+ext))
			if err != nil {
				t.Fatal(err)
			}
			if ext == ".svg" && (!strings.Contains(string(b), "virtual time, "+span+" end to end") || !strings.Contains(string(b), "restart.attempt attempt=1")) {
				t.Errorf("SVG of 071 in %s:\n%.600s", era, b)
			}
		}
	}
}
