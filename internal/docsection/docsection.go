// Package docsection keeps generated sections of Markdown documents in step
// with the code they mirror.
//
// A generated section sits between two marker lines:
//
//	<!-- BEGIN GENERATED: knobs -->
//	...
//	<!-- END GENERATED: knobs -->
//
// A package that owns a section renders its body from code and calls Check in
// a test. The test fails when the file is stale; setting the environment
// variable named by UpdateEnv (MCPLIFE_UPDATE_DOCS=1) rewrites the section
// instead.
package docsection

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// UpdateEnv is the environment variable that makes Check rewrite stale
// sections instead of reporting them.
const UpdateEnv = "MCPLIFE_UPDATE_DOCS"

// ErrNoSection reports that a document lacks the markers of a section.
var ErrNoSection = errors.New("generated section not found")

// StaleError reports that a section's body differs from what the code renders.
type StaleError struct {
	File, Name string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%s: generated section %q is stale; run the tests with %s=1 to rewrite it", e.File, e.Name, UpdateEnv)
}

func markers(name string) (begin, end string) {
	return "<!-- BEGIN GENERATED: " + name + " -->", "<!-- END GENERATED: " + name + " -->"
}

// Replace returns doc with the body of section name replaced by body.
func Replace(doc []byte, name, body string) ([]byte, error) {
	begin, end := markers(name)
	i := bytes.Index(doc, []byte(begin))
	if i < 0 {
		return nil, fmt.Errorf("%w: %q (missing %q)", ErrNoSection, name, begin)
	}
	start := i + len(begin)
	j := bytes.Index(doc[start:], []byte(end))
	if j < 0 {
		return nil, fmt.Errorf("%w: %q (missing %q)", ErrNoSection, name, end)
	}
	body = strings.TrimRight(body, "\n")
	var out bytes.Buffer
	out.Write(doc[:start])
	out.WriteString("\n")
	if body != "" {
		out.WriteString(body)
		out.WriteString("\n")
	}
	out.Write(doc[start+j:])
	return out.Bytes(), nil
}

// Check compares section name of file with body. When they differ it rewrites
// the file if UpdateEnv is set to a non-empty value, and otherwise returns a
// *StaleError.
func Check(file, name, body string) error {
	doc, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	want, err := Replace(doc, name, body)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if bytes.Equal(doc, want) {
		return nil
	}
	if os.Getenv(UpdateEnv) != "" {
		return os.WriteFile(file, want, 0o644)
	}
	return &StaleError{File: file, Name: name}
}
