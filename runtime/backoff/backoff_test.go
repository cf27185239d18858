package backoff

import (
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRelentlessRepeatsLastStep(t *testing.T) {
	p := RelentlessPolicy()
	want := []time.Duration{0, 1, 2, 5, 10, 30, 60, 60, 60}
	for k, w := range want {
		d, ok := p.Delay(k)
		if !ok || d != w*time.Second {
			t.Fatalf("Delay(%d) = %v, %v; want %v", k, d, ok, w*time.Second)
		}
	}
}

func TestBoundedOnceNeverGiveUp(t *testing.T) {
	for _, tc := range []struct {
		p      Policy
		delays []time.Duration
	}{
		{BoundedPolicy(), []time.Duration{2 * time.Second, 5 * time.Second, 15 * time.Second}},
		{OncePolicy(), []time.Duration{0}},
		{NeverPolicy(), nil},
	} {
		for k, w := range tc.delays {
			if d, ok := tc.p.Delay(k); !ok || d != w {
				t.Fatalf("%s Delay(%d) = %v %v", tc.p.Name, k, d, ok)
			}
		}
		if _, ok := tc.p.Delay(len(tc.delays)); ok {
			t.Fatalf("%s did not give up after %d attempts", tc.p.Name, len(tc.delays))
		}
	}
}

func TestByName(t *testing.T) {
	p, err := ByName(Bounded, []time.Duration{time.Millisecond})
	if err != nil || len(p.Delays) != 1 || p.Delays[0] != time.Millisecond {
		t.Fatalf("ByName override = %+v, %v", p, err)
	}
	if _, err := ByName("sometimes", nil); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

// TestByNameKeepsDefaultsWithoutDelays: an empty delay list (a server with
// no "restartDelays") keeps the policy's own delays. A mutation run found
// that no test covered it: "> 0" mutated to ">= 0" emptied every policy.
func TestByNameKeepsDefaultsWithoutDelays(t *testing.T) {
	for _, want := range []Policy{RelentlessPolicy(), OncePolicy(), BoundedPolicy()} {
		for _, delays := range [][]time.Duration{nil, {}} {
			p, err := ByName(want.Name, delays)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Delays, want.Delays) || p.Repeat != want.Repeat {
				t.Errorf("ByName(%q, %v) = %+v, want the defaults %+v", want.Name, delays, p, want)
			}
			if d, ok := p.Delay(0); !ok || d != want.Delays[0] {
				t.Errorf("ByName(%q, %v).Delay(0) = %v, %v", want.Name, delays, d, ok)
			}
		}
	}
}
