package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The writer edits one config file in place. It splices each change into the
// file's text, so everything it does not touch (key order, unknown fields at
// the top level and inside entries, formatting, even comments) stays as it
// was. Writes are atomic: a temporary file in the same directory, synced,
// given the old file's mode, then renamed over the file (through a symlink,
// to its target). Concurrent writers to one file are not coordinated: the
// last rename wins.
//
// Servers are looked for under "mcpServers" and then "servers". The
// definition that counts is the one discovery uses: the last occurrence of the
// name in the first of those objects that has it.

// AddServer adds a server to the file at path, creating the file (with a
// "mcpServers" object, mode 0600) and its directory (mode 0700) if needed. It
// validates name and entry (errors wrap ErrInvalidConfig and read
// "Invalid server config: <field>: <problem>") and refuses a name the file
// already defines ("Server "<name>" already exists in <path>", wrapping
// ErrDuplicateServer).
func AddServer(path, name string, entry json.RawMessage) error {
	if err := ValidateEntry(name, entry); err != nil {
		return err
	}
	val, err := compactEntry(entry)
	if err != nil {
		return err
	}
	d, err := loadDoc(path)
	if err != nil {
		return err
	}
	if len(d.find(name)) > 0 {
		return &msgError{msg: fmt.Sprintf("Server %q already exists in %s", name, path), err: ErrDuplicateServer}
	}
	if !d.exists {
		text := fmt.Sprintf("{\n  \"mcpServers\": {\n    %s: %s\n  }\n}\n", quote(name), indentJSON(val, "    ", "  "))
		if err := os.MkdirAll(filepath.Dir(d.real), 0o700); err != nil {
			return fmt.Errorf("config: create %s: %w", filepath.Dir(d.real), err)
		}
		return d.save([]byte(text))
	}
	var e edit
	if sec, ok := d.section(); ok {
		e = d.insertMember(sec, name, val)
	} else {
		obj := append(append([]byte("{"), quote(name)...), ':')
		obj = append(append(obj, val...), '}')
		e = d.insertMember(d.top, "mcpServers", obj)
	}
	return d.apply(e)
}

// UpdateServer replaces the definition of name in the file at path with
// entry, after validating it like AddServer. Fields that entry lacks are
// removed; fields present in both keep their place in the file, and new
// fields follow them. A name the file does not define is an error wrapping
// ErrServerNotFound.
func UpdateServer(path, name string, entry json.RawMessage) error {
	if err := ValidateEntry(name, entry); err != nil {
		return err
	}
	val, err := compactEntry(entry)
	if err != nil {
		return err
	}
	d, err := loadDoc(path)
	if err != nil {
		return err
	}
	m, ok := d.effective(name)
	if !ok {
		return notFound(name, path)
	}
	merged := val
	if m.val.isObject() {
		merged = mergeOrdered(m.val, topValue(val))
	}
	return d.apply(edit{start: m.val.off, end: m.val.end, text: d.formatValue(merged, m.keyOff)})
}

// RemoveServer removes every definition of name from the file at path. A name
// the file does not define is an error wrapping ErrServerNotFound.
func RemoveServer(path, name string) error {
	d, err := loadDoc(path)
	if err != nil {
		return err
	}
	if len(d.find(name)) == 0 {
		return notFound(name, path)
	}
	for {
		occ := d.find(name)
		if len(occ) == 0 {
			return d.save(d.orig)
		}
		if err := d.edit(d.removeMember(occ[0].obj, occ[0].index)); err != nil {
			return err
		}
	}
}

// SetEnabled sets "enabled" on the definition of name in the file at path:
// false writes "enabled": false; true rewrites an existing "enabled" value
// and otherwise leaves the entry alone (servers are enabled by default). The
// entry is not validated, so a broken server can still be disabled. A name
// the file does not define is an error wrapping ErrServerNotFound.
func SetEnabled(path, name string, enabled bool) error {
	d, err := loadDoc(path)
	if err != nil {
		return err
	}
	m, ok := d.effective(name)
	if !ok {
		return notFound(name, path)
	}
	if !m.val.isObject() {
		return invalidConfig("", fmt.Sprintf("server %q in %s is a %s, not an object", name, path, m.val.kind()))
	}
	text := fmt.Sprint(enabled)
	if cur, ok := m.val.get("enabled"); ok {
		if string(cur.raw()) == text {
			return nil
		}
		return d.apply(edit{start: cur.off, end: cur.end, text: text})
	}
	if enabled {
		return nil
	}
	return d.apply(d.insertMember(m.val, "enabled", []byte(text)))
}

