package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// checkPacked checks that a history record gives back exactly the event
// emitted, strings byte for byte, and matches as Matcher.Match does on it.
func checkPacked(t *testing.T, seq uint64, at time.Duration, session, server string, kind Kind, attrs []Attr) {
	t.Helper()
	rec := packedAt(seq, at, session, server, kind, attrs)
	got := rec.event()
	want := Event{Seq: seq, At: at, Server: server, Session: session, Kind: kind, Attrs: map[string]any{}}
	for _, a := range attrs {
		want.Attrs[a.Key] = a.Value()
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("packed record gives %+v, want %+v", got, want)
	}
	ms := []Matcher{{Kind: kind, Server: server, Session: session}, {Kind: kind + "x"}}
	for _, a := range attrs {
		v := fmt.Sprint(a.Value())
		ms = append(ms, Matcher{Attrs: map[string]string{a.Key: v}}, Matcher{Attrs: map[string]string{a.Key: v + "x"}})
	}
	for _, m := range ms {
		rm := newRecordMatcher(m)
		if rec.match(&rm) != m.Match(got) {
			t.Fatalf("record match %+v = %v, Matcher.Match says %v", m, rec.match(&rm), m.Match(got))
		}
	}
}

// FuzzEventJSONL encodes an event with arbitrary server, session, kind and
// attributes of every type (string, int64, bool, float64) as JSONL and
// decodes it: the event is exactly one line; decoding gives it back exactly
// (At at millisecond precision, whole floats as int64, invalid UTF-8 as
// U+FFFD) with int64 values exact over their whole range; a second round trip
// is the identity; String() stays on one line whatever the strings hold;
// and the history's packed record of the event gives it back exactly and
// matches as Matcher.Match does (checkPacked).
func FuzzEventJSONL(f *testing.F) {
	f.Add(uint64(1), int64(1500), "github", "", "server.connected", "tools", "3", int64(3), true, 1.5)
	f.Add(uint64(2), int64(0), "a\nb", "s\r1", "config.warning", "error", "line1\nline2\t\"q\"", int64(-1), false, 0.0)
	f.Add(uint64(3), int64(-5), "\xff", "\u2028", "k\x00", "<b>&amp;", "\u2029</script>", int64(math.MaxInt64), true, math.MaxFloat64)
	f.Add(uint64(math.MaxUint64), int64(math.MaxInt64/1000000), "", "", "", "", "", int64(math.MinInt64), false, -0.0)
	f.Add(uint64(4), int64(7), "s", "", "k", "pid", "", int64(1<<53+1), true, 9007199254740993.0)
	f.Add(uint64(5), int64(7), "s", "", "k", "x_ms", "\x1b[31mred", int64(-1<<62), false, 1e300)
	f.Fuzz(func(t *testing.T, seq uint64, atMS int64, server, session, kind, key, sval string, ival int64, bval bool, fval float64) {
		if math.IsNaN(fval) || math.IsInf(fval, 0) {
			fval = 0 // not representable in JSON; attributes never hold them
		}
		atMS %= math.MaxInt64 / int64(time.Millisecond)
		checkPacked(t, seq, time.Duration(atMS)*time.Millisecond, session, server, Kind(kind),
			[]Attr{String(key+"_s", sval), Int64(key+"_i", ival), Bool(key+"_b", bval)})
		e := Event{Seq: seq, At: time.Duration(atMS) * time.Millisecond, Server: server, Session: session, Kind: Kind(kind),
			Attrs: map[string]any{key + "_s": sval, key + "_i": ival, key + "_b": bval, key + "_f": fval}}
		var buf bytes.Buffer
		if err := WriteJSONL(&buf, []Event{e}); err != nil {
			t.Fatalf("WriteJSONL: %v", err)
		}
		line := buf.Bytes()
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("not exactly one line: %q", line)
		}
		var got Event
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("decode %q: %v", line, err)
		}
		want := e
		want.Server, want.Session, want.Kind = jsonStr(server), jsonStr(session), Kind(jsonStr(kind))
		want.Attrs = map[string]any{}
		for k, v := range e.Attrs {
			switch x := v.(type) {
			case string:
				v = jsonStr(x)
			case float64:
				// A whole number comes back as the int64 its JSON text reads.
				text, _ := json.Marshal(x)
				if i, err := strconv.ParseInt(string(text), 10, 64); err == nil {
					v = i
				} else if x == math.Trunc(x) && x >= math.MinInt64 && x < math.MaxInt64 {
					v = int64(x)
				}
			}
			want.Attrs[jsonStr(k)] = v
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
		}
		var buf2 bytes.Buffer
		if err := WriteJSONL(&buf2, []Event{got}); err != nil {
			t.Fatal(err)
		}
		var again Event
		if err := json.Unmarshal(buf2.Bytes(), &again); err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("second round trip: %v\n%#v\n%#v", err, again, got)
		}
		if s := e.String(); strings.ContainsAny(s, "\n\r\u2028\u2029") {
			t.Fatalf("String() is not one line: %q", s)
		}
	})
}

// jsonStr is s as it reads back from JSON: each invalid UTF-8 byte becomes
// U+FFFD.
func jsonStr(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += w
	}
	return b.String()
}
