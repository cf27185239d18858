package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// A duplicate key is refused, not resolved. JSON leaves the meaning of a
// repeated key open: encoding/json and JavaScript keep the last, other
// readers the first, and an editor or a reviewer sees the first one on the
// screen. A server entry with two "command" keys could show a reader one
// command and run another, so the entry is an error instead.

// maxDuplicateReports is how many duplicate keys of one entry are reported
// one by one; the last report counts the rest.
const maxDuplicateReports = 10

// dupKey is a key that an object holds more than once.
type dupKey struct {
	field    string // the key's path from the scanned value: "command", "env.K", "roots[0].uri"
	off      int    // the offset of the repeated key's opening quote
	firstOff int    // the offset of the first occurrence's opening quote
}

// dupFrame is an object or array open during duplicateKeys's scan.
type dupFrame struct {
	object  bool
	keys    map[string]int // key -> offset of its first occurrence; nil until the first key
	key     string         // the member being read
	wantKey bool           // the next string is a key
	index   int            // the element being read, in an array
}

// duplicateKeys returns, in file order, the first limit keys that repeat an
// earlier key of the same object anywhere within v (v itself and every
// object nested in it), and how many there are in all. It reads v's text
// once; the text must be valid JSON with comments blanked (checkJSON).
func duplicateKeys(v jval, limit int) (dups []dupKey, total int) {
	d := v.data
	var stack []dupFrame
	for i := v.off; i < v.end; i++ {
		switch d[i] {
		case '"':
			e := stringEnd(d, i)
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				top := &stack[n-1]
				key := keyText(d[i:e])
				top.key, top.wantKey = key, false
				if first, seen := top.keys[key]; seen {
					total++
					if len(dups) < limit {
						dups = append(dups, dupKey{field: framePath(stack), off: i, firstOff: first})
					}
				} else {
					if top.keys == nil {
						top.keys = map[string]int{}
					}
					top.keys[key] = i
				}
			}
			i = e - 1
		case '{':
			stack = append(stack, dupFrame{object: true, wantKey: true})
		case '[':
			stack = append(stack, dupFrame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].object {
					stack[n-1].wantKey = true
				} else {
					stack[n-1].index++
				}
			}
		}
	}
	return dups, total
}

// framePath is the field path of the member being read in the innermost
// frame: keys joined by ".", array elements as "[i]", an empty key as "".
func framePath(stack []dupFrame) string {
	var b strings.Builder
	for _, f := range stack {
		key := f.key
		if key == "" {
			key = `""`
		}
		switch {
		case !f.object:
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		case b.Len() > 0:
			b.WriteString("." + key)
		default:
			b.WriteString(key)
		}
	}
	return b.String()
}

// keyText decodes a quoted key as encoding/json (and so members) does.
func keyText(quoted []byte) string {
	body := quoted[1 : len(quoted)-1]
	plain := true
	for _, c := range body {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return string(body)
	}
	var s string
	_ = json.Unmarshal(quoted, &s)
	return s
}

// duplicateMessage describes a duplicate key for a diagnostic; what says
// what is refused.
func (p *parser) duplicateMessage(dk dupKey, what string) string {
	line, col := position(p.data, dk.firstOff)
	return fmt.Sprintf("first at line %d, column %d; readers disagree on which one counts, so %s", line, col, what)
}
