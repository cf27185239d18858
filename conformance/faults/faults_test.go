package faults

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// moduleRoot is the module's root directory, from this package's.
const moduleRoot = "../.."

// gateCall matches a defect's gate in a patch's added lines.
var gateCall = regexp.MustCompile(`faultOn\("([^"]*)"\)`)

// TestPatches: every defect is described, patches production Go files of
// runtime/ only, and gates its code on its own name, and on no other.
func TestPatches(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no patches")
	}
	for _, f := range all {
		if f.Description == "" || strings.Contains(f.Description, "\n") {
			t.Errorf("%s: want a one-line description before the diff, got %q", f.Name, f.Description)
		}
		gated := false
		for _, fd := range f.Patch.Files {
			if !strings.HasPrefix(fd.NewName, "runtime/") || !strings.HasSuffix(fd.NewName, ".go") || strings.HasSuffix(fd.NewName, "_test.go") {
				t.Errorf("%s: patches %s; defects live in runtime/'s production Go files", f.Name, fd.NewName)
			}
			for _, h := range fd.Hunks {
				for _, l := range h.Lines {
					for _, m := range gateCall.FindAllStringSubmatch(l.Text, -1) {
						if m[1] != f.Name {
							t.Errorf("%s: %s %c%s: the gate names %q", f.Name, fd.NewName, l.Op, l.Text, m[1])
						}
						gated = gated || l.Op == '+'
					}
				}
			}
		}
		if !gated {
			t.Errorf("%s: no added line asks faultOn(%q): the defect would be on in every run", f.Name, f.Name)
		}
	}
}

// TestPatchesApply: each patch applies to today's runtime on its own, all
// of them apply together, and the result compiles. A failure here means the
// code a defect changes was edited: refresh its patch (docs/CONFORMANCE.md,
// section 9).
func TestPatchesApply(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		for _, fd := range f.Patch.Files {
			var src []byte
			if !fd.Created() {
				if src, err = os.ReadFile(filepath.Join(moduleRoot, filepath.FromSlash(fd.OldName))); err != nil {
					t.Errorf("%s: %v", f.Name, err)
					continue
				}
			}
			if _, err := fd.Apply(src); err != nil {
				t.Errorf("patches/%s.patch no longer applies on its own: %v", f.Name, err)
			}
		}
	}
	if t.Failed() {
		return
	}
	overlay, err := Overlay(moduleRoot, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), "go", "build", "-overlay", overlay, "./runtime/...")
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the runtime with every defect does not compile: %v\n%s", err, out)
	}
}

// TestShippedRuntimeHasNoDefects: no production file of runtime/ names a
// defect or asks for one; they exist only in the patches.
func TestShippedRuntimeHasNoDefects(t *testing.T) {
	names, err := Names()
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(filepath.Join(moduleRoot, "runtime"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		if strings.Contains(text, "faultOn(") || strings.Contains(text, Env) {
			t.Errorf("%s asks for a deliberate defect", path)
		}
		for _, n := range names {
			if strings.Contains(text, `"`+n+`"`) {
				t.Errorf("%s names the defect %q", path, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
