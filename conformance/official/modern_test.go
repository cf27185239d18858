package official

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOfficialClientSuiteModern runs the client scenarios of the 2026-07-28
// revision from the 0.2.0 alpha pinned in modern/: `conformance client
// --requirements 2026-07-28`, every scenario the revision requires frozen at
// its release plus what the runner runs beside them (scenarios added after
// the release, extension scenarios), all in parallel, at the revision's
// wire: the runner passes the version in MCP_CONFORMANCE_PROTOCOL_VERSION
// and harness mcp-client pins it in the server's config.
//
// It fails when the runner reports an unexpected failure or a stale entry
// among the scenarios it scores, when any scenario that ran fails or warns
// without being in modern/baseline.yml, when a baseline entry passes or
// names no scenario that ran, when a scenario passes with no scored check,
// when a scenario `conformance list --client` tags 2026-07-28 did not run,
// when one of them outside auth/ is in the baseline, and when README.md's
// count of the scenarios run is not the number that ran.
func TestOfficialClientSuiteModern(t *testing.T) {
	binDir := suiteBin(t, "modern")
	tmp := t.TempDir()
	outDir := filepath.Join(tmp, "out")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const base = "modern/baseline.yml"
	r := suiteRunner{ctx: ctx, binDir: binDir, harness: buildHarness(t, tmp), outDir: outDir, base: base}
	start := time.Now()
	_, runErr := r.client("--requirements", ModernRevision)
	wall := time.Since(start)
	listing, err := r.run("list", "--client")
	if err != nil {
		t.Fatal(err)
	}
	tags := listScenarioTags(t, listing)

	baseline := readBaseline(t, base)
	results := readResults(t, outDir, baseline)
	t.Logf("@modelcontextprotocol/conformance %s, client --requirements %s (in parallel): %d scenarios in %s", ModernSuiteVersion, ModernRevision, len(results), wall.Round(100*time.Millisecond))
	t.Log("\n" + table(results))
	if runErr != nil {
		t.Errorf("the runner failed (unexpected failures or stale baseline entries): %v", runErr)
	}
	byName := map[string]scenarioResult{}
	for _, res := range results {
		byName[res.Name] = res
		switch {
		case res.verdict() == "VACUOUS":
			t.Errorf("scenario %s passed with no scored check: the runner counts that as a pass, this test does not", res.Name)
		case res.verdict() == "FAIL":
			t.Errorf("scenario %s: %d failed, %d warnings, not in %s", res.Name, res.Failed, res.Warnings, base)
		case res.Baseline && res.Failed+res.Warnings == 0:
			t.Errorf("scenario %s passes (%d checks) but is in %s: remove the entry", res.Name, res.Passed, base)
		}
	}
	for n := range baseline {
		if _, ok := byName[n]; !ok {
			t.Errorf("%s entry %s names no scenario that ran", base, n)
		}
	}
	for name, v := range tags {
		if !slices.Contains(v, ModernRevision) {
			continue
		}
		if _, ok := byName[name]; !ok {
			t.Errorf("scenario %s (tagged %s by `conformance list --client`) did not run", name, ModernRevision)
		}
		if baseline[name] && !strings.HasPrefix(name, "auth/") {
			t.Errorf("scenario %s of %s must pass; it may not be in %s", name, ModernRevision, base)
		}
	}
	tagged, extension := 0, 0
	for _, res := range results {
		switch {
		case slices.Contains(tags[res.Name], ModernRevision):
			tagged++
		case slices.Contains(tags[res.Name], "extension"):
			extension++
		}
	}
	for _, c := range []struct {
		re   *regexp.Regexp
		got  int
		what string
	}{
		{modernRunCount, len(results), "scenarios ran"},
		{modernTaggedCount, tagged, "of them are tagged " + ModernRevision},
		{modernExtensionCount, extension, "of them are extension scenarios"},
	} {
		if n, err := readmeCount(c.re); err != nil {
			t.Error(err)
		} else if n != c.got {
			t.Errorf("README.md says %d (%s); %d %s", n, c.re, c.got, c.what)
		}
	}
}

// listScenarioTags returns the client scenarios of `conformance list
// --client` ("  - name [tag,tag]" per line) with their tags: the spec
// versions a scenario applies to, or "extension".
func listScenarioTags(t *testing.T, out string) map[string][]string {
	t.Helper()
	item := regexp.MustCompile(`^\s+-\s+(\S+)(?:\s+\[([^\]]*)\])?`)
	tags := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := item.FindStringSubmatch(line); m != nil {
			tags[m[1]] = strings.Split(m[2], ",")
		}
	}
	if len(tags) == 0 {
		t.Fatalf("conformance list --client named no scenario:\n%s", out)
	}
	return tags
}
