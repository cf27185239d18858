package conformance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
)

// The Go driver of mark3labs/mcp-go (conformance/drivers/mcp-go, its own
// module, so mcp-go stays out of this module's dependencies; .ci/drivers
// builds and judges it).

// mcpGoDriverDir is the driver's module.
var mcpGoDriverDir = filepath.Join(driversDir, "mcp-go")

// buildMCPGoDriver builds the driver into a temporary directory. When it
// cannot be built (no go command, or mcp-go not in the module cache and no
// proxy) the test is skipped with the reason, unless MCPLIFE_REQUIRE_NODE=1
// (.ci/drivers sets it: the drivers must run there).
func buildMCPGoDriver(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		needDriverBuild(t, "go is not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "mcp-go-driver")
	cmd := exec.Command(goCmd, "build", "-C", mcpGoDriverDir, "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		needDriverBuild(t, "go build in "+mcpGoDriverDir+" failed: "+err.Error()+"\n"+string(out))
	}
	return bin
}

// needDriverBuild skips the test for a driver that cannot be built, or
// fails it when MCPLIFE_REQUIRE_NODE=1.
func needDriverBuild(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(requireNodeEnv) == "1" {
		t.Fatalf("%s, and %s=1 requires the drivers", why, requireNodeEnv)
	}
	t.Skipf("skipping the mcp-go driver: %s (set %s=1 to make this a failure)", why, requireNodeEnv)
}

// TestDriverMCPGoHello builds the mcp-go driver and checks its hello: the
// protocol and vocabulary the client accepts, both eras (mcp-go's client
// speaks both), and the implementation and version its committed report was
// measured with.
func TestDriverMCPGoHello(t *testing.T) {
	bin := buildMCPGoDriver(t)
	rep, err := ReadVerdicts(filepath.Join(mcpGoDriverDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stderr := &syncBuffer{}
	c, err := driver.StartCommand(ctx, []string{bin}, nil, stderr)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Hello(ctx)
	if err != nil {
		_ = c.Close(ctx)
		t.Fatalf("hello: %v\nstderr: %s", err, stderr.String())
	}
	if want := []driver.Profile{driver.ProfileCore, driver.ProfileConventions}; h.Protocol != driver.ProtocolVersion || !slices.Equal(h.Profiles, want) {
		t.Errorf("hello is %s claiming %v, want %s claiming %v (the conventions it meets are its glue.txt)", h.Protocol, h.Profiles, driver.ProtocolVersion, want)
	}
	if !slices.Equal(h.SpokenEras(), Both) {
		t.Errorf("hello speaks the eras %v, want both (mcp-go's Client.Initialize tries server/discover, then initialize)", h.SpokenEras())
	}
	if !slices.Equal(h.SpokenEras(), rep.Eras) {
		t.Errorf("hello speaks the eras %v, report.json was measured with %v: rerun .ci/drivers -update", h.SpokenEras(), rep.Eras)
	}
	if h.Implementation != rep.Implementation {
		t.Errorf("hello names %s %s, report.json was measured with %s %s: rerun .ci/drivers -update",
			h.Implementation.Name, h.Implementation.Version, rep.Implementation.Name, rep.Implementation.Version)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("shutdown: %v\nstderr: %s", err, stderr.String())
	}
}

// TestDriverMCPGoBaseline checks the mcp-go driver's baseline as
// TestDriverBaselines checks the Node drivers': it parses, names only known
// requirements with a reason each, and agrees with report.json.
func TestDriverMCPGoBaseline(t *testing.T) {
	base, err := ReadBaseline(filepath.Join(mcpGoDriverDir, "baseline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := base.check(); err != nil {
		t.Fatal(err)
	}
	rep, err := ReadVerdicts(filepath.Join(mcpGoDriverDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	xfail := map[string]bool{}
	for _, v := range rep.Verdicts {
		if v.Verdict != ExpectedFailure {
			continue
		}
		xfail[Key(v.ID, v.Era)], xfail[v.ID] = true, true
		if reason, _ := base.Reason(v.ID, v.Era); v.Reason != reason {
			t.Errorf("report.json gives %s the reason %q, the baseline %q: rerun .ci/drivers -update", Key(v.ID, v.Era), v.Reason, reason)
		}
	}
	for key := range base.Reasons {
		if !xfail[key] {
			t.Errorf("the baseline lists %s but report.json has no expected failure for it", key)
		}
	}
}
