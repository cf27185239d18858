package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// gateFile is the file Overlay adds to each patched package.
const gateFile = "zz_mcplife_faults.go"

// gate is that file's content: %s is the package name.
const gate = `// Code added by conformance/faults at build time. DO NOT COMMIT.

package %s

import (
	"os"
	"slices"
	"strings"
)

// faultOn reports whether the deliberate defect name is listed in %s.
func faultOn(name string) bool {
	return slices.Contains(strings.Split(os.Getenv(%q), ","), name)
}
`

// Overlay applies every patch to copies of the files of the module at root
// that they touch, writes them and a faultOn for each patched package into
// dir, and returns the path of the go build -overlay file that maps them
// over root.
func Overlay(root, dir string) (string, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("faults: %w", err)
	}
	all, err := All()
	if err != nil {
		return "", err
	}
	patched := map[string][]byte{} // slash path under root -> new content
	for _, f := range all {
		for _, fd := range f.Patch.Files {
			if !strings.HasSuffix(fd.NewName, ".go") || strings.HasSuffix(fd.NewName, "_test.go") {
				return "", fmt.Errorf("faults: patches/%s.patch changes %s: a defect patches production .go files only", f.Name, fd.NewName)
			}
			src, ok := patched[fd.NewName]
			if !ok && !fd.Created() {
				if src, err = os.ReadFile(filepath.Join(root, filepath.FromSlash(fd.OldName))); err != nil {
					return "", fmt.Errorf("faults: patches/%s.patch: %w", f.Name, err)
				}
			}
			out, err := fd.Apply(src)
			if err != nil {
				return "", fmt.Errorf("faults: patches/%s.patch: %w", f.Name, err)
			}
			patched[fd.NewName] = out
		}
	}
	replace := map[string]string{}
	write := func(rel string, data []byte) error {
		tmp := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return err
		}
		replace[filepath.Join(root, filepath.FromSlash(rel))] = tmp
		return nil
	}
	pkgs := map[string]bool{}
	for rel, data := range patched {
		if err := write(rel, data); err != nil {
			return "", fmt.Errorf("faults: %w", err)
		}
		pkgs[filepath.ToSlash(filepath.Dir(filepath.FromSlash(rel)))] = true
	}
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		name, err := packageName(filepath.Join(root, filepath.FromSlash(d)))
		if err != nil {
			return "", fmt.Errorf("faults: %w", err)
		}
		if err := write(d+"/"+gateFile, fmt.Appendf(nil, gate, name, Env, Env)); err != nil {
			return "", fmt.Errorf("faults: %w", err)
		}
	}
	b, err := json.MarshalIndent(map[string]any{"Replace": replace}, "", "\t")
	if err != nil {
		return "", fmt.Errorf("faults: %w", err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, b, 0o644); err != nil {
		return "", fmt.Errorf("faults: %w", err)
	}
	return overlay, nil
}

// packageName reads the package clause of a non-test Go file in dir.
func packageName(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
		if err != nil {
			return "", err
		}
		return af.Name.Name, nil
	}
	return "", fmt.Errorf("no Go files in %s", dir)
}

// Build builds the packages pkgs of the module at root with every defect
// compiled in (see Overlay), into out, with go build's -o. The overlay is
// written to a temporary directory removed afterwards.
func Build(ctx context.Context, root, out string, pkgs ...string) error {
	dir, err := os.MkdirTemp("", "mcplife-faults-")
	if err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	defer os.RemoveAll(dir)
	overlay, err := Overlay(root, dir)
	if err != nil {
		return err
	}
	args := append([]string{"build", "-overlay", overlay, "-o", out}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("faults: go build with the defects: %w\n%s", err, b)
		}
		return fmt.Errorf("faults: go build: %w", err)
	}
	return nil
}
