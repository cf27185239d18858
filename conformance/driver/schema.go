package driver

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

//go:embed schema/*.json
var schemaFS embed.FS

// SchemaBaseURI is the base of every schema's $id; schemas refer to each
// other by relative file name.
const SchemaBaseURI = "https://github.com/mcplife/mcplife/conformance/driver/schema/"

// The names of the schemas of lines (without ".json"). Each method M also
// has "M.params" and "M.result".
const (
	SchemaRequest       = "request"
	SchemaResponse      = "response"
	SchemaError         = "error"
	SchemaEvent         = "event"
	SchemaCallResult    = "call_result"
	SchemaAcquireResult = "acquire_result"
)

// SchemaNames returns the name of every schema in documentation order: the
// line schemas, then the params and result of each method in Methods order.
func SchemaNames() []string {
	names := []string{SchemaRequest, SchemaResponse, SchemaError, SchemaEvent, SchemaCallResult, SchemaAcquireResult}
	for _, m := range Methods() {
		names = append(names, m.Name+".params", m.Name+".result")
	}
	return names
}

// Schema returns the JSON Schema document (draft 2020-12) named name, e.g.
// "tool.call.params" or "event".
func Schema(name string) ([]byte, error) {
	return schemaFS.ReadFile("schema/" + name + ".json")
}

// Validator checks messages against the protocol's schemas. It is safe for
// concurrent use.
type Validator struct {
	mu       sync.Mutex
	resolved map[string]*jsonschema.Resolved
}

// newLazyValidator returns a Validator that compiles a schema when it is
// first needed: a driver process checks the params of the few methods a
// run calls, and compiling all forty schemas took about a quarter of the
// CPU of a short-lived `harness driver` process.
func newLazyValidator() *Validator {
	return &Validator{resolved: map[string]*jsonschema.Resolved{}}
}

// NewValidator compiles every schema. The schemas are embedded, so an error
// means the package itself is broken.
func NewValidator() (*Validator, error) {
	v := newLazyValidator()
	files, err := fs.Glob(schemaFS, "schema/*.json")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if _, err := v.schema(strings.TrimSuffix(path.Base(f), ".json")); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// schema returns the schema named name, compiled on first use.
func (v *Validator) schema(name string) (*jsonschema.Resolved, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if rs, ok := v.resolved[name]; ok {
		return rs, nil
	}
	if _, err := Schema(name); err != nil {
		return nil, fmt.Errorf("no schema named %q", name)
	}
	rs, err := compile(name)
	if err != nil {
		return nil, err
	}
	v.resolved[name] = rs
	return rs, nil
}

// warm compiles the schemas named; one that does not compile is reported
// when a message is validated against it.
func (v *Validator) warm(names ...string) {
	for _, name := range names {
		_, _ = v.schema(name)
	}
}

// compile loads the schema named name and resolves it, with the schemas
// it refers to.
func compile(name string) (*jsonschema.Resolved, error) {
	load := func(name string) (*jsonschema.Schema, error) {
		data, err := Schema(name)
		if err != nil {
			return nil, err
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		return &s, nil
	}
	loader := func(u *url.URL) (*jsonschema.Schema, error) {
		s := u.String()
		if !strings.HasPrefix(s, SchemaBaseURI) {
			return nil, fmt.Errorf("schema %s is not part of the driver protocol", s)
		}
		return load(strings.TrimSuffix(path.Base(u.Path), ".json"))
	}
	s, err := load(name)
	if err != nil {
		return nil, err
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{Loader: loader})
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	return rs, nil
}

// Validate checks one JSON document against the schema named name.
func (v *Validator) Validate(name string, doc []byte) error {
	rs, err := v.schema(name)
	if err != nil {
		return err
	}
	var inst any
	if err := json.Unmarshal(doc, &inst); err != nil {
		return fmt.Errorf("%s: not JSON: %w", name, err)
	}
	if err := rs.Validate(inst); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Direction says who wrote a transcript line.
type Direction string

// The directions of a transcript.
const (
	Sent     Direction = "sent"     // harness to driver
	Received Direction = "received" // driver to harness
)

// TranscriptLine is one line exchanged with a driver.
type TranscriptLine struct {
	Dir  Direction
	Line []byte
	// Raw marks a line the harness wrote with Client.SendLine, which is not
	// expected to be a valid request.
	Raw bool
}

// ValidateTranscript checks every line of an exchange against its schema:
// requests against the request schema and their method's params schema,
// responses against the response schema and the result schema of the
// request they answer, and the other driver lines against theirs. Lines
// marked Raw are not checked (their responses are). It returns one error per
// offending line.
func (v *Validator) ValidateTranscript(lines []TranscriptLine) []error {
	var errs []error
	methods := map[int64]string{}
	known := map[string]bool{}
	for _, m := range Methods() {
		known[m.Name] = true
	}
	fail := func(i int, l TranscriptLine, err error) {
		errs = append(errs, fmt.Errorf("line %d (%s) %s: %w", i+1, l.Dir, bytes.TrimSpace(l.Line), err))
	}
	for i, l := range lines {
		if l.Dir == Sent {
			var req Request
			if l.Raw {
				if json.Unmarshal(l.Line, &req) == nil {
					methods[req.ID] = req.Method
				}
				continue
			}
			if err := v.Validate(SchemaRequest, l.Line); err != nil {
				fail(i, l, err)
				continue
			}
			if err := json.Unmarshal(l.Line, &req); err != nil {
				fail(i, l, err)
				continue
			}
			methods[req.ID] = req.Method
			if !known[req.Method] {
				continue
			}
			params := req.Params
			if len(params) == 0 {
				params = []byte("{}")
			}
			if err := v.Validate(req.Method+".params", params); err != nil {
				fail(i, l, err)
			}
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(l.Line, &head); err != nil {
			fail(i, l, err)
			continue
		}
		switch head.Type {
		case TypeResponse:
			if err := v.Validate(SchemaResponse, l.Line); err != nil {
				fail(i, l, err)
				continue
			}
			var resp Response
			if err := json.Unmarshal(l.Line, &resp); err != nil {
				fail(i, l, err)
				continue
			}
			if resp.ID == nil || resp.Result == nil {
				continue
			}
			if m := methods[*resp.ID]; known[m] {
				if err := v.Validate(m+".result", resp.Result); err != nil {
					fail(i, l, err)
				}
			}
		case TypeEvent, TypeCallResult, TypeAcquireResult:
			if err := v.Validate(head.Type, l.Line); err != nil {
				fail(i, l, err)
			}
		default:
			fail(i, l, fmt.Errorf("unknown line type %q", head.Type))
		}
	}
	return errs
}

// schemaFiles lists the names of the embedded schema files, sorted.
func schemaFiles() ([]string, error) {
	files, err := fs.Glob(schemaFS, "schema/*.json")
	if err != nil {
		return nil, err
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(path.Base(f), ".json")
	}
	slices.Sort(names)
	return names, nil
}
