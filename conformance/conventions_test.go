package conformance

import (
	"strings"
	"testing"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/onsi/ginkgo/v2/types"
)

// TestConventionsMoved checks the requirements that moved to the
// conventions profile (mcplife-driver/4): a driver of an earlier version
// is judged on each under the profile it formerly belonged to, as before
// the move, and a version-4 driver only when it claims conventions.
func TestConventionsMoved(t *testing.T) {
	all := []driver.Capability{}
	for _, c := range driver.Capabilities() {
		all = append(all, c.Name)
	}
	hello := func(version string, profiles ...driver.Profile) *state {
		return &state{mode: ClockVirtual, hello: &driver.HelloResult{Protocol: version, Capabilities: all, Profiles: profiles,
			Eras: []driver.Era{driver.EraLegacy, driver.EraModern}}}
	}
	moved := 0
	for _, r := range Requirements() {
		if r.Formerly == "" {
			continue
		}
		moved++
		if r.Profile != driver.ProfileConventions {
			t.Errorf("%s moved to %s: only the conventions profile takes requirements from earlier profiles", r.ID, r.Profile)
		}
		if !strings.HasPrefix(r.ID, prefixes[r.Formerly]+"-") {
			t.Errorf("%s: a moved requirement keeps the id its former profile %s gave it", r.ID, r.Formerly)
		}
		for _, v := range []string{driver.ProtocolVersion3, driver.ProtocolVersion2} {
			if why := hello(v, r.Formerly).notApplicable(r, driver.EraLegacy); why != "" {
				t.Errorf("%s, a %s driver claiming %s: %q, want it judged as before the move", r.ID, v, r.Formerly, why)
			}
			if why := hello(v, driver.ProfileCore).notApplicable(r, driver.EraLegacy); r.Formerly != driver.ProfileCore && why == "" {
				t.Errorf("%s, a %s driver claiming core only: applies, want not applicable (it was of %s)", r.ID, v, r.Formerly)
			}
		}
		if why := hello(driver.ProtocolVersion1, r.Formerly).notApplicable(r, driver.EraLegacy); why != "" {
			t.Errorf("%s, a version-1 driver claiming %s: %q, want it judged as before the move", r.ID, r.Formerly, why)
		}
		want := "not applicable: the driver does not claim profile conventions"
		if why := hello(driver.ProtocolVersion, r.Formerly).notApplicable(r, driver.EraLegacy); why != want {
			t.Errorf("%s, a version-4 driver claiming %s only: %q, want %q", r.ID, r.Formerly, why, want)
		}
		if why := hello(driver.ProtocolVersion, driver.ProfileConventions).notApplicable(r, driver.EraLegacy); why != "" {
			t.Errorf("%s, a version-4 driver claiming conventions: %q, want it to apply", r.ID, why)
		}
		labels := strings.Join(r.Labels(driver.EraLegacy), ",")
		if !strings.Contains(labels, string(r.Formerly)) || !strings.Contains(labels, string(driver.ProfileConventions)) {
			t.Errorf("%s: labels %s, want both %s and conventions (-profile %s still selects it)", r.ID, labels, r.Formerly, r.Formerly)
		}
	}
	if moved == 0 {
		t.Error("no requirement moved to the conventions profile")
	}
}

// TestConventionsSummary checks that a run's summary counts a moved
// requirement under the profile the driver was judged on it under: its
// former one for a driver of mcplife-driver/3, conventions for one of
// version 4.
func TestConventionsSummary(t *testing.T) {
	for v, want := range map[string]driver.Profile{driver.ProtocolVersion3: driver.ProfileCore, driver.ProtocolVersion: driver.ProfileConventions} {
		s := &state{cfg: Config{Target: Target{Name: "t"}}, mode: ClockReal, hello: &driver.HelloResult{Protocol: v, Eras: Both}}
		res := summarize(s, types.Report{})
		o, ok := res.Outcome("CORE-NAMING-001", driver.EraLegacy)
		if !ok || o.Profile != want {
			t.Errorf("%s: CORE-NAMING-001 counted under %q, want %q", v, o.Profile, want)
		}
	}
}
