package timeline

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"

	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/runtime/event"
)

// Options configures the picture.
type Options struct {
	// Title heads the picture (a scenario or trace name).
	Title string
	// Axis names the time axis, such as "virtual time" (the default
	// "time since the first event").
	Axis string
	// Width is the picture's width in pixels; zero means 1200.
	Width int
}

// Layout constants, in pixels.
const (
	defaultWidth = 1200
	labelWidth   = 200
	rightMargin  = 24
	headerHeight = 78
	rowHeight    = 22
	barHeight    = 14
	laneGap      = 8
	minBarWidth  = 3
	markerSize   = 5
	charWidth    = 6.2 // average width of an 11px sans-serif character
	legendRow    = 20
)

// colors by style: fill, stroke.
var palette = map[Style][2]string{
	StyleSession:    {"#e8eef7", "#9fb3d1"},
	StyleGate:       {"#c7d7f0", "#5b7fb8"},
	StyleProcess:    {"#d9d9d9", "#8c8c8c"},
	StyleConnecting: {"#ffe08a", "#c9a227"},
	StyleConnected:  {"#9fd99f", "#3f8f3f"},
	StyleGrace:      {"#e3f4e3", "#7cb87c"},
	StyleBlocked:    {"#bdbdbd", "#616161"},
	StyleCall:       {"#8fb8ea", "#2f6db5"},
	StyleCallError:  {"#f4a6a6", "#c62828"},
	StyleProbe:      {"#cdb4ef", "#7a4fbf"},
	StyleBackoff:    {"#ffd3a1", "#d9822b"},
	StyleRestart:    {"#8fd3cf", "#2a8f88"},
	StyleFailure:    {"#d32f2f", "#8e0000"},
	StyleNote:       {"#616161", "#424242"},
}

var legendText = map[Style]string{
	StyleSession:    "session open",
	StyleGate:       "startup gate",
	StyleProcess:    "process alive",
	StyleConnecting: "connecting",
	StyleConnected:  "connected",
	StyleGrace:      "tools kept (grace)",
	StyleBlocked:    "blocked",
	StyleCall:       "tool call",
	StyleCallError:  "failed call",
	StyleProbe:      "health probe",
	StyleBackoff:    "backoff wait",
	StyleRestart:    "restart attempt",
	StyleFailure:    "failure",
	StyleNote:       "lifecycle step",
}

var legendOrder = []Style{StyleSession, StyleGate, StyleProcess, StyleConnecting, StyleConnected, StyleGrace, StyleBlocked,
	StyleCall, StyleCallError, StyleProbe, StyleBackoff, StyleRestart, StyleFailure, StyleNote}

// WriteSVG draws the events as an SVG document.
func WriteSVG(w io.Writer, evs []event.Event, opts Options) error {
	_, err := io.WriteString(w, Build(evs).SVG(opts))
	return err
}

