package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/proctest"
)

// TestMain checks for leaked goroutines (goleak, through proctest.Main)
// and for processes left behind.
func TestMain(m *testing.M) { proctest.Main(m) }

// tinyRepo commits a small module with a command, an ignored file, an
// untracked file and a nested module, and returns the work tree.
func tinyRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":           "module example.com/tiny\n\ngo 1.21\n",
		"cmd/tiny/main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"tiny served\") }\n",
		".gitignore":       "ignored.txt\n",
		"ignored.txt":      "not in the module\n",
		"nested/go.mod":    "module example.com/tiny/nested\n\ngo 1.21\n",
		"nested/x.go":      "package nested\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, dir, nil, "git", "init", "-q", ".")
	run(t, dir, nil, "git", "add", ".")
	run(t, dir, []string{"GIT_COMMITTER_DATE=2025-01-02T03:04:05Z", "GIT_AUTHOR_DATE=2025-01-02T03:04:05Z"},
		"git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "tiny")
	if err := os.WriteFile(filepath.Join(dir, "untracked.go"), []byte("package tiny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestWriteServesTheCommit(t *testing.T) {
	repo := tinyRepo(t)
	hash := strings.TrimSpace(run(t, repo, nil, "git", "rev-parse", "HEAD"))
	out := t.TempDir()
	m, err := Write(out, repo, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	want := "v0.0.0-20250102030405-" + hash[:12]
	if m.Path != "example.com/tiny" || m.Version != want {
		t.Fatalf("wrote %s@%s, want example.com/tiny@%s", m.Path, m.Version, want)
	}
	dir := filepath.Join(out, "example.com", "tiny", "@v")
	var info struct{ Version, Time string }
	data, err := os.ReadFile(filepath.Join(dir, want+".info"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &info); err != nil || info.Version != want || info.Time != "2025-01-02T03:04:05Z" {
		t.Errorf(".info = %s (%v)", data, err)
	}
	if data, _ := os.ReadFile(filepath.Join(out, "example.com", "tiny", "@latest")); !strings.Contains(string(data), want) {
		t.Errorf("@latest = %s", data)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, want+".mod")); string(data) != "module example.com/tiny\n\ngo 1.21\n" {
		t.Errorf(".mod = %q", data)
	}
	zr, err := zip.OpenReader(filepath.Join(dir, want+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	prefix := "example.com/tiny@" + want + "/"
	wantNames := []string{prefix + ".gitignore", prefix + "cmd/tiny/main.go", prefix + "go.mod"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("zip holds %q, want %q (no ignored, untracked or nested-module files)", names, wantNames)
	}
}

// TestGoInstallFromTheProxy installs the tiny module's command with the go
// command from the written proxy alone, as .ci/recipe installs the harness.
func TestGoInstallFromTheProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with the go command")
	}
	repo := tinyRepo(t)
	out := t.TempDir()
	m, err := Write(out, repo, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	scratch, bin, cache := t.TempDir(), t.TempDir(), t.TempDir()
	run(t, scratch, []string{
		"GOPROXY=file://" + filepath.ToSlash(out), "GONOSUMDB=example.com/tiny", "GOMODCACHE=" + cache,
		"GOBIN=" + bin, "GOFLAGS=-modcacherw -buildvcs=false", "GOTOOLCHAIN=local", "GOWORK=off",
	}, "go", "install", "example.com/tiny/cmd/tiny@"+m.Version)
	if got := run(t, scratch, nil, filepath.Join(bin, "tiny")); got != "tiny served\n" {
		t.Errorf("the installed command printed %q", got)
	}
}

func TestWriteRefusesWhatIsNoModule(t *testing.T) {
	repo := tinyRepo(t)
	if _, err := Write(t.TempDir(), repo, "no-such-rev"); err == nil {
		t.Error("an unknown revision was served")
	}
	if _, err := Write(t.TempDir(), t.TempDir(), "HEAD"); err == nil {
		t.Error("a directory that is no git work tree was served")
	}
}
