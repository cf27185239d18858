package doctor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countingOpen opens files with openConfig and counts the opens and the
// bytes read through them.
type countingOpen struct {
	opens int
	read  int64
}

func (c *countingOpen) open(path string) (io.ReadCloser, error) {
	rc, err := openConfig(path)
	if err != nil {
		return nil, err
	}
	c.opens++
	return struct {
		io.Reader
		io.Closer
	}{readCounter{rc, &c.read}, rc}, nil
}

type readCounter struct {
	r io.Reader
	n *int64
}

func (r readCounter) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	*r.n += int64(n)
	return n, err
}

// manyServers writes a config of n servers, each with a comment, nested
// keys and a value that looks like a key, and returns its path and the
// line of each server's name.
func manyServers(t testing.TB, n int) (string, map[string]int) {
	var b strings.Builder
	lines := map[string]int{}
	b.WriteString("{\n  // generated\n  \"mcpServers\": {\n")
	line := 4
	for i := range n {
		name := fmt.Sprintf("s%05d", i)
		if i > 0 {
			b.WriteString(",\n")
			line++
		}
		fmt.Fprintf(&b, "    /* \"%s-x\": no */ \"%s\": {\n", name, name)
		lines[name] = line
		fmt.Fprintf(&b, "      \"command\": \"c\", \"args\": [\"\\\"s%05d-y\\\": 1\"],\n", i)
		b.WriteString("      \"env\": {\"K\": \"v\"}\n    }")
		line += 3
	}
	b.WriteString("\n  }\n}\n")
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, lines
}

// TestLocatorReadsEachFileOnce finds 20,000 servers in one file: every line
// is right, and the file is opened once and read exactly once through (the
// quadratic locator rescanned the whole file per server: 20,000 times).
func TestLocatorReadsEachFileOnce(t *testing.T) {
	const n = 20000
	path, want := manyServers(t, n)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var c countingOpen
	l := newLocator(c.open)
	for name, line := range want {
		if got := l.find(path, name); got != line {
			t.Fatalf("find(%s) = %d, want %d", name, got, line)
		}
		// The decoys in comments and string values are not keys.
		if got := l.find(path, name+"-x"); got != 0 {
			t.Fatalf("find(%s-x) = %d: a key in a comment", name, got)
		}
		if got := l.find(path, name+"-y"); got != 0 {
			t.Fatalf("find(%s-y) = %d: a key in a string", name, got)
		}
	}
	if l.find(path, "env") != 6 || l.find(path, "mcpServers") != 3 {
		t.Errorf("env at %d, mcpServers at %d", l.find(path, "env"), l.find(path, "mcpServers"))
	}
	if c.opens != 1 || c.read != st.Size() {
		t.Errorf("%d opens, %d bytes read, want 1 open of the file's %d bytes", c.opens, c.read, st.Size())
	}
	// A file that cannot be opened is tried once and has no lines.
	absent := filepath.Join(t.TempDir(), "absent.json")
	if l.find(absent, "a") != 0 || l.find(absent, "b") != 0 || c.opens != 1 {
		t.Errorf("absent file: %d opens", c.opens)
	}
}

// TestLocatorRefusesSpecialFiles: the locator reads config files as
// discovery does, so a symlink to /dev/zero has no lines and is not read.
func TestLocatorRefusesSpecialFiles(t *testing.T) {
	zero := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if _, err := openConfig(zero); err == nil {
		t.Fatal("openConfig opened /dev/zero")
	}
	var c countingOpen
	if got := newLocator(c.open).find(zero, "a"); got != 0 || c.read != 0 {
		t.Errorf("find = %d after reading %d bytes", got, c.read)
	}
}

func TestKeyLines(t *testing.T) {
	text := "{\n" +
		"  // \"hidden\": 1\n" +
		"  \"a\": {\"b\": \"\\\"c\\\": 2\",\n" +
		"    \"\\u0064\" /* between */ : 1},\n" +
		"  /* \"e\":\n  \"f\": */ \"g\"\n  : [\"h\", \"i\"],\n" +
		"  \"a\": 3, \"\u00e9\": 4, \"j/k\": 5\n" +
		"}\n"
	idx, err := keyLines(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 3, "b": 3, "d": 4, "g": 6, "\u00e9": 8, "j/k": 8}
	if fmt.Sprint(idx) != fmt.Sprint(want) {
		t.Errorf("keyLines = %v, want %v", idx, want)
	}
	// A read error comes back with what was indexed before it.
	boom := errors.New("boom")
	idx, err = keyLines(io.MultiReader(strings.NewReader(`{"x": 1, "y`), errReader{boom}))
	if !errors.Is(err, boom) || fmt.Sprint(idx) != "map[x:1]" {
		t.Errorf("after a read error: %v, %v", idx, err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// FuzzKeyLines: on any text keyLines does not panic; on valid JSON every
// key encoding/json's tokenizer reads is indexed at the line of its first
// occurrence, and nothing else is indexed.
func FuzzKeyLines(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"a":{"command":"c","env":{"K":"v"}}}}`))
	f.Add([]byte("{\n\"a\":[{\"b\":1},{\"a\":2}],\n\"c\\n\":\"\\\"d\\\":\"}"))
	f.Add([]byte("{\"\\u00e9\":1,\"\u00e9\":2,\"\xff\":3}"))
	f.Add([]byte("// c\n{\"a\" /* x */ : 1}"))
	f.Add([]byte(`["a", {"b": "c"}, "d": 1]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := keyLines(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(data) {
			return
		}
		want := map[string]int{}
		dec := json.NewDecoder(bytes.NewReader(data))
		var stack []bool // true: object; the next token is a key
		key := false
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch v := tok.(type) {
			case json.Delim:
				switch v {
				case '{', '[':
					stack = append(stack, v == '{')
					key = v == '{'
					continue
				default:
					stack = stack[:len(stack)-1]
				}
			case string:
				if key {
					if _, ok := want[v]; !ok {
						want[v] = 1 + bytes.Count(data[:dec.InputOffset()], []byte("\n"))
					}
					key = false
					continue
				}
			}
			key = len(stack) > 0 && stack[len(stack)-1]
		}
		if fmt.Sprint(idx) != fmt.Sprint(want) {
			t.Fatalf("keyLines = %v, encoding/json reads %v", idx, want)
		}
	})
}

// BenchmarkLocator finds every server of a 20,000-server config: one read
// of the file (8.2 s with the locator that rescanned the file per server).
func BenchmarkLocator(b *testing.B) {
	path, want := manyServers(b, 20000)
	for b.Loop() {
		l := newLocator(openConfig)
		for name := range want {
			l.find(path, name)
		}
	}
}