// WriteHTML writes a self-contained HTML page with the SVG picture and the
// list of events under it; the page is also well-formed XML.
func WriteHTML(w io.Writer, evs []event.Event, opts Options) error {
	var b strings.Builder
	title := opts.Title
	if title == "" {
		title = "timeline"
	}
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>%s</title>\n", esc(title))
	b.WriteString("<style>body{font-family:sans-serif;margin:16px;color:#212121}pre{font-size:12px;line-height:1.35}summary{cursor:pointer}</style>\n</head>\n<body>\n")
	b.WriteString(Build(evs).SVG(opts))
	fmt.Fprintf(&b, "<details>\n<summary>%d events</summary>\n<pre>", len(evs))
	for _, e := range evs {
		b.WriteString(esc(e.String()))
		b.WriteByte('\n')
	}
	b.WriteString("</pre>\n</details>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// canvas accumulates SVG elements.
type canvas struct {
	b      strings.Builder
	x0     float64 // x of time 0
	scale  float64 // pixels per millisecond
	plotW  float64
	width  int
	height int
}

func (c *canvas) x(d time.Duration) float64 {
	return c.x0 + float64(d.Milliseconds())*c.scale
}

func f(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}

// esc makes s safe as XML character data or an attribute value: the
// characters XML 1.0 forbids, and the control and bidirectional characters
// a server's text may hold, become visible escapes (textsafe.Block; newlines
// stay), then markup is escaped. Every string drawn goes through esc, so
// the SVG and the HTML page are well-formed XML whatever the events hold.
func esc(s string) string { return html.EscapeString(textsafe.Block(s)) }

// label returns s as a one-line label of at most n characters: escapes
// first (textsafe.Line), so that a cut never splits what a control
// character stands for into invisible pieces, then truncate and esc.
func label(s string, n float64) string { return esc(truncate(textsafe.Line(s), n)) }

// SVG renders the timeline.
func (t *Timeline) SVG(opts Options) string {
	width := opts.Width
	if width <= 0 {
		width = defaultWidth
	}
	axis := opts.Axis
	if axis == "" {
		axis = "time since the first event"
	}
	title := opts.Title
	if title == "" {
		title = "timeline"
	}
	endMS := max(t.End.Milliseconds(), 1)
	c := &canvas{x0: labelWidth, plotW: float64(width - labelWidth - rightMargin), width: width}
	c.scale = c.plotW / float64(endMS)

	// Height: header, lanes, legend.
	y := float64(headerHeight)
	laneTops := make([]float64, len(t.Lanes))
	for i, l := range t.Lanes {
		laneTops[i] = y
		for _, r := range l.Rows {
			y += float64(len(r.Bars)) * rowHeight
		}
		y += laneGap
	}
	plotBottom := y
	legendItems := usedStyles(t)
	perRow := max(int(float64(width-40)/150), 1)
	legendRows := (len(legendItems) + perRow - 1) / perRow
	c.height = int(plotBottom) + 30 + legendRows*legendRow + 10

	b := &c.b
	fmt.Fprintf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"11\">\n",
		width, c.height, width, c.height)
	fmt.Fprintf(b, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, c.height)
	fmt.Fprintf(b, "<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\" fill=\"#212121\">%s</text>\n", label(title, float64(width-24)/9))
	fmt.Fprintf(b, "<text x=\"12\" y=\"42\" fill=\"#616161\">%s</text>\n",
		esc(fmt.Sprintf("%s, %s end to end; %d events, %d lanes; hover a mark for its events", axis, FormatDuration(t.End), t.Events, len(t.Lanes))))

	// Lane backgrounds and labels.
	for i, l := range t.Lanes {
		top := laneTops[i]
		h := 0.0
		for _, r := range l.Rows {
			h += float64(len(r.Bars)) * rowHeight
		}
		fill := "#fafafa"
		if i%2 == 1 {
			fill = "#f2f4f7"
		}
		fmt.Fprintf(b, "<rect x=\"4\" y=\"%s\" width=\"%d\" height=\"%s\" fill=\"%s\" stroke=\"#e0e0e0\"/>\n", f(top-2), width-8, f(h+4), fill)
		fmt.Fprintf(b, "<text x=\"12\" y=\"%s\" font-weight=\"bold\" font-size=\"12\" fill=\"#212121\">%s</text>\n", f(top+15), label(l.Name, 13))
	}

	// Axis and grid.
	step := tickStep(endMS, c.plotW)
	fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%d\" x2=\"%s\" y2=\"%d\" stroke=\"#9e9e9e\"/>\n", f(c.x0), headerHeight-8, f(c.x0+c.plotW), headerHeight-8)
	for ms := int64(0); ms <= endMS; ms += step {
		x := c.x(time.Duration(ms) * time.Millisecond)
		fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%d\" x2=\"%s\" y2=\"%s\" stroke=\"#e6e6e6\"/>\n", f(x), headerHeight-8, f(x), f(plotBottom))
		fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%d\" x2=\"%s\" y2=\"%d\" stroke=\"#9e9e9e\"/>\n", f(x), headerHeight-12, f(x), headerHeight-8)
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%d\" text-anchor=\"middle\" fill=\"#616161\">%s</text>\n", f(x), headerHeight-16, FormatDuration(time.Duration(ms)*time.Millisecond))
	}

	// Rows.
	for i, l := range t.Lanes {
		y := laneTops[i]
		for _, r := range l.Rows {
			fmt.Fprintf(b, "<text x=\"%d\" y=\"%s\" text-anchor=\"end\" fill=\"#757575\">%s</text>\n", labelWidth-8, f(y+15), label(r.Name, 14))
			for si, sub := range r.Bars {
				sy := y + float64(si)*rowHeight
				for _, bar := range sub {
					c.bar(bar, sy)
				}
			}
			c.markers(r.Markers, y)
			y += float64(len(r.Bars)) * rowHeight
		}
	}

	// Legend.
	ly := plotBottom + 22
	fmt.Fprintf(b, "<text x=\"12\" y=\"%s\" font-weight=\"bold\" fill=\"#424242\">legend</text>\n", f(ly))
	for i, st := range legendItems {
		col, row := i%perRow, i/perRow
		lx := 70 + float64(col)*150
		yy := ly + float64(row)*legendRow
		switch st {
		case StyleFailure, StyleNote:
			c.marker(st, lx+6, yy-4, "")
		default:
			p := palette[st]
			fmt.Fprintf(b, "<rect x=\"%s\" y=\"%s\" width=\"14\" height=\"10\" rx=\"2\" fill=\"%s\" stroke=\"%s\"/>\n", f(lx), f(yy-9), p[0], p[1])
		}
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" fill=\"#424242\">%s</text>\n", f(lx+20), f(yy), esc(legendText[st]))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func (c *canvas) bar(bar Bar, y float64) {
	x1, x2 := c.x(bar.Start), c.x(bar.End)
	w := math.Max(x2-x1, minBarWidth)
	p := palette[bar.Style]
	stroke, sw := p[1], "1"
	if bar.Failed {
		stroke, sw = palette[StyleFailure][0], "2"
	}
	by := y + (rowHeight-barHeight)/2
	fmt.Fprintf(&c.b, "<g><title>%s</title><rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%d\" rx=\"2\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%s\"/>",
		esc(bar.Tip), f(x1), f(by), f(w), barHeight, p[0], stroke, sw)
	if text := label(bar.Label, (w-6)/charWidth); text != "" && w >= 24 {
		fmt.Fprintf(&c.b, "<text x=\"%s\" y=\"%s\" fill=\"#212121\">%s</text>", f(x1+4), f(by+11), text)
	}
	c.b.WriteString("</g>\n")
}

