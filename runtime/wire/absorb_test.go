package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

const (
	toolsChanged     = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	resourcesChanged = `{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`
	promptsChanged   = `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`
)

// readWith reads in through a Reader with absorb, in 7-byte reads (and
// one-byte reads of the source when oneByte), and returns what passed and
// the methods offered to absorb.
func readWith(t testing.TB, in string, absorb func(string) bool, oneByte bool) (out string, offered []string, g *Reader, err error) {
	t.Helper()
	var src io.Reader = strings.NewReader(in)
	if oneByte {
		src = iotest.OneByteReader(src)
	}
	opts := Options{MaxMessageBytes: 1 << 20}
	if absorb != nil {
		opts.Absorb = func(m string) bool {
			offered = append(offered, m)
			return absorb(m)
		}
	}
	g = NewReader(src, opts)
	var b bytes.Buffer
	buf := make([]byte, 7)
	for {
		n, rerr := g.Read(buf)
		b.Write(buf[:n])
		if rerr == io.EOF {
			return b.String(), offered, g, nil
		}
		if rerr != nil {
			return b.String(), offered, g, rerr
		}
	}
}

// TestAbsorb: list_changed notifications the callback takes are dropped,
// the rest passes unchanged and in order, noise is still dropped, and a
// request, a response, a batch or an object past HoldBytes is never
// offered.
func TestAbsorb(t *testing.T) {
	spaced := `{ "method" : "notifications/tools/list_changed", "jsonrpc" : "2.0", "params" : {"_meta":{}} }`
	withID := `{"jsonrpc":"2.0","id":7,"method":"notifications/tools/list_changed"}`
	call := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"notifications/tools/list_changed"}]}}`
	batch := `[` + toolsChanged + `]`
	long := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"pad":"` + strings.Repeat("p", HoldBytes) + `"}}`
	multi := "{\n\"jsonrpc\":\"2.0\",\n\"method\":\"notifications/tools/list_changed\"\n}"
	in := "banner\n" + toolsChanged + "\n" + call + "\n" + spaced + "\n" + promptsChanged + "\r\n" + withID + "\n" +
		batch + "\n" + long + "\n" + resourcesChanged + "\n" + multi + "\n" + toolsChanged
	takeTools := func(m string) bool { return m != "notifications/prompts/list_changed" }
	for _, oneByte := range []bool{false, true} {
		out, offered, g, err := readWith(t, in, takeTools, oneByte)
		if err != nil {
			t.Fatal(err)
		}
		want := "\n" + call + "\n" + "\n" + promptsChanged + "\r\n" + withID + "\n" + batch + "\n" + long + "\n" + "\n" + "\n"
		if out != want {
			t.Errorf("oneByte=%v: passed\n%q\nwant\n%q", oneByte, out, want)
		}
		wantOffered := []string{
			"notifications/tools/list_changed", "notifications/tools/list_changed", "notifications/prompts/list_changed",
			"notifications/resources/list_changed", "notifications/tools/list_changed", "notifications/tools/list_changed",
		}
		if strings.Join(offered, " ") != strings.Join(wantOffered, " ") {
			t.Errorf("oneByte=%v: offered %q\nwant %q", oneByte, offered, wantOffered)
		}
		if g.Absorbed() != 5 || g.NoiseLines() != 1 {
			t.Errorf("oneByte=%v: Absorbed %d, NoiseLines %d; want 5 and 1", oneByte, g.Absorbed(), g.NoiseLines())
		}
	}
}

// TestAbsorbDeclined: a callback that takes nothing changes nothing, and an
// object cut off by the end of the input is passed on as it is.
func TestAbsorbDeclined(t *testing.T) {
	in := toolsChanged + "\nnoise\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/tools/li`
	for _, oneByte := range []bool{false, true} {
		plain, _, _, err := readWith(t, in, nil, oneByte)
		if err != nil {
			t.Fatal(err)
		}
		out, offered, _, err := readWith(t, in, func(string) bool { return false }, oneByte)
		if err != nil {
			t.Fatal(err)
		}
		if out != plain || !strings.HasSuffix(out, `"notifications/tools/li`) {
			t.Errorf("oneByte=%v: declined %q\nwithout Absorb %q", oneByte, out, plain)
		}
		if len(offered) != 1 {
			t.Errorf("oneByte=%v: offered %q, want the one complete notification", oneByte, offered)
		}
	}
}

// TestAbsorbLimit: the message limit still applies to a held object.
func TestAbsorbLimit(t *testing.T) {
	g := NewReader(strings.NewReader(`{"jsonrpc":"2.0","method":"x","params":{"a":"`+strings.Repeat("b", 100)+`"}}`),
		Options{MaxMessageBytes: 40, Absorb: func(string) bool { return true }})
	if _, err := io.ReadAll(g); err == nil || !strings.Contains(err.Error(), "exceeds the limit of 40 bytes") {
		t.Fatalf("err %v, want the 40-byte limit", err)
	}
}

