package event

import (
	"encoding/binary"
	"strconv"
	"time"
)

// record is one event of the history, packed so that the garbage collector
// need not look into it: the event's server, session, kind and attributes
// are written back to back into one byte slice, which holds no pointers,
// and the Event is rebuilt when it is read.
//
// A runtime keeps thousands of events (DefaultEventLimit in the host
// package), and every collection used to mark each one's strings,
// attribute slice and map; go-sdk allocates hundreds of kilobytes per tool
// call, so collections are frequent. A packed record is one pointer to one
// object the collector never scans: a collection with a full history of
// 10,000 events takes about half the time (BenchmarkHistoryGC).
type record struct {
	seq  uint64
	at   time.Duration
	blob []byte
}

// packRecord packs an event, without its sequence number and time, which
// the recorder sets under its lock; attrs are copied, so the caller's slice
// may be reused.
func packRecord(session, server string, kind Kind, attrs []Attr) record {
	n := strLen(server) + strLen(session) + strLen(string(kind)) + uvarintLen(uint64(len(attrs)))
	for _, a := range attrs {
		n += 1 + strLen(a.Key)
		if a.kind == attrString {
			n += strLen(a.str)
		} else {
			n += binary.MaxVarintLen64
		}
	}
	b := make([]byte, 0, n)
	b = appendString(b, server)
	b = appendString(b, session)
	b = appendString(b, string(kind))
	b = binary.AppendUvarint(b, uint64(len(attrs)))
	for _, a := range attrs {
		b = append(b, byte(a.kind))
		b = appendString(b, a.Key)
		if a.kind == attrString {
			b = appendString(b, a.str)
		} else {
			b = binary.AppendVarint(b, a.num)
		}
	}
	return record{blob: b}
}

// uvarintLen is the length of x as a uvarint.
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// strLen is the packed length of s: its length as a uvarint, then s.
func strLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader walks a record's blob. Records are written only by packRecord, so
// a malformed blob is a bug: reading past its end panics.
type reader struct{ b []byte }

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	r.b = r.b[n:]
	return v
}

// bytes returns the next string's bytes, without copying.
func (r *reader) bytes() []byte {
	n := r.uvarint()
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

// head reads the server, session and kind.
func (rec record) head() (r reader, server, session, kind []byte) {
	r = reader{rec.blob}
	server = r.bytes()
	session = r.bytes()
	kind = r.bytes()
	return r, server, session, kind
}

// attr reads the next attribute; str is set for a string attribute.
func (r *reader) attr() (kind attrKind, key, str []byte, num int64) {
	kind = attrKind(r.b[0])
	r.b = r.b[1:]
	key = r.bytes()
	if kind == attrString {
		str = r.bytes()
	} else {
		num = r.varint()
	}
	return kind, key, str, num
}

// attrMap returns attrs as an Event's Attrs: nil when there are none.
func attrMap(attrs []Attr) map[string]any {
	if len(attrs) == 0 {
		return nil
	}
	m := make(map[string]any, len(attrs))
	for _, a := range attrs {
		m[a.Key] = a.Value()
	}
	return m
}

// event rebuilds the record's Event.
func (rec record) event() Event {
	r, server, session, kind := rec.head()
	e := Event{Seq: rec.seq, At: rec.at, Server: string(server), Session: string(session), Kind: Kind(kind)}
	if n := r.uvarint(); n > 0 {
		e.Attrs = make(map[string]any, n)
		for range n {
			k, key, str, num := r.attr()
			e.Attrs[string(key)] = Attr{str: string(str), num: num, kind: k}.Value()
		}
	}
	return e
}

// recordMatcher is a Matcher prepared for matching packed records: its
// attributes in a slice, so a scan over the history does not iterate a map
// per record.
type recordMatcher struct {
	m     Matcher
	attrs []struct{ key, value string }
}

func newRecordMatcher(m Matcher) recordMatcher {
	rm := recordMatcher{m: m}
	for k, v := range m.Attrs {
		rm.attrs = append(rm.attrs, struct{ key, value string }{k, v})
	}
	return rm
}

// match reports whether the record's event satisfies the matcher, as
// Matcher.Match on rec.event() would, without building the event.
func (rec record) match(rm *recordMatcher) bool {
	r, server, session, kind := rec.head()
	m := &rm.m
	if m.Kind != "" && string(kind) != string(m.Kind) {
		return false
	}
	if m.Server != "" && string(server) != m.Server {
		return false
	}
	if m.Session != "" && string(session) != m.Session {
		return false
	}
	if len(rm.attrs) == 0 {
		return true
	}
	attrs := r
	for _, want := range rm.attrs {
		// The last attribute of a key wins, as in Event.Attrs.
		r := attrs
		seen, equal := false, false
		for range r.uvarint() {
			k, key, str, num := r.attr()
			if string(key) == want.key {
				seen, equal = true, attrEquals(k, str, num, want.value)
			}
		}
		if !seen || !equal {
			return false
		}
	}
	return true
}

// attrEquals reports whether an attribute's value, formatted as Event.Get
// formats it (fmt.Sprint), equals want.
func attrEquals(k attrKind, str []byte, num int64, want string) bool {
	switch k {
	case attrInt:
		return strconv.FormatInt(num, 10) == want
	case attrBool:
		return strconv.FormatBool(num != 0) == want
	}
	return string(str) == want
}
