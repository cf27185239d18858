package realservers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/docsection"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestCommand: the command line runs node on the package's entry point,
// which exists, with the arguments after it (skipped without Node.js and
// the packages, a failure under MCPLIFE_REQUIRE_NODE=1).
func TestCommand(t *testing.T) {
	cmd := Command(t, "../..", "server-everything", "stdio")
	if len(cmd) != 3 || filepath.Base(cmd[0]) != "node" || cmd[2] != "stdio" {
		t.Fatalf("command = %q", cmd)
	}
	if filepath.Base(filepath.Dir(filepath.Dir(cmd[1]))) != "server-everything" {
		t.Errorf("entry point %s is not server-everything's", cmd[1])
	}
	if _, err := os.Stat(cmd[1]); err != nil {
		t.Errorf("entry point: %v", err)
	}
}

// TestPinned checks, without Node.js, that Pinned agrees with what pins the
// servers (fixtures/real-servers/package.json) and with every place that
// states their tool counts: the want of .ci/real-servers-doctor, the
// sentence of README.md about it, and the doctor tables of README.md's
// console examples (which TestConsoleExamples runs when Node.js is there).
func TestPinned(t *testing.T) {
	const root = "../.."
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(root, "fixtures", "real-servers", "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		t.Fatal(err)
	}
	pinned := Pinned()
	if len(pinned) != len(pkg.Dependencies) {
		t.Errorf("fixtures/real-servers/package.json pins %d packages, Pinned() lists %d", len(pkg.Dependencies), len(pinned))
	}
	for _, s := range pinned {
		if v := pkg.Dependencies["@modelcontextprotocol/"+s.Package]; v != s.Version {
			t.Errorf("fixtures/real-servers/package.json pins @modelcontextprotocol/%s %q, Pinned() says %q: count its tools at the new version (go test ./internal/doctor -run TestRealServers) and update Pinned", s.Package, v, s.Version)
		}
	}

	script, err := os.ReadFile(filepath.Join(root, ".ci", "real-servers-doctor"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pinned {
		want := fmt.Sprintf(`%s: ["ok", %d,`, s.Name, s.Tools)
		if !bytes.Contains(script, []byte(want)) {
			t.Errorf(".ci/real-servers-doctor: its want has no %q (Pinned: %s lists %d tools)", want, s.Name, s.Tools)
		}
	}

	readme := filepath.Join(root, "README.md")
	if len(pinned) == 2 {
		sentence := regexp.MustCompile(`connect with (\d+ and \d+) tools`)
		if err := docsection.CheckValue(readme, sentence, fmt.Sprintf("%d and %d", pinned[0].Tools, pinned[1].Tools)); err != nil {
			t.Error(err)
		}
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for i, line := range strings.Split(string(doc), "\n") {
		for _, s := range pinned {
			// SERVER STATUS TYPE PROTOCOL TOOLS ... of harness doctor.
			m := regexp.MustCompile(`^` + regexp.QuoteMeta(s.Name) + `\s+ok\s+stdio\s+\S+\s+(\d+)\s`).FindStringSubmatch(line)
			if m == nil {
				continue
			}
			seen++
			if m[1] != strconv.Itoa(s.Tools) {
				t.Errorf("%s:%d: harness doctor shows %s with %s tools, Pinned() says %d", readme, i+1, s.Name, m[1], s.Tools)
			}
		}
	}
	if seen == 0 {
		t.Errorf("%s: no harness doctor line of the pinned servers found; update TestPinned", readme)
	}
}
