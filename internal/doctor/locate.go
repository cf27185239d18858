package doctor

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"

	"github.com/mcplife/mcplife/runtime/config"
)

// locator finds where a server's name is defined in a config file. Each
// file is read once, in one pass that indexes the line of every object key,
// so finding n names in a file costs the file's size plus n lookups.
type locator struct {
	open  func(string) (io.ReadCloser, error)
	files map[string]map[string]int // file -> key -> line
}

// newLocator returns a locator that opens files with open; openConfig is
// the one the report uses.
func newLocator(open func(string) (io.ReadCloser, error)) *locator {
	return &locator{open: open, files: map[string]map[string]int{}}
}

// openConfig opens a config file as discovery reads it: a regular file,
// never more than config.MaxFileBytes of it.
func openConfig(path string) (io.ReadCloser, error) {
	f, err := config.OpenFile(path)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, config.MaxFileBytes), f}, nil
}

// find returns the 1-based line of the first `"name":` in file outside
// comments and string values, or 0.
func (l *locator) find(file, name string) int {
	if file == "" || name == "" {
		return 0
	}
	idx, ok := l.files[file]
	if !ok {
		idx = map[string]int{}
		if rc, err := l.open(file); err == nil {
			idx, _ = keyLines(rc)
			rc.Close()
		}
		l.files[file] = idx
	}
	return idx[name]
}

// keyLines reads JSON text (comments allowed) once and maps every object
// key, decoded, to the 1-based line of its first occurrence: a string
// followed, after spaces and comments, by ':'. The text need not be valid;
// what was indexed before a read error is returned with it.
func keyLines(r io.Reader) (map[string]int, error) {
	br := bufio.NewReader(r)
	idx := map[string]int{}
	line := 1
	var str []byte   // the string being read, quotes included
	var cand []byte  // the last string read, waiting for a ':'
	candLine := 0    // its line; 0: no candidate
	escaped := false // the previous byte in a string was a backslash
	state := 0       // 0 text, 1 string, 2 // comment, 3 /* comment
	var prev byte    // the previous byte in a /* comment
	slash := false   // a '/' in text, which may start a comment
	for {
		c, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return idx, err
		}
		if c == '\n' {
			line++
		}
		switch state {
		case 1:
			str = append(str, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				state = 0
				// A string holds no raw newline: it ends on the line it began.
				cand, str = append(cand[:0], str...), str[:0]
				candLine = line
			case c == '\n':
				// JSON strings hold no raw newline: the text is broken here;
				// what follows is read as text again.
				state, str = 0, str[:0]
			}
			continue
		case 2:
			if c == '\n' || c == '\r' {
				state = 0
			}
			continue
		case 3:
			if prev == '*' && c == '/' {
				state, prev = 0, 0
				continue
			}
			prev = c
			continue
		}
		if slash {
			slash = false
			switch c {
			case '/':
				state = 2
				continue
			case '*':
				state, prev = 3, 0
				continue
			}
			candLine = 0 // a lone '/' is no space between a key and ':'
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '/':
			slash = true
		case '"':
			state, escaped = 1, false
			str = append(str[:0], c)
			candLine = 0
		case ':':
			if candLine > 0 {
				if key, ok := decodeKey(cand); ok {
					if _, seen := idx[key]; !seen {
						idx[key] = candLine
					}
				}
			}
			candLine = 0
		default:
			candLine = 0
		}
	}
}

// decodeKey decodes a quoted JSON string as encoding/json does.
func decodeKey(quoted []byte) (string, bool) {
	raw := quoted[1 : len(quoted)-1]
	if isPlain(raw) {
		return string(raw), true
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return "", false
	}
	return s, true
}

// isPlain reports whether a JSON string's body decodes to itself: ASCII
// without escapes or control characters.
func isPlain(raw []byte) bool {
	for _, b := range raw {
		if b == '\\' || b >= 0x80 || b < 0x20 {
			return false
		}
	}
	return true
}
