package scenarios_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/scenarios"
)

// RunCatalog names the real cause when RunOptions.Dir cannot be used (issue
// 31: `harness run -dir nothere` said "open .: no such file or
// directory"), before any driver is started.
func TestRunCatalogDirErrors(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file.txt")
	empty := filepath.Join(tmp, "empty")
	badName := filepath.Join(tmp, "bad")
	for _, d := range []string{empty, badName} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(badName, "Not-A-Scenario.txtar"), []byte("# x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, want string
	}{
		{filepath.Join(tmp, "nothere"), "scenario directory " + filepath.Join(tmp, "nothere") + ": no such file or directory"},
		{file, "scenario directory " + file + ": not a directory"},
		{empty, "scenario directory " + empty + ": holds no scenario file (NNN-slug.txtar)"},
		{badName, "Not-A-Scenario.txtar: a scenario file is named NNN-slug.txtar"},
	} {
		_, err := scenarios.RunCatalog(t.Context(), scenarios.RunOptions{Dir: tc.dir})
		var de *scenarios.DirError
		if !errors.As(err, &de) || de.Dir != tc.dir || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RunCatalog(-dir %s): %v; want a *DirError saying %q", tc.dir, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "open .") {
			t.Errorf("RunCatalog(-dir %s): %v names the FS root, not the directory", tc.dir, err)
		}
	}
}
