package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcplife/mcplife/internal/timeline"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/scenarios"
)

const timelineUsage = `usage: harness timeline [-o FILE] [-format svg|html] [-title TEXT] [-axis TEXT] TRACE...

Draws the lifecycle events of each TRACE as one self-contained picture: a
lane per server (process, connection, tool calls, probes, restarts and
backoff waits) on the trace's time axis, failures marked, with a legend.
A TRACE is a file of events, one JSON object per line as the runtime's
event recorder writes them (harness run -timeline writes NNN-slug.jsonl),
or a JSON object with an "events" array (a recorded trace). "-" reads
standard input.

Each TRACE.jsonl or TRACE.json becomes TRACE.svg (or .html) next to it
unless -o names the output file (one TRACE only; "-" is standard output).

flags:
`

// runTimeline implements `harness timeline`.
func runTimeline(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("timeline", timelineUsage, stdout, stderr)
	out := fs.String("o", "", "write the picture to `FILE` (\"-\": standard output); only with one TRACE")
	format := fs.String("format", "", "svg or html (default: from -o's extension, else svg)")
	title := fs.String("title", "", "title of the picture (default: the trace's file name)")
	axis := fs.String("axis", "", "name of the time axis (default: \"time since the first event\")")
	width := fs.Int("width", 0, "width of the picture in pixels (default 1200)")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, "harness timeline: no TRACE given\n"+strings.SplitN(timelineUsage, "\n", 2)[0]+"\n")
		return 2
	}
	if *out != "" && fs.NArg() > 1 {
		fmt.Fprintf(stderr, "harness timeline: -o takes one TRACE, got %d\n", fs.NArg())
		return 2
	}
	if *format == "" {
		*format = "svg"
		if strings.HasSuffix(*out, ".html") || strings.HasSuffix(*out, ".htm") {
			*format = "html"
		}
	}
	if *format != "svg" && *format != "html" {
		fmt.Fprintf(stderr, "harness timeline: -format: want svg or html, got %q\n", *format)
		return 2
	}
	code := 0
	for _, trace := range fs.Args() {
		var evs []event.Event
		var err error
		if trace == "-" {
			evs, err = timeline.ReadEvents(os.Stdin)
		} else {
			var f *os.File
			f, err = os.Open(trace)
			if err == nil {
				evs, err = timeline.ReadEvents(f)
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "harness timeline: %s: %v\n", trace, err)
			code = 1
			continue
		}
		opts := timeline.Options{Title: *title, Axis: *axis, Width: *width}
		if opts.Title == "" {
			opts.Title = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(trace), ".jsonl"), ".json")
		}
		dest := *out
		if dest == "" {
			if trace == "-" {
				dest = "-"
			} else {
				dest = strings.TrimSuffix(strings.TrimSuffix(trace, ".jsonl"), ".json") + "." + *format
			}
		}
		var b bytes.Buffer
		if *format == "html" {
			err = timeline.WriteHTML(&b, evs, opts)
		} else {
			err = timeline.WriteSVG(&b, evs, opts)
		}
		if err == nil {
			if dest == "-" {
				_, err = stdout.Write(b.Bytes())
			} else {
				err = writeFileDirs(dest, b.Bytes())
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "harness timeline: %s: %v\n", trace, err)
			code = 1
			continue
		}
		if dest != "-" {
			fmt.Fprintf(stdout, "%s: %d events -> %s\n", trace, len(evs), dest)
		}
	}
	return code
}

// writeTimelines writes, for every scenario of rep, its events
// (NNN-slug.jsonl) and their timeline (NNN-slug.svg and NNN-slug.html) to
// dir.
func writeTimelines(dir string, rep *scenarios.Report) error {
	for _, r := range rep.Results {
		if r.Status == scenarios.StatusNA {
			continue // not run in this era
		}
		name := r.Name
		if len(rep.Eras) > 1 {
			name += "." + r.Era // NNN-slug.legacy.svg, NNN-slug.modern.svg
		}
		opts := timeline.Options{Title: r.Name + " (" + r.Era + ", " + r.Status + ")", Axis: "virtual time"}
		for _, out := range []struct {
			ext   string
			write func(io.Writer) error
		}{
			{".jsonl", func(w io.Writer) error { return event.WriteJSONL(w, r.Events) }},
			{".svg", func(w io.Writer) error { return timeline.WriteSVG(w, r.Events, opts) }},
			{".html", func(w io.Writer) error { return timeline.WriteHTML(w, r.Events, opts) }},
		} {
			var b bytes.Buffer
			if err := out.write(&b); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+out.ext), b.Bytes(), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
