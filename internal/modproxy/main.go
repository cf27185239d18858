// Command modproxy writes a file-based Go module proxy that serves one
// commit of a module from its git repository, as proxy.golang.org would
// serve it: the commit's pseudo-version, its .info, .mod and .zip (the
// zip made by golang.org/x/mod/zip from `git archive` of the commit, so
// ignored files, untracked files and nested modules are left out) and the
// version list. With GOPROXY=file://DIR the go command then installs
// MODULE@VERSION exactly as it would from the real proxy, without the
// module being published. .ci/recipe uses it to test the CI recipe of
// docs/CI-RECIPE.md (go install of a pinned harness version) offline.
//
//	go run ./internal/modproxy -out DIR [-repo .] [-rev HEAD]
//
// It prints the version it wrote (v0.0.0-yyyymmddhhmmss-abcdefabcdef, the
// commit time in UTC and the first 12 hex digits of the commit hash), so
//
//	version=$(go run ./internal/modproxy -out "$proxy")
//	GOPROXY=file://$proxy GONOSUMDB=github.com/mcplife/mcplife go install github.com/mcplife/mcplife/cmd/harness@$version
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "directory of the file-based proxy to write (GOPROXY=file://DIR); created if missing")
	repo := flag.String("repo", ".", "a git work tree of the module (its root holds go.mod)")
	rev := flag.String("rev", "HEAD", "the commit to serve")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: modproxy -out DIR [-repo DIR] [-rev REV]\n\nWrites a file-based Go module proxy serving commit REV of the module in\nREPO under its pseudo-version, and prints that version.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	v, err := Write(*out, *repo, *rev)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
	fmt.Println(v.Version)
}

// Write serves commit rev of the git work tree repo from the file-based
// proxy out, and returns the module path and the pseudo-version it wrote.
func Write(out, repo, rev string) (module.Version, error) {
	root, err := filepath.Abs(repo)
	if err != nil {
		return module.Version{}, err
	}
	hash, err := git(root, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return module.Version{}, err
	}
	unix, err := git(root, "show", "-s", "--format=%ct", hash)
	if err != nil {
		return module.Version{}, err
	}
	secs, err := strconv.ParseInt(unix, 10, 64)
	if err != nil {
		return module.Version{}, fmt.Errorf("commit time of %s: %v", hash, err)
	}
	commitTime := time.Unix(secs, 0).UTC()
	gomod, err := gitRaw(root, "show", hash+":go.mod")
	if err != nil {
		return module.Version{}, fmt.Errorf("go.mod of %s: %v", hash, err)
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return module.Version{}, fmt.Errorf("go.mod of %s names no module", hash)
	}
	if major := majorSuffix(path); major != "v0" {
		return module.Version{}, fmt.Errorf("module %s: only v0/v1 modules are supported", path)
	}
	m := module.Version{Path: path, Version: module.PseudoVersion("v0", "", commitTime, hash[:12])}
	if err := module.Check(m.Path, m.Version); err != nil {
		return module.Version{}, err
	}

	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return module.Version{}, err
	}
	dir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return module.Version{}, err
	}
	var zipped bytes.Buffer
	if err := zip.CreateFromVCS(&zipped, m, root, hash, ""); err != nil {
		return module.Version{}, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, commitTime})
	if err != nil {
		return module.Version{}, err
	}
	for _, f := range []struct {
		ext  string
		data []byte
	}{{".mod", gomod}, {".zip", zipped.Bytes()}, {".info", info}} {
		if err := os.WriteFile(filepath.Join(dir, m.Version+f.ext), f.data, 0o644); err != nil {
			return module.Version{}, err
		}
	}
	// As on proxy.golang.org for a module without release tags: the list
	// of released versions is empty (a pseudo-version is never listed) and
	// @latest answers the newest commit served, which the go command asks
	// for when it looks for a deprecation notice.
	list := filepath.Join(dir, "list")
	if _, err := os.Stat(list); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(list, nil, 0o644); err != nil {
			return module.Version{}, err
		}
	}
	latest := filepath.Join(filepath.Dir(dir), "@latest")
	if old, err := os.ReadFile(latest); err == nil {
		var prev struct{ Version string }
		if json.Unmarshal(old, &prev) == nil && semver.Compare(prev.Version, m.Version) > 0 {
			return m, nil
		}
	}
	if err := os.WriteFile(latest, info, 0o644); err != nil {
		return module.Version{}, err
	}
	return m, nil
}

// majorSuffix returns the major version a module path admits: v0 for a
// path without a /vN suffix.
func majorSuffix(path string) string {
	if _, major, ok := module.SplitPathVersion(path); ok && major != "" {
		return strings.TrimPrefix(major, "/")
	}
	return "v0"
}

// git runs git in dir and returns its output without surrounding space.
func git(dir string, args ...string) (string, error) {
	out, err := gitRaw(dir, args...)
	return strings.TrimSpace(string(out)), err
}

// gitRaw runs git in dir and returns its output as it is.
func gitRaw(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