// markers draws a row's markers; markers that would cover each other are
// nudged right so each stays visible.
func (c *canvas) markers(ms []Marker, y float64) {
	last := math.Inf(-1)
	for _, m := range ms {
		x := c.x(m.At)
		if x < last+2*markerSize+1 {
			x = last + 2*markerSize + 1
		}
		last = x
		c.marker(m.Style, x, y+rowHeight/2, m.Tip)
	}
}

func (c *canvas) marker(st Style, x, y float64, tipText string) {
	p := palette[st]
	c.b.WriteString("<g>")
	if tipText != "" {
		fmt.Fprintf(&c.b, "<title>%s</title>", esc(tipText))
	}
	s := float64(markerSize)
	switch st {
	case StyleFailure:
		// A red cross on a white disc.
		fmt.Fprintf(&c.b, "<circle cx=\"%s\" cy=\"%s\" r=\"%s\" fill=\"#ffffff\" stroke=\"%s\"/>", f(x), f(y), f(s+1), p[1])
		fmt.Fprintf(&c.b, "<path d=\"M%s %sL%s %sM%s %sL%s %s\" stroke=\"%s\" stroke-width=\"2\"/>",
			f(x-s+2), f(y-s+2), f(x+s-2), f(y+s-2), f(x-s+2), f(y+s-2), f(x+s-2), f(y-s+2), p[0])
	default:
		// A small diamond.
		fmt.Fprintf(&c.b, "<path d=\"M%s %sL%s %sL%s %sL%s %sZ\" fill=\"%s\"/>",
			f(x), f(y-s+1), f(x+s-1), f(y), f(x), f(y+s-1), f(x-s+1), f(y), p[0])
	}
	c.b.WriteString("</g>\n")
}

// usedStyles lists the styles the timeline uses, in legend order; failure
// is always listed.
func usedStyles(t *Timeline) []Style {
	used := map[Style]bool{StyleFailure: true}
	for _, l := range t.Lanes {
		for _, r := range l.Rows {
			for _, sub := range r.Bars {
				for _, b := range sub {
					used[b.Style] = true
				}
			}
			for _, m := range r.Markers {
				used[m.Style] = true
			}
		}
	}
	var out []Style
	for _, s := range legendOrder {
		if used[s] {
			out = append(out, s)
		}
	}
	return out
}

// tickSteps are the tick spacings, in milliseconds, tickStep picks from.
var tickSteps = []int64{1, 2, 5, 10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000,
	60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000}

// tickStep picks the smallest spacing that keeps ticks at least 70 pixels
// apart.
func tickStep(endMS int64, plotW float64) int64 {
	maxTicks := max(int64(plotW/70), 1)
	for _, step := range tickSteps {
		if endMS/step <= maxTicks {
			return step
		}
	}
	step := tickSteps[len(tickSteps)-1]
	for endMS/step > maxTicks {
		step *= 2
	}
	return step
}

// truncate shortens s to at most n characters, ending with "…" when cut.
func truncate(s string, n float64) string {
	limit := int(n)
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	if limit < 2 {
		return ""
	}
	return string(r[:limit-1]) + "…"
}
