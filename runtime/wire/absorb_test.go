package wire

import (
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

// nextAll reads in through a Reader with absorb, message by message (one
// byte at a time from the source when oneByte), and returns the messages,
// the methods offered to absorb and the error that ended the input.
func nextAll(t testing.TB, in string, absorb func(string) bool, oneByte bool) (msgs, offered []string, g *Reader, err error) {
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
	for {
		m, nerr := g.Next()
		if nerr != nil {
			return msgs, offered, g, nerr
		}
		msgs = append(msgs, string(m))
	}
}

// TestAbsorb: list_changed notifications the callback takes are dropped,
// the rest comes unchanged and in order, noise is still dropped, and a
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
		msgs, offered, g, err := nextAll(t, in, takeTools, oneByte)
		if err != io.EOF {
			t.Fatal(err)
		}
		want := []string{call, promptsChanged, withID, batch, long}
		if !slices.Equal(msgs, want) {
			t.Errorf("oneByte=%v: messages\n%q\nwant\n%q", oneByte, msgs, want)
		}
		wantOffered := []string{
			"notifications/tools/list_changed", "notifications/tools/list_changed", "notifications/prompts/list_changed",
			"notifications/resources/list_changed", "notifications/tools/list_changed", "notifications/tools/list_changed",
		}
		if !slices.Equal(offered, wantOffered) {
			t.Errorf("oneByte=%v: offered %q\nwant %q", oneByte, offered, wantOffered)
		}
		if g.Absorbed() != 5 || g.NoiseLines() != 1 {
			t.Errorf("oneByte=%v: Absorbed %d, NoiseLines %d; want 5 and 1", oneByte, g.Absorbed(), g.NoiseLines())
		}
	}
}

// TestAbsorbDeclined: a callback that takes nothing changes nothing, and an
// object cut off by the end of the input ends Next with
// io.ErrUnexpectedEOF.
func TestAbsorbDeclined(t *testing.T) {
	in := toolsChanged + "\nnoise\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/tools/li`
	for _, oneByte := range []bool{false, true} {
		plain, _, _, err := nextAll(t, in, nil, oneByte)
		if err != io.ErrUnexpectedEOF {
			t.Fatalf("cut-off object: %v", err)
		}
		msgs, offered, _, err := nextAll(t, in, func(string) bool { return false }, oneByte)
		if err != io.ErrUnexpectedEOF || !slices.Equal(msgs, plain) || len(msgs) != 2 {
			t.Errorf("oneByte=%v: declined %q (%v)\nwithout Absorb %q", oneByte, msgs, err, plain)
		}
		if len(offered) != 1 {
			t.Errorf("oneByte=%v: offered %q, want the one complete notification", oneByte, offered)
		}
	}
}

// TestAbsorbLimit: the message limit applies before a notification is offered.
func TestAbsorbLimit(t *testing.T) {
	g := NewReader(strings.NewReader(`{"jsonrpc":"2.0","method":"x","params":{"a":"`+strings.Repeat("b", 100)+`"}}`),
		Options{MaxMessageBytes: 40, Absorb: func(string) bool { return true }})
	if _, err := g.Next(); err == nil || !strings.Contains(err.Error(), "exceeds the limit of 40 bytes") {
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

// FuzzReader checks the stdout filter on any input: Next yields, whole and
// in order, exactly the JSON values Read passes (whatever the read sizes);
// a callback that declines changes nothing; a callback that takes
// everything removes exactly the list_changed notifications of at most
// HoldBytes bytes; only methods ListChangedMethod names are ever offered.
func FuzzReader(f *testing.F) {
	f.Add(toolsChanged+"\n"+`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n", false)
	f.Add("banner\n"+promptsChanged+"\r\n"+resourcesChanged+"\n[1,2]\n", true)
	f.Add(`{"method":"notifications/tools/list_changed","jsonrpc":"2.0","params":{"a":"}"}}`+"\n\xff\n{", false)
	f.Fuzz(func(t *testing.T, in string, oneByte bool) {
		var src io.Reader = strings.NewReader(in)
		if oneByte {
			src = iotest.OneByteReader(src)
		}
		streamed, err := io.ReadAll(NewReader(src, Options{}))
		if err != nil {
			t.Fatalf("unlimited read failed: %v", err)
		}
		all, ok := values(string(streamed), func([]byte) bool { return false })
		plain, _, _, perr := nextAll(t, in, nil, oneByte)
		declined, _, _, derr := nextAll(t, in, func(string) bool { return false }, oneByte)
		if !slices.Equal(declined, plain) || derr != perr {
			t.Fatalf("declining changed the messages:\n%q (%v)\nwithout Absorb:\n%q (%v)", declined, derr, plain, perr)
		}
		taken, offered, g, terr := nextAll(t, in, func(string) bool { return true }, oneByte)
		for _, m := range offered {
			if !slices.Contains(listChangedMethods[:], m) {
				t.Fatalf("offered %q", m)
			}
		}
		if g.Absorbed() != len(offered) {
			t.Fatalf("Absorbed %d, offered %d", g.Absorbed(), len(offered))
		}
		if !ok {
			return // Read passed something that is not JSON: no reference
		}
		if perr != io.EOF || !slices.Equal(plain, all) {
			t.Fatalf("Next gave %q (%v)\nRead passed the values %q", plain, perr, all)
		}
		kept, _ := values(string(streamed), func(raw []byte) bool {
			_, lc := ListChangedMethod(raw)
			return lc && len(raw) <= HoldBytes && raw[0] == '{'
		})
		if terr != io.EOF || !slices.Equal(taken, kept) {
			t.Fatalf("taking everything gave %q (%v)\nwant %q", taken, terr, kept)
		}
	})
}

// values splits s into JSON values and returns those drop does not
// reject; ok is false when s is not a sequence of JSON values.
func values(s string, drop func([]byte) bool) (vals []string, ok bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return vals, true
		}
		if err != nil {
			return nil, false
		}
		if !drop(raw) {
			vals = append(vals, string(raw))
		}
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
