// Package unidiff reads unified diffs (the format of `git diff`) and applies
// them to file contents, so that a patch can be applied at test time without
// git or patch(1).
//
// Apply locates each hunk by its content, not by its line numbers: the lines
// the hunk expects (context and removed lines) must occur in the file, and
// the occurrence nearest the hunk's own line number is used. Several patches
// made against the same file can therefore be applied one after another in
// any order, as long as their hunks do not overlap. When a hunk's lines are
// not found, context lines are dropped from either end (up to MaxFuzz from
// each, fewest first) before giving up, much as patch(1) does; a hunk that still cannot be placed is an error
// that names the file and the hunk.
package unidiff

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxFuzz is how many context lines Apply may drop from each end of a hunk
// that does not match as written (git diff writes three on each side).
const MaxFuzz = 3

// Patch is one parsed patch: the text before its first file (a description
// of the change) and the changes to each file.
type Patch struct {
	Preamble string
	Files    []*File
}

// File is the change to one file.
type File struct {
	OldName, NewName string // without the a/ and b/ prefixes; "/dev/null" for a created file
	Hunks            []*Hunk
}

// Created reports whether the file does not exist before the patch.
func (f *File) Created() bool { return f.OldName == "/dev/null" }

// Hunk is one @@ section of a file's change.
type Hunk struct {
	OldStart int    // the line the hunk starts at in the old file (1-based)
	Header   string // the @@ line, for messages
	Lines    []Line
}

// Line is one line of a hunk: Op is ' ' (context), '-' (removed) or '+'
// (added); Text excludes the op and the newline.
type Line struct {
	Op   byte
	Text string
}

