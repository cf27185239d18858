package official

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The counts and versions README.md states, each checked by a test: the
// baselines' entries and the pins here, with no Node needed; the number of
// scenarios the modern run runs by TestOfficialClientSuiteModern.
var (
	legacyBaselineCount  = regexp.MustCompile("`baseline.yml` lists\\s+(\\d+)\\s+auth scenarios")
	modernBaselineCount  = regexp.MustCompile("`modern/baseline.yml` lists\\s+(\\d+)\\s+extension scenarios")
	modernRunCount       = regexp.MustCompile("`--requirements 2026-07-28` runs\\s+(\\d+)\\s+scenarios")
	modernTaggedCount    = regexp.MustCompile(`scenarios:\s+(\d+)\s+tagged 2026-07-28`)
	modernExtensionCount = regexp.MustCompile(`and\s+(\d+)\s+extension\s+scenarios`)
)

// readmeCount reads the number re captures in README.md.
func readmeCount(re *regexp.Regexp) (int, error) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		return 0, fmt.Errorf("README.md: %w", err)
	}
	m := re.FindSubmatch(data)
	if m == nil {
		return 0, fmt.Errorf("README.md has no match for %s", re)
	}
	return strconv.Atoi(string(m[1]))
}

// TestReadmeBaselineCounts: README.md's counts of the baselines' entries
// are the baselines'.
func TestReadmeBaselineCounts(t *testing.T) {
	for _, c := range []struct {
		re   *regexp.Regexp
		file string
	}{{legacyBaselineCount, "baseline.yml"}, {modernBaselineCount, "modern/baseline.yml"}} {
		n, err := readmeCount(c.re)
		if err != nil {
			t.Error(err)
			continue
		}
		if got := len(readBaseline(t, c.file)); got != n {
			t.Errorf("README.md says %s lists %d entries; it lists %d", c.file, n, got)
		}
	}
}

// TestPinnedVersions: package.json and modern/package.json pin the versions
// the tests and README.md name, and each lockfile agrees.
func TestPinnedVersions(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, version string }{{".", SuiteVersion}, {"modern", ModernSuiteVersion}} {
		var pkg struct {
			DevDependencies map[string]string `json:"devDependencies"`
		}
		var lock struct {
			Packages map[string]struct {
				Version string `json:"version"`
			} `json:"packages"`
		}
		for file, v := range map[string]any{"package.json": &pkg, "package-lock.json": &lock} {
			data, err := os.ReadFile(c.dir + "/" + file)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, v); err != nil {
				t.Fatalf("%s/%s: %v", c.dir, file, err)
			}
		}
		const name = "@modelcontextprotocol/conformance"
		if got := pkg.DevDependencies[name]; got != c.version {
			t.Errorf("%s/package.json pins %s %q, the test says %q", c.dir, name, got, c.version)
		}
		if got := lock.Packages["node_modules/"+name].Version; got != c.version {
			t.Errorf("%s/package-lock.json locks %s %q, want %q", c.dir, name, got, c.version)
		}
		if !strings.Contains(string(readme), name+"` "+c.version) && !strings.Contains(string(readme), name+" "+c.version) {
			t.Errorf("README.md does not name %s %s", name, c.version)
		}
	}
}