func notFound(name, path string) error {
	return &msgError{msg: fmt.Sprintf("Server %q not found in %s", name, path), err: ErrServerNotFound}
}

// doc is a config file loaded for editing.
type doc struct {
	path   string // as given
	real   string // symlinks resolved
	exists bool
	mode   fs.FileMode
	orig   []byte // current text
	data   []byte // orig with comments blanked; offsets match orig
	top    jval
	unit   string // indentation step
}

func loadDoc(path string) (*doc, error) {
	d := &doc{path: path, real: path, mode: 0o600}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		d.real = real
	}
	data, err := ReadFile(d.real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.exists = false
	case err != nil:
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	default:
		d.exists = true
		if st, err := os.Stat(d.real); err == nil {
			d.mode = st.Mode().Perm()
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if d.exists {
			d.exists = false // an empty file is rewritten from scratch, keeping its mode
		}
		return d, nil
	}
	d.exists = true
	if err := d.parse(data); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *doc) parse(orig []byte) error {
	data := blankJSONC(orig)
	if err := checkJSON(data); err != nil {
		off, _ := syntaxPosition(err)
		line, col := position(data, off)
		return &Diagnostic{Severity: SeverityError, File: d.path, Line: line, Column: col,
			Message: fmt.Sprintf("malformed JSON: %v; not rewriting the file", err),
			Err:     fmt.Errorf("%w: %w", ErrMalformedJSON, err)}
	}
	top := topValue(data)
	if !top.isObject() {
		return &Diagnostic{Severity: SeverityError, File: d.path, Err: ErrInvalidConfig,
			Message: fmt.Sprintf("top-level value must be an object, got %s; not rewriting the file", top.kind())}
	}
	for _, k := range serverKeys {
		if v, ok := top.get(k); ok && !v.isObject() {
			line, col := position(data, v.off)
			return &Diagnostic{Severity: SeverityError, File: d.path, Line: line, Column: col, Field: k, Err: ErrInvalidConfig,
				Message: fmt.Sprintf("must be an object, got %s; not rewriting the file", v.kind())}
		}
	}
	d.orig, d.data, d.top = orig, data, top
	d.unit = detectIndent(data)
	return nil
}

// section returns the first server object the file has.
func (d *doc) section() (jval, bool) {
	for _, k := range serverKeys {
		if v, ok := d.top.get(k); ok {
			return v, true
		}
	}
	return jval{}, false
}

type occurrence struct {
	obj   jval
	index int
	m     jmember
}

// find returns every definition of name, in file order per section.
func (d *doc) find(name string) []occurrence {
	if !d.exists {
		return nil
	}
	var out []occurrence
	for _, k := range serverKeys {
		for _, sec := range d.sections(k) {
			for i, m := range sec.members() {
				if m.key == name {
					out = append(out, occurrence{obj: sec, index: i, m: m})
				}
			}
		}
	}
	return out
}

// sections returns every top-level member named k that is an object
// (duplicated keys included, so removal catches them all).
func (d *doc) sections(k string) []jval {
	var out []jval
	for _, m := range d.top.members() {
		if m.key == k && m.val.isObject() {
			out = append(out, m.val)
		}
	}
	return out
}

// effective returns the definition discovery would use.
func (d *doc) effective(name string) (jmember, bool) {
	if !d.exists {
		return jmember{}, false
	}
	for _, k := range serverKeys {
		if sec, ok := d.top.get(k); ok {
			if v, ok := sec.get(name); ok {
				for _, m := range sec.members() {
					if m.val.off == v.off {
						return m, true
					}
				}
			}
		}
	}
	return jmember{}, false
}

type edit struct {
	start, end int
	text       string
}

// edit applies e to the text and re-parses it.
func (d *doc) edit(e edit) error {
	if bytes.Contains(d.orig, []byte("\r\n")) {
		e.text = strings.ReplaceAll(e.text, "\n", "\r\n")
	}
	out := make([]byte, 0, len(d.orig)+len(e.text))
	out = append(out, d.orig[:e.start]...)
	out = append(out, e.text...)
	out = append(out, d.orig[e.end:]...)
	if err := d.parse(out); err != nil {
		return fmt.Errorf("config: internal error editing %s: %w", d.path, err)
	}
	return nil
}

// apply applies e and saves the file.
func (d *doc) apply(e edit) error {
	if err := d.edit(e); err != nil {
		return err
	}
	return d.save(d.orig)
}

