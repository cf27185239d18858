package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// This file holds a small reader for JSON text that keeps what
// encoding/json throws away: the order of object keys and the byte offset of
// every value. Discovery uses the offsets for file:line:column diagnostics;
// the writer uses them to splice edits into a file without reordering or
// reformatting the rest of it.
//
// The reader works on text that encoding/json has already accepted (see
// checkJSON), so it does not need to report syntax errors itself.

// blankJSONC returns a copy of data in which a leading UTF-8 byte order mark,
// // and /* */ comments, and trailing commas before } or ] are replaced by
// spaces (newlines are kept). Offsets, and so line and column numbers, are
// unchanged. Editors write such "JSON with comments" into .vscode/mcp.json.
func blankJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	if bytes.HasPrefix(out, []byte("\xEF\xBB\xBF")) {
		copy(out, "   ")
	}
	// Pass 1: comments.
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for i < len(out) && out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
				i++
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out // unterminated: leave it for the syntax error
			}
			stop := i + 2 + end + 2
			for ; i < stop; i++ {
				if out[i] != '\n' && out[i] != '\r' {
					out[i] = ' '
				}
			}
			i--
		}
	}
	// Pass 2: trailing commas.
	inString = false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ',':
			j := skipSpace(out, i+1)
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}

// checkJSON reports whether data is one valid JSON value. A syntax error comes
// back as a *json.SyntaxError, whose Offset locates it.
func checkJSON(data []byte) error {
	var raw json.RawMessage
	return json.Unmarshal(data, &raw)
}

// position converts a byte offset into a 1-based line and column; the column
// counts characters, as editors do.
func position(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	prefix := data[:off]
	line = 1 + bytes.Count(prefix, []byte("\n"))
	start := bytes.LastIndexByte(prefix, '\n') + 1
	return line, 1 + utf8.RuneCount(prefix[start:])
}

// syntaxPosition returns the offset of the character a *json.SyntaxError
// complains about. Its Offset counts the bytes read, including that character.
func syntaxPosition(err error) (int, bool) {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return 0, false
	}
	return int(max(se.Offset-1, 0)), true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// jval is one JSON value: data[off:end].
type jval struct {
	data     []byte
	off, end int
}

// jmember is one member of an object, in file order.
type jmember struct {
	key    string
	keyOff int // offset of the key's opening quote
	val    jval
}

// topValue returns the single value in data, which must be valid JSON.
func topValue(data []byte) jval {
	i := skipSpace(data, 0)
	return jval{data: data, off: i, end: valueEnd(data, i)}
}

// valueEnd returns the offset just past the value starting at i.
func valueEnd(d []byte, i int) int {
	if i >= len(d) {
		return i
	}
	switch d[i] {
	case '"':
		return stringEnd(d, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(d); j++ {
			switch d[j] {
			case '"':
				j = stringEnd(d, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(d)
	default:
		j := i
		for j < len(d) && !isSpace(d[j]) && d[j] != ',' && d[j] != '}' && d[j] != ']' && d[j] != ':' {
			j++
		}
		return j
	}
}

// stringEnd returns the offset just past the string starting at i.
func stringEnd(d []byte, i int) int {
	for j := i + 1; j < len(d); j++ {
		switch d[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(d)
}

func (v jval) raw() []byte { return v.data[v.off:v.end] }

func (v jval) isObject() bool { return v.off < v.end && v.data[v.off] == '{' }
func (v jval) isArray() bool  { return v.off < v.end && v.data[v.off] == '[' }
func (v jval) isString() bool { return v.off < v.end && v.data[v.off] == '"' }

// kind names the value's JSON type for messages.
func (v jval) kind() string {
	if v.off >= v.end {
		return "nothing"
	}
	switch c := v.data[v.off]; {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	default:
		return "number"
	}
}

// members returns an object's members in file order (duplicates included).
func (v jval) members() []jmember {
	if !v.isObject() {
		return nil
	}
	var ms []jmember
	d := v.data
	i := skipSpace(d, v.off+1)
	for i < v.end && d[i] == '"' {
		kEnd := stringEnd(d, i)
		var key string
		_ = json.Unmarshal(d[i:kEnd], &key)
		j := skipSpace(d, kEnd)
		j = skipSpace(d, j+1) // past ':'
		e := valueEnd(d, j)
		ms = append(ms, jmember{key: key, keyOff: i, val: jval{data: d, off: j, end: e}})
		i = skipSpace(d, e)
		if i < v.end && d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	return ms
}

// elems returns an array's elements.
func (v jval) elems() []jval {
	if !v.isArray() {
		return nil
	}
	var es []jval
	d := v.data
	i := skipSpace(d, v.off+1)
	for i < v.end && d[i] != ']' {
		e := valueEnd(d, i)
		es = append(es, jval{data: d, off: i, end: e})
		i = skipSpace(d, e)
		if i < v.end && d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	return es
}

// get returns the last member named key, as encoding/json and JavaScript do.
func (v jval) get(key string) (jval, bool) {
	ms := v.members()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			return ms[i].val, true
		}
	}
	return jval{}, false
}

// getOnce returns the member named key; when the object holds key more
// than once, it returns the second occurrence as dup, and ok is false.
func (v jval) getOnce(key string) (val jval, ok bool, dup *dupKey) {
	var first *jmember
	for _, m := range v.members() {
		if m.key != key {
			continue
		}
		if first != nil {
			return jval{}, false, &dupKey{field: key, off: m.keyOff, firstOff: first.keyOff}
		}
		first = &m
	}
	if first == nil {
		return jval{}, false, nil
	}
	return first.val, true, nil
}

func (v jval) str() (string, bool) {
	if !v.isString() {
		return "", false
	}
	var s string
	if json.Unmarshal(v.raw(), &s) != nil {
		return "", false
	}
	return s, true
}

func (v jval) boolean() (bool, bool) {
	switch string(v.raw()) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func (v jval) number() (float64, bool) {
	if v.kind() != "number" {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v.raw()), 64)
	return f, err == nil
}
