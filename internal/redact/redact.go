// Package redact replaces secret values in text and in JSON documents with
// markers that name them, so that a recording (harness record's trace) can
// be shared without the secrets the session saw: tokens expanded into a
// server's arguments, API keys in a URL's query, a tool's output that
// echoes them.
package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// MinLen is the length, in bytes, below which a value is not searched for:
// a one- to three-character value ("1", "on", "dev") would match all over
// unrelated text. A caller redacts such values where it knows they are
// (the field it expanded them into), not by search.
const MinLen = 4

// fallback is the marker of a secret whose own marker would contain a
// secret; every marker is searched again, and a text that still holds a
// secret after that is dropped whole (see String).
const fallback = "[redacted]"

// Set holds secret values and the marker each is replaced with. The zero
// value is an empty set, ready to use.
type Set struct {
	secrets []secret // longest value first
}

type secret struct {
	value, marker string
}

// Add registers value, replaced by marker wherever it occurs. Values
// shorter than MinLen are ignored; a value added twice keeps its first
// marker.
func (s *Set) Add(value, marker string) {
	if len(value) < MinLen {
		return
	}
	for _, sec := range s.secrets {
		if sec.value == value {
			return
		}
	}
	s.secrets = append(s.secrets, secret{value: value, marker: marker})
	sort.SliceStable(s.secrets, func(i, j int) bool { return len(s.secrets[i].value) > len(s.secrets[j].value) })
	// A marker that holds a secret would put it back: use the fallback.
	for i := range s.secrets {
		if s.contains(s.secrets[i].marker) {
			s.secrets[i].marker = fallback
		}
	}
}

// Len is the number of secrets in the set.
func (s *Set) Len() int { return len(s.secrets) }

// contains reports whether text holds one of the secrets.
func (s *Set) contains(text string) bool {
	for _, sec := range s.secrets {
		if strings.Contains(text, sec.value) {
			return true
		}
	}
	return false
}

// String returns text with every secret replaced by its marker, longest
// secret first. Replacing can make a secret appear where it was not (the
// end of one marker and the text after it), so it repeats a few times; a
// text that still holds a secret then is replaced by "" whole: losing text
// is better than leaking a secret.
func (s *Set) String(text string) string {
	for range 4 {
		if !s.contains(text) {
			return text
		}
		for _, sec := range s.secrets {
			text = strings.ReplaceAll(text, sec.value, sec.marker)
		}
	}
	if s.contains(text) {
		return ""
	}
	return text
}

// Value returns v, a value decoded from JSON (maps, slices, strings,
// numbers, booleans, nil), with every string and every object key redacted
// by String. Numbers are kept: a secret made of digits alone is searched
// for in strings only.
func (s *Set) Value(v any) any {
	switch x := v.(type) {
	case string:
		return s.String(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.Value(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[s.String(k)] = s.Value(e)
		}
		return out
	}
	return v
}

// JSON returns the JSON document raw with every string and object key
// redacted (see Value); numbers keep their text. A document that does not
// decode is redacted as text.
func (s *Set) JSON(raw []byte) []byte {
	if len(s.secrets) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return []byte(s.String(string(raw)))
	}
	out, err := marshal(s.Value(v))
	if err != nil {
		return []byte(s.String(string(raw)))
	}
	return out
}

// Find returns the marker of a secret that data holds, as written or as
// JSON escapes it, and whether there is one: the last check before data is
// written anywhere.
func (s *Set) Find(data []byte) (string, bool) {
	for _, sec := range s.secrets {
		if bytes.Contains(data, []byte(sec.value)) {
			return sec.marker, true
		}
		// As a JSON string holds it: with and without HTML escaping.
		plain, err := marshal(sec.value)
		if err != nil {
			continue
		}
		html, err := json.Marshal(sec.value)
		if err != nil {
			continue
		}
		for _, quoted := range [][]byte{plain, html} {
			if bytes.Contains(data, quoted[1:len(quoted)-1]) {
				return sec.marker, true
			}
		}
	}
	return "", false
}

// marshal encodes v as JSON without HTML escaping and without a trailing
// newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