// lead returns the whitespace that starts the line containing off, and
// whether only whitespace precedes off on that line.
func (d *doc) lead(off int) (string, bool) {
	start := bytes.LastIndexByte(d.data[:off], '\n') + 1
	j := start
	for j < off && (d.data[j] == ' ' || d.data[j] == '\t') {
		j++
	}
	return string(d.data[start:j]), j == off
}

// formatValue lays out a compact JSON value that will start at the position
// of a member whose key is at keyOff.
func (d *doc) formatValue(val []byte, keyOff int) string {
	lead, own := d.lead(keyOff)
	if !own {
		return string(val)
	}
	return indentJSON(val, lead, d.unit)
}

// insertMember adds "key": val (val compact) as the last member of obj.
func (d *doc) insertMember(obj jval, key string, val []byte) edit {
	ms := obj.members()
	if len(ms) == 0 {
		lead, _ := d.lead(obj.off)
		child := lead + d.unit
		return edit{start: obj.off, end: obj.end,
			text: "{\n" + child + quote(key) + ": " + indentJSON(val, child, d.unit) + "\n" + lead + "}"}
	}
	last := ms[len(ms)-1]
	lead, own := d.lead(last.keyOff)
	if !own {
		return edit{start: last.val.end, end: last.val.end, text: ", " + quote(key) + ": " + string(val)}
	}
	return edit{start: last.val.end, end: last.val.end,
		text: ",\n" + lead + quote(key) + ": " + indentJSON(val, lead, d.unit)}
}

// removeMember deletes member i of obj together with one separating comma.
func (d *doc) removeMember(obj jval, i int) edit {
	ms := obj.members()
	switch {
	case len(ms) == 1:
		return edit{start: obj.off, end: obj.end, text: "{}"}
	case i > 0:
		return edit{start: ms[i-1].val.end, end: ms[i].val.end}
	default:
		return edit{start: ms[0].keyOff, end: ms[1].keyOff}
	}
}

// save writes text atomically.
func (d *doc) save(text []byte) error {
	dir := filepath.Dir(d.real)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(d.real)+".tmp-*")
	if err != nil {
		return fmt.Errorf("config: write %s: %w", d.path, err)
	}
	name := tmp.Name()
	fail := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(name)
		return fmt.Errorf("config: write %s: %w", d.path, err)
	}
	if _, err := tmp.Write(text); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(d.mode); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(name, d.real); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("config: write %s: %w", d.path, err)
	}
	return nil
}

// compactEntry returns the entry as compact JSON (comments dropped).
func compactEntry(entry []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, blankJSONC(entry)); err != nil {
		return nil, invalidConfig("", "entry is not valid JSON: "+err.Error())
	}
	return buf.Bytes(), nil
}

// mergeOrdered returns next as a compact object whose keys shared with old
// come in old's order, followed by next's other keys in next's order.
func mergeOrdered(old, next jval) []byte {
	nextMembers := next.members()
	last := map[string]jmember{}
	for _, m := range nextMembers {
		last[m.key] = m
	}
	done := map[string]bool{}
	var keys []string
	for _, m := range old.members() {
		if _, ok := last[m.key]; ok && !done[m.key] {
			keys = append(keys, m.key)
			done[m.key] = true
		}
	}
	for _, m := range nextMembers {
		if !done[m.key] {
			keys = append(keys, m.key)
			done[m.key] = true
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(k))
		b.WriteByte(':')
		b.Write(last[k].val.raw())
	}
	b.WriteByte('}')
	return b.Bytes()
}

// indentJSON indents compact JSON whose first line is already placed; later
// lines start with prefix.
func indentJSON(val []byte, prefix, unit string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, val, prefix, unit); err != nil {
		return string(val)
	}
	return buf.String()
}

// quote encodes s as a JSON string without HTML escaping.
func quote(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return string(bytes.TrimRight(buf.Bytes(), "\n"))
}

// detectIndent returns the file's indentation step: the leading whitespace of
// the first indented line, or two spaces.
func detectIndent(data []byte) string {
	for _, line := range bytes.Split(data, []byte("\n")) {
		trimmed := bytes.TrimLeft(line, " \t")
		if len(trimmed) == 0 || len(trimmed) == len(line) {
			continue
		}
		ws := string(line[:len(line)-len(trimmed)])
		switch {
		case ws[0] == '\t':
			return "\t"
		case len(ws) <= 8:
			return ws
		}
		break
	}
	return "  "
}
