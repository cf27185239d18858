package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDiscoverRefusesSpecialFiles: a project config that is a symlink to
// /dev/zero, a FIFO nobody writes to, a symlink to a directory, or a file
// over MaxFileBytes is refused with an error naming the file and what is
// wrong, without reading more than the limit and without blocking; a
// symlink to a regular file loads; and the servers of every other file
// still load.
func TestDiscoverRefusesSpecialFiles(t *testing.T) {
	d := newDirs(t)
	zero := filepath.Join(d.project, ".mcp.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(d.project, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(d.project, ".vscode", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(dirLink), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), dirLink); err != nil {
		t.Fatal(err)
	}
	// A sparse file one byte over the limit: its content never matters.
	big := filepath.Join(d.project, "mcp.json")
	writeFile(t, big, "")
	if err := os.Truncate(big, MaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	// A symlink to a regular file is fine.
	real := writeJSON(t, filepath.Join(t.TempDir(), "real.json"), map[string]any{"mcpServers": map[string]any{"linked": map[string]any{"command": "l"}}})
	if err := os.MkdirAll(filepath.Join(d.home, ".mcplife"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(d.home, ".mcplife", "mcp.json")); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(d.home, ".cursor", "mcp.json"), map[string]any{"mcpServers": map[string]any{"good": map[string]any{"command": "g"}}})

	res, err := Discover(d.opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := serverNames(res.Servers); got != "good,linked" {
		t.Errorf("servers %s, want good,linked", got)
	}
	want := map[string]struct {
		is  error
		msg string
	}{
		zero:    {ErrNotRegularFile, "not a regular file (a character device)"},
		fifo:    {ErrNotRegularFile, "not a regular file (a FIFO)"},
		dirLink: {ErrNotRegularFile, "not a regular file (a directory)"},
		big:     {ErrFileTooLarge, "file too large: more than the limit of 16777216 bytes (16 MiB)"},
	}
	if len(res.Diagnostics) != len(want) {
		t.Fatalf("diagnostics:\n%s", diagStrings(res.Diagnostics))
	}
	for _, dg := range res.Diagnostics {
		w, ok := want[dg.File]
		if !ok {
			t.Errorf("unexpected diagnostic %s", dg.Error())
			continue
		}
		mustIs(t, &dg, w.is)
		text := dg.Error()
		if dg.Severity != SeverityError || !strings.HasPrefix(text, dg.File+": cannot read config file: ") || !strings.Contains(text, w.msg) {
			t.Errorf("diagnostic %q, want the file and %q", text, w.msg)
		}
	}
}

// TestReadFileLimit: a regular file of exactly MaxFileBytes is read whole;
// one byte more is ErrFileTooLarge.
func TestReadFileLimit(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "f.json"), "")
	if err := os.Truncate(path, MaxFileBytes); err != nil {
		t.Fatal(err)
	}
	data, err := ReadFile(path)
	if err != nil || len(data) != MaxFileBytes {
		t.Fatalf("at the limit: %d bytes, %v", len(data), err)
	}
	if err := os.Truncate(path, MaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	data, err = ReadFile(path)
	mustIs(t, err, ErrFileTooLarge)
	if data != nil || !strings.Contains(err.Error(), path) {
		t.Errorf("over the limit: %d bytes, %v", len(data), err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

// TestWriterAndCredentialsRefuseSpecialFiles: the writer and
// FileCredentials read through the same guard, so a config or credential
// path that is a symlink to /dev/zero is an error, not an endless read.
func TestWriterAndCredentialsRefuseSpecialFiles(t *testing.T) {
	zero := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	err := AddServer(zero, "a", json.RawMessage(`{"command":"c"}`))
	mustIs(t, err, ErrNotRegularFile)
	_, err = FileCredentials{Path: zero}.Token(t.Context(), "id")
	mustIs(t, err, ErrNotRegularFile)
}
