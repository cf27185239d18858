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
	"regexp"
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

// WrongValueError reports that a sentence of a document states a value the
// code contradicts.
type WrongValueError struct {
	File string
	// Line is the 1-based line where the stale value starts.
	Line      int
	Got, Want string
	// Phrase is the pattern of the sentence, for the message.
	Phrase string
}

func (e *WrongValueError) Error() string {
	return fmt.Sprintf("%s:%d: says %q where %q is true (%s); run the tests with %s=1 to rewrite it", e.File, e.Line, e.Got, e.Want, e.Phrase, UpdateEnv)
}

// CheckValue checks a value stated in running text: every match of re in
// file must have want as its first submatch, and there must be at least one
// match (a sentence that is gone or reworded fails, so the check cannot go
// quiet). When a value differs it rewrites the file if UpdateEnv is set to a
// non-empty value, and otherwise returns a *WrongValueError for the first
// one. Use it for a count in prose, where a generated section would break
// the sentence.
func CheckValue(file string, re *regexp.Regexp, want string) error {
	doc, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	ms := re.FindAllSubmatchIndex(doc, -1)
	if len(ms) == 0 {
		return fmt.Errorf("%s: no sentence matches %q: %w", file, re, ErrNoSection)
	}
	var out bytes.Buffer
	last := 0
	var first *WrongValueError
	for _, m := range ms {
		if len(m) < 4 || m[2] < 0 {
			return fmt.Errorf("%s: pattern %q has no submatch for the value", file, re)
		}
		out.Write(doc[last:m[2]])
		out.WriteString(want)
		last = m[3]
		if got := string(doc[m[2]:m[3]]); got != want && first == nil {
			first = &WrongValueError{File: file, Line: 1 + bytes.Count(doc[:m[2]], []byte("\n")), Got: got, Want: want, Phrase: re.String()}
		}
	}
	out.Write(doc[last:])
	if first == nil {
		return nil
	}
	if os.Getenv(UpdateEnv) != "" {
		return os.WriteFile(file, out.Bytes(), 0o644)
	}
	return first
}
