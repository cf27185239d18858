package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Event is one lifecycle step.
type Event struct {
	// Seq numbers events from 1 in emission order.
	Seq uint64 `json:"seq"`
	// At is the offset from the recorder's start on its clock (virtual time
	// under a fake clock).
	At time.Duration `json:"-"`
	// Server names the MCP server the event concerns; "" for runtime-wide
	// events.
	Server string `json:"server,omitempty"`
	// Session names the agent session, when one is involved.
	Session string `json:"session,omitempty"`
	Kind    Kind   `json:"kind"`
	// Attrs carries typed attributes: string, int64, bool or float64 values.
	// Durations are int64 milliseconds under keys ending in "_ms".
	Attrs map[string]any `json:"attrs,omitempty"`
}

// Attr is one attribute of an Event. It holds its value unboxed, so an
// emit allocates nothing per attribute until the event is read.
type Attr struct {
	Key  string
	str  string
	num  int64
	kind attrKind
}

// attrKind is the type of an Attr's value.
type attrKind uint8

const (
	attrString attrKind = iota
	attrInt
	attrBool
)

// Value returns the attribute's value: a string, an int64 or a bool.
func (a Attr) Value() any {
	switch a.kind {
	case attrInt:
		return a.num
	case attrBool:
		return a.num != 0
	}
	return a.str
}

// String returns a string attribute.
func String(k, v string) Attr { return Attr{Key: k, str: v} }

// Int returns an integer attribute.
func Int(k string, v int) Attr { return Attr{Key: k, num: int64(v), kind: attrInt} }

// Int64 returns an integer attribute.
func Int64(k string, v int64) Attr { return Attr{Key: k, num: v, kind: attrInt} }

// Bool returns a boolean attribute.
func Bool(k string, v bool) Attr {
	a := Attr{Key: k, kind: attrBool}
	if v {
		a.num = 1
	}
	return a
}

// Millis returns a duration attribute in milliseconds; k should end in "_ms".
func Millis(k string, d time.Duration) Attr { return Int64(k, d.Milliseconds()) }

// Err returns an "error" attribute with err's message, or "" for nil.
func Err(err error) Attr {
	if err == nil {
		return String("error", "")
	}
	return String("error", err.Error())
}

// Strings returns a list attribute, comma-separated.
func Strings(k string, vs []string) Attr { return String(k, strings.Join(vs, ",")) }

// Get returns the attribute k formatted as a string, and whether it exists.
func (e Event) Get(k string) (string, bool) {
	v, ok := e.Attrs[k]
	if !ok {
		return "", false
	}
	return fmt.Sprint(v), true
}

// MarshalJSON encodes At as "at_ms".
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return json.Marshal(struct {
		plain
		AtMS int64 `json:"at_ms"`
	}{plain(e), e.At.Milliseconds()})
}

// UnmarshalJSON decodes "at_ms" into At; numbers in Attrs become int64 when
// they are whole (integers exactly, over the whole int64 range), float64
// otherwise.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var v struct {
		plain
		Attrs map[string]json.RawMessage `json:"attrs,omitempty"`
		AtMS  int64                      `json:"at_ms"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Event(v.plain)
	e.At = time.Duration(v.AtMS) * time.Millisecond
	e.Attrs = nil
	if v.Attrs != nil {
		e.Attrs = make(map[string]any, len(v.Attrs))
		for k, raw := range v.Attrs {
			a, err := decodeAttr(raw)
			if err != nil {
				return fmt.Errorf("attrs[%q]: %w", k, err)
			}
			e.Attrs[k] = a
		}
	}
	return nil
}

// decodeAttr decodes one attribute value. Numbers are read from their text,
// so an int64 beyond 2^53 is not rounded through float64.
func decodeAttr(raw json.RawMessage) (any, error) {
	var a any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		return nil, err
	}
	n, ok := a.(json.Number)
	if !ok {
		// Not a number: decode again without UseNumber, so that numbers
		// nested in objects and arrays stay float64 as before.
		var plain any
		err := json.Unmarshal(raw, &plain)
		return plain, err
	}
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil, err
	}
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), nil
	}
	return f, nil
}

// String formats the event on one line without wall-clock time:
// "+1.500s server.connected server=a tools=3". A value (or a server, session,
// kind or key) holding a space, a quote or a character that is not printable
// (a newline, a control character, invalid UTF-8) is quoted Go-style, so the
// line stays one line whatever the strings hold; an empty value is "".
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "+%s %s", formatOffset(e.At), quoteIfNeeded(string(e.Kind)))
	if e.Server != "" {
		fmt.Fprintf(&b, " server=%s", quoteIfNeeded(e.Server))
	}
	if e.Session != "" {
		fmt.Fprintf(&b, " session=%s", quoteIfNeeded(e.Session))
	}
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := quoteIfNeeded(fmt.Sprint(e.Attrs[k]))
		if v == "" {
			v = `""`
		}
		fmt.Fprintf(&b, " %s=%s", quoteIfNeeded(k), v)
	}
	return b.String()
}

// quoteIfNeeded returns s, or s quoted with %q when it holds a space, a
// double quote, a non-printable character or invalid UTF-8.
func quoteIfNeeded(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return r == ' ' || r == '"' || !unicode.IsPrint(r) }) >= 0 {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func formatOffset(d time.Duration) string {
	return fmt.Sprintf("%d.%03ds", d/time.Second, (d%time.Second)/time.Millisecond)
}

// WriteJSONL writes events to w, one JSON object per line.
func WriteJSONL(w io.Writer, events []Event) error {
	enc := json.NewEncoder(w)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}

// LogValue renders the event for log/slog.
func (e Event) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("kind", string(e.Kind)), slog.Uint64("seq", e.Seq)}
	if e.Server != "" {
		attrs = append(attrs, slog.String("server", e.Server))
	}
	if e.Session != "" {
		attrs = append(attrs, slog.String("session", e.Session))
	}
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, e.Attrs[k]))
	}
	return slog.GroupValue(attrs...)
}