func TestListChangedMethod(t *testing.T) {
	for _, tc := range []struct {
		msg, want string
	}{
		{toolsChanged, "notifications/tools/list_changed"},
		{resourcesChanged, "notifications/resources/list_changed"},
		{promptsChanged, "notifications/prompts/list_changed"},
		{`{"method":"notifications/tools/list_changed","jsonrpc":"2.0","params":{}}`, "notifications/tools/list_changed"},
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":null}`, ""},
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":[]}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"notifications/tools/list_changed"}`, ""},
		{`{"jsonrpc":"2.0","id":null,"method":"notifications/tools/list_changed"}`, ""},
		{`{"jsonrpc":"1.0","method":"notifications/tools/list_changed"}`, ""},
		{`{"method":"notifications/tools/list_changed"}`, ""},
		{`{"JSONRPC":"2.0","method":"notifications/tools/list_changed"}`, ""},
		{`{"jsonrpc":"2.0","Method":"notifications/tools/list_changed"}`, ""},
		{`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, ""},
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","result":{}}`, ""},
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"`, ""},
		{`[{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}]`, ""},
		{`{"jsonrpc":2,"method":"notifications/tools/list_changed"}`, ""},
	} {
		got, ok := ListChangedMethod([]byte(tc.msg))
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ListChangedMethod(%s) = %q, %v; want %q", tc.msg, got, ok, tc.want)
		}
	}
}

// FuzzReader checks the stdout filter on any input: a callback that
// declines changes nothing (the output equals a Reader's without Absorb,
// whatever the read sizes); a callback that takes everything removes exactly
// the list_changed notifications of at most HoldBytes bytes when the output
// is a sequence of JSON values, and Next then yields exactly those values;
// only methods ListChangedMethod names are ever offered.
func FuzzReader(f *testing.F) {
	f.Add(toolsChanged+"\n"+`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n", false)
	f.Add("banner\n"+promptsChanged+"\r\n"+resourcesChanged+"\n[1,2]\n", true)
	f.Add(`{"method":"notifications/tools/list_changed","jsonrpc":"2.0","params":{"a":"}"}}`+"\n\xff\n{", false)
	f.Fuzz(func(t *testing.T, in string, oneByte bool) {
		plain, _, _, err := readWith(t, in, nil, oneByte)
		if err != nil {
			t.Fatalf("unlimited read failed: %v", err)
		}
		declined, _, _, _ := readWith(t, in, func(string) bool { return false }, oneByte)
		if declined != plain {
			t.Fatalf("declining changed the output:\n%q\nwithout Absorb:\n%q", declined, plain)
		}
		taken, offered, g, _ := readWith(t, in, func(string) bool { return true }, oneByte)
		for _, m := range offered {
			if !slices.Contains(listChangedMethods[:], m) {
				t.Fatalf("offered %q", m)
			}
		}
		if g.Absorbed() != len(offered) {
			t.Fatalf("Absorbed %d, offered %d", g.Absorbed(), len(offered))
		}
		want, ok := withoutListChanged(plain)
		if !ok {
			return
		}
		got, ok := withoutListChanged(taken)
		if !ok || got != want {
			t.Fatalf("taking everything passed\n%q\nwant the values of\n%q", taken, want)
		}
		// Next yields the same values, whole.
		var src io.Reader = strings.NewReader(in)
		if oneByte {
			src = iotest.OneByteReader(src)
		}
		g = NewReader(src, Options{Absorb: func(string) bool { return true }})
		var vals []string
		for {
			v, err := g.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Next failed on input Read passes as valid JSON: %v", err)
			}
			vals = append(vals, string(v))
		}
		if strings.Join(vals, "\x00") != want {
			t.Fatalf("Next gave %q\nwant the values %q", vals, want)
		}
	})
}

// withoutListChanged splits s into JSON values and joins, NUL-separated,
// those that are not list_changed notifications the Reader holds; ok is
// false when s is not a sequence of JSON values.
func withoutListChanged(s string) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	var kept []string
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return strings.Join(kept, "\x00"), true
		}
		if err != nil {
			return "", false
		}
		if _, ok := ListChangedMethod(raw); ok && len(raw) <= HoldBytes && raw[0] == '{' {
			continue
		}
		kept = append(kept, string(raw))
	}
}

// TestCanonicalListChanged: each canonical spelling is its method's.
func TestCanonicalListChanged(t *testing.T) {
	for i, c := range canonicalListChanged {
		if c != `{"jsonrpc":"2.0","method":"`+listChangedMethods[i]+`"}` {
			t.Errorf("canonicalListChanged[%d] = %s", i, c)
		}
	}
}
