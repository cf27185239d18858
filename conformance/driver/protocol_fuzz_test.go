package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/runtime/host"
)

// requestSeeds are request lines, good and bad.
var requestSeeds = []string{
	`{"id":1,"method":"hello","params":{"protocol":"mcplife-driver/1"}}`,
	`{"id":2,"method":"shutdown"}`,
	`{"id":3,"method":"status","params":{}}`,
	`{"id":4,"method":"start","params":{"clock":"virtual","inline":{"a":{"command":"true"}}}}`,
	`{"id":5,"method":"start","params":{"clock":"sundial"}}`,
	`{"id":6,"method":"tool.call","params":{"session":"s","callId":"c","tool":"t","arguments":{}}}`,
	`{"id":7,"method":"clock.advance","params":{"ms":-1}}`,
	`{"id":8,"method":"nope"}`,
	`{"id":9,"method":"hello","params":[]}`,
	`{"id":10,"method":"hello","params":{"protocol":"x","extra":1}}`,
	`{"id":-1,"method":"hello"}`,
	`{"id":1.5,"method":"hello"}`,
	`{"id":1.0,"method":"hello"}`,
	`{"id":1e2,"method":"status"}`,
	`{"id":"1","method":"hello"}`,
	`{"id":99999999999999999999,"method":"hello"}`,
	`{"method":"hello"}`,
	`{"id":11,"method":"","params":{}}`,
	`{"id":12,"method":"hello","params":null}`,
	`{"id":13,"method":"hello","junk":true}`,
	`{"id":14,"method":"hello","params":{}} trailing`,
	`null`,
	`[1,2]`,
	`not json at all`,
	"\xff\xfe{",
	`{"id":15,"method":"session.open","params":{"session":"` + strings.Repeat("x", 300) + `"}}`,
}

// FuzzParseRequest reads arbitrary request lines: a line either parses to a
// request with an id >= 0, a non-empty method and object params that
// re-encodes and parses back to the same request, or gives a bad_request
// error that carries the id whenever the id could be read.
func FuzzParseRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		id, method, params, err := parseRequest(line)
		if err != nil {
			if err.Code != string(CodeBadRequest) || err.Message == "" {
				t.Fatalf("error %+v is not a bad_request", err)
			}
			if id != nil && *id < 0 {
				t.Fatalf("negative id %d", *id)
			}
			return
		}
		if id == nil || *id < 0 || method == "" || !json.Valid(params) || bytes.TrimSpace(params)[0] != '{' {
			t.Fatalf("parsed request id=%v method=%q params=%q", id, method, params)
		}
		again, merr := json.Marshal(Request{ID: *id, Method: method, Params: params})
		if merr != nil {
			t.Fatalf("re-encode: %v", merr)
		}
		id2, method2, params2, err2 := parseRequest(again)
		if err2 != nil || *id2 != *id || method2 != method {
			t.Fatalf("round trip of %q: %v %v %q", again, err2, id2, method2)
		}
		var p1, p2 any
		if json.Unmarshal(params, &p1) != nil || json.Unmarshal(params2, &p2) != nil {
			t.Fatalf("params do not decode")
		}
	})
}

// FuzzServeLine feeds one arbitrary line to the reference driver, whose
// start is refused before anything could be launched: the driver answers
// with exactly one response line and nothing else, within a bound and
// without panicking; the response validates against the protocol schemas,
// carries the request's id when it could be read, is an error exactly when
// parseRequest fails or the method cannot run before start, and is never
// bad_request for a line that is a schema-valid request.
func FuzzServeLine(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	v, err := NewValidator()
	if err != nil {
		f.Fatal(err)
	}
	refuse := func(*StartParams, *host.Options) error { return errors.New("fuzzing: nothing is started") }
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.ReplaceAll(line, []byte("\n"), []byte(" "))
		if len(bytes.TrimSpace(line)) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out bytes.Buffer
		in := bytes.NewReader(append(append([]byte{}, line...), '\n'))
		if err := Serve(ctx, in, &out, ServeOptions{Configure: refuse, ShutdownTimeout: 10 * time.Second}); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
		if len(lines) != 1 {
			t.Fatalf("%d output lines for one request:\n%s", len(lines), out.Bytes())
		}
		if errs := v.ValidateTranscript([]TranscriptLine{{Dir: Sent, Line: line, Raw: true}, {Dir: Received, Line: lines[0]}}); len(errs) > 0 {
			t.Fatalf("response does not validate: %v", errs)
		}
		var resp Response
		if err := json.Unmarshal(lines[0], &resp); err != nil || resp.Type != TypeResponse {
			t.Fatalf("not a response line: %s", lines[0])
		}
		id, method, _, perr := parseRequest(line)
		if (id == nil) != (resp.ID == nil) || (id != nil && *id != *resp.ID) {
			t.Fatalf("response id %v, request id %v", resp.ID, id)
		}
		if perr != nil {
			if resp.Error == nil || resp.Error.Code != string(CodeBadRequest) {
				t.Fatalf("malformed request %q answered %s", line, lines[0])
			}
			return
		}
		if resp.Error == nil && method != MethodHello && method != MethodShutdown {
			t.Fatalf("%s succeeded before start: %s", method, lines[0])
		}
		if resp.Error != nil && resp.Error.Code == string(CodeBadRequest) && validRequest(v, line) {
			t.Fatalf("schema-valid request %q answered %s", line, lines[0])
		}
	})
}

// validRequest reports whether line is a request the schemas accept, params
// included.
func validRequest(v *Validator, line []byte) bool {
	if v.Validate(SchemaRequest, line) != nil {
		return false
	}
	var req Request
	if json.Unmarshal(line, &req) != nil {
		return false
	}
	params := req.Params
	if len(params) == 0 {
		params = []byte("{}")
	}
	return v.Validate(req.Method+".params", params) == nil
}