// Parse reads a unified diff. Lines before the first "diff --git" or "---"
// header are the preamble; "index", mode and similar git header lines are
// ignored.
func Parse(data []byte) (*Patch, error) {
	p := &Patch{}
	lines := strings.SplitAfter(string(data), "\n")
	var pre strings.Builder
	var f *File
	var h *Hunk
	for i := 0; i < len(lines); i++ {
		raw := lines[i]
		line := strings.TrimSuffix(strings.TrimSuffix(raw, "\n"), "\r")
		if raw == "" {
			continue
		}
		switch {
		case strings.HasPrefix(line, "diff --git "):
			f, h = &File{}, nil
			p.Files = append(p.Files, f)
		case strings.HasPrefix(line, "--- ") && (h == nil || hunkDone(h)) && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			if f == nil || f.OldName != "" {
				f = &File{}
				p.Files = append(p.Files, f)
			}
			f.OldName = fileName(line[4:])
			f.NewName = fileName(strings.TrimSuffix(strings.TrimSuffix(lines[i+1][4:], "\n"), "\r"))
			h = nil
			i++
		case strings.HasPrefix(line, "@@ "):
			if f == nil || f.OldName == "" {
				return nil, fmt.Errorf("line %d: hunk %q before any file header", i+1, line)
			}
			start, err := oldStart(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			h = &Hunk{OldStart: start, Header: line}
			f.Hunks = append(f.Hunks, h)
		case h != nil && len(line) > 0 && (line[0] == ' ' || line[0] == '-' || line[0] == '+'):
			h.Lines = append(h.Lines, Line{Op: line[0], Text: line[1:]})
		case h != nil && line == "":
			h.Lines = append(h.Lines, Line{Op: ' '}) // an empty context line whose space was trimmed
		case h != nil && strings.HasPrefix(line, `\`):
			// "\ No newline at end of file": files here always end with one.
		case f == nil:
			pre.WriteString(raw)
		default:
			// git's extended header lines (index, mode, similarity...).
		}
	}
	p.Preamble = strings.TrimSpace(pre.String())
	if len(p.Files) == 0 {
		return nil, errors.New("no file changes in the patch")
	}
	for _, f := range p.Files {
		if f.OldName == "" || len(f.Hunks) == 0 {
			return nil, fmt.Errorf("file %s: no hunks", f.NewName)
		}
	}
	return p, nil
}

// hunkDone reports whether h can have no more lines: a "--- " line then
// starts the next file rather than removing a line that begins with "-- ".
func hunkDone(h *Hunk) bool {
	old, nw := 0, 0
	for _, l := range h.Lines {
		if l.Op != '+' {
			old++
		}
		if l.Op != '-' {
			nw++
		}
	}
	o, n := counts(h.Header)
	return old >= o && nw >= n
}

// counts reads the line counts of an @@ header.
func counts(header string) (old, new int) {
	f := strings.Fields(header)
	if len(f) < 3 {
		return 0, 0
	}
	return rangeLen(f[1]), rangeLen(f[2])
}

func rangeLen(r string) int {
	_, n, ok := strings.Cut(r[1:], ",")
	if !ok {
		return 1
	}
	v, _ := strconv.Atoi(n)
	return v
}

func oldStart(header string) (int, error) {
	f := strings.Fields(header)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") {
		return 0, fmt.Errorf("malformed hunk header %q", header)
	}
	s, _, _ := strings.Cut(f[1][1:], ",")
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("malformed hunk header %q: %w", header, err)
	}
	return n, nil
}

func fileName(s string) string {
	s, _, _ = strings.Cut(s, "\t")
	if s == "/dev/null" {
		return s
	}
	if len(s) > 2 && (s[:2] == "a/" || s[:2] == "b/") {
		return s[2:]
	}
	return s
}

// Apply applies f's hunks to src, the file's current content (nil for a
// created file), and returns the new content.
func (f *File) Apply(src []byte) ([]byte, error) {
	if f.Created() && len(src) > 0 {
		return nil, fmt.Errorf("%s: the patch creates the file, which already exists", f.NewName)
	}
	lines := splitLines(src)
	shift := 0 // where the file's lines now stand against the hunks' numbering
	for i, h := range f.Hunks {
		old, nw := h.sides()
		lead, trail := h.contextEnds()
		placed := false
		// Try the hunk as written, then with fewer context lines: first one
		// dropped in all, then two... (from either end).
		for drop := 0; drop <= 2*MaxFuzz && !placed; drop++ {
			for lo := max(0, drop-MaxFuzz); lo <= min(drop, MaxFuzz) && !placed; lo++ {
				hi := drop - lo
				if lo > lead || hi > trail {
					continue
				}
				o, n := old[lo:len(old)-hi], nw[lo:len(nw)-hi]
				if len(o) == 0 && len(old) > 0 {
					continue // nothing left to anchor the hunk
				}
				at := find(lines, o, h.OldStart-1+lo+shift)
				if at < 0 {
					continue
				}
				lines = slices.Concat(lines[:at], n, lines[at+len(o):])
				shift = at - (h.OldStart - 1 + lo) + len(n) - len(o)
				placed = true
			}
		}
		if !placed {
			return nil, fmt.Errorf("%s: hunk %d (%s) does not apply: its lines are not in the file", f.NewName, i+1, h.Header)
		}
	}
	return []byte(strings.Join(lines, "")), nil
}

// sides returns the hunk's old and new lines, each with its newline.
func (h *Hunk) sides() (old, new []string) {
	for _, l := range h.Lines {
		if l.Op != '+' {
			old = append(old, l.Text+"\n")
		}
		if l.Op != '-' {
			new = append(new, l.Text+"\n")
		}
	}
	return old, new
}

// contextEnds counts the context lines at the start and at the end of h.
func (h *Hunk) contextEnds() (lead, trail int) {
	for lead < len(h.Lines) && h.Lines[lead].Op == ' ' {
		lead++
	}
	for trail < len(h.Lines)-lead && h.Lines[len(h.Lines)-1-trail].Op == ' ' {
		trail++
	}
	return lead, trail
}

// find returns the index of the occurrence of want in lines nearest to
// near, or -1.
func find(lines, want []string, near int) int {
	best := -1
	for i := 0; i+len(want) <= len(lines); i++ {
		if !equal(lines[i:i+len(want)], want) {
			continue
		}
		if best < 0 || abs(i-near) < abs(best-near) {
			best = i
		}
	}
	return best
}

func equal(a, b []string) bool {
	for i := range b {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	if !bytes.HasSuffix(b, []byte("\n")) {
		s += "\n"
	}
	lines := strings.SplitAfter(s, "\n")
	return lines[:len(lines)-1] // the "" after the last newline
}
