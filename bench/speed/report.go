package speed

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/textsafe"
)

// Report is the outcome of Run: one Result per client, in Config order.
type Report struct {
	// Date is the day of the measurement (UTC, YYYY-MM-DD).
	Date    string   `json:"date"`
	Config  Config   `json:"config"`
	Results []Result `json:"results"`
}

// Result is one client's measurements over the runs it completed.
type Result struct {
	Name string `json:"name"`
	// Implementation is what the driver named in hello.
	Implementation string `json:"implementation"`
	// Eras are the protocol eras the client's calls used (the fixture's
	// journal), over the runs.
	Eras []driver.Era `json:"eras"`
	// Runs is how many runs completed; Errors says why the others did not.
	Runs   int      `json:"runs"`
	Errors []string `json:"errors,omitempty"`
	// ConnectOneMs and ConnectManyMs: start to an open session of one
	// server and of Config.Servers servers, in milliseconds.
	ConnectOneMs  Stat `json:"connect_one_ms"`
	ConnectManyMs Stat `json:"connect_many_ms"`
	// CallUs is the median latency of a sequential stdio tool call, in
	// microseconds (per run; the Stat is over the runs' medians).
	CallUs Stat `json:"call_us"`
	// MemoryPerServerKiB is the driver process's resident memory per
	// server beyond the first, in KiB.
	MemoryPerServerKiB Stat `json:"memory_per_server_kib"`
}

// Stat is the median and spread of one measurement over the runs.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func stat(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Stat{Median: s[(len(s)-1)/2], Min: s[0], Max: s[len(s)-1]}
}

func summarize(name, impl string, samples []sample, errs []string, servers int) Result {
	r := Result{Name: name, Implementation: impl, Runs: len(samples), Errors: errs}
	var c1, cn, call, mem []float64
	for _, s := range samples {
		if !slices.Contains(r.Eras, s.era) {
			r.Eras = append(r.Eras, s.era)
		}
		c1 = append(c1, float64(s.connect1)/float64(time.Millisecond))
		cn = append(cn, float64(s.connectN)/float64(time.Millisecond))
		call = append(call, float64(s.call)/float64(time.Microsecond))
		mem = append(mem, float64(perServer(s, servers))/1024)
	}
	r.ConnectOneMs, r.ConnectManyMs, r.CallUs, r.MemoryPerServerKiB = stat(c1), stat(cn), stat(call), stat(mem)
	return r
}

// WriteTable writes rep as a table for a terminal: one line per client,
// each cell the median with the spread in brackets.
func WriteTable(w io.Writer, rep Report) {
	cfg := rep.Config
	fmt.Fprintf(w, "speed through the drivers: %d runs, interleaved; fixture servers speaking %s; %d timed calls per run\n", cfg.Runs, cfg.Era, cfg.Calls)
	fmt.Fprintf(w, "%-22s %-8s %-18s %-18s %-20s %s\n", "client", "era", "connect 1 (ms)", fmt.Sprintf("connect %d (ms)", cfg.Servers), "call (µs)", "memory/server (KiB)")
	for _, r := range rep.Results {
		name := clip(textsafe.Line(r.Name), 22)
		if r.Runs == 0 {
			fmt.Fprintf(w, "%-22s no run completed\n", name)
		} else {
			fmt.Fprintf(w, "%-22s %-8s %-18s %-18s %-20s %s\n", name, eras(r.Eras), cell(r.ConnectOneMs, 0), cell(r.ConnectManyMs, 0), cell(r.CallUs, 0), cell(r.MemoryPerServerKiB, 0))
		}
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  %s: %s\n", name, clip(textsafe.Line(e), 200))
		}
	}
}

// WriteMarkdown writes rep as a Markdown table (docs/MATRIX.md).
func WriteMarkdown(w io.Writer, rep Report) {
	cfg := rep.Config
	fmt.Fprintf(w, "Measured on %s by `harness bench -impl ...` (`.ci/speed`): %d runs, the clients interleaved, against the same stdio fixture server (speaking %s; the era column says which era each client's calls used). Each cell is the median over the runs, the spread (min-max) in brackets. Connect: from `start` to the open session's result. Call: the median latency of %d sequential calls of the fixture's echo tool in each run. Memory: the driver process's resident memory per server beyond the first, from a %d-server and a 1-server session.\n\n", rep.Date, cfg.Runs, cfg.Era, cfg.Calls, cfg.Servers)
	fmt.Fprintf(w, "| Client | Era | Connect 1 server (ms) | Connect %d servers (ms) | Tool call (µs) | Memory per server (KiB) |\n|---|---|---|---|---|---|\n", cfg.Servers)
	for _, r := range rep.Results {
		name := mdEscape(clip(textsafe.Line(r.Name), 40))
		if r.Runs == 0 {
			fmt.Fprintf(w, "| %s | | no run completed | | | |\n", name)
			continue
		}
		note := ""
		if len(r.Errors) > 0 {
			note = fmt.Sprintf(" (%d of %d runs)", r.Runs, r.Runs+len(r.Errors))
		}
		fmt.Fprintf(w, "| %s%s | %s | %s | %s | %s | %s |\n", name, note, eras(r.Eras), cell(r.ConnectOneMs, 0), cell(r.ConnectManyMs, 0), cell(r.CallUs, 0), cell(r.MemoryPerServerKiB, 0))
	}
}

// eras renders the eras a client's calls used.
func eras(es []driver.Era) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

func cell(s Stat, prec int) string {
	return fmt.Sprintf("%.*f [%.*f-%.*f]", prec, s.Median, prec, s.Min, prec, s.Max)
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "`", "'", "<", "&lt;", ">", "&gt;").Replace(s)
}

// WriteJSON writes rep to file.
func WriteJSON(file string, rep Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("speed: %w", err)
	}
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("speed: %w", err)
	}
	return nil
}

// ReadJSON reads a report WriteJSON wrote.
func ReadJSON(file string) (Report, error) {
	var rep Report
	b, err := os.ReadFile(file)
	if err != nil {
		return rep, fmt.Errorf("speed: %w", err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("speed: %s: %w", file, err)
	}
	return rep, nil
}

// clip cuts s to at most n runes, marking a cut with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
func kib(b int64) string        { return fmt.Sprintf("%.0f KiB", float64(b)/1024) }

// tailBuffer keeps the last tailBytes bytes written to it: a driver's
// stderr, shown with its error.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 2048

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = slices.Clone(t.buf[len(t.buf)-tailBytes:])
	}
	return len(p), nil
}

// Len returns the number of bytes kept.
func (t *tailBuffer) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.buf)
}

// String returns the bytes kept, sanitized for a terminal.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return clip(textsafe.Line(string(t.buf)), tailBytes)
}
