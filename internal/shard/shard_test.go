package shard

import (
	"slices"
	"testing"
)

func TestTakePartitions(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e", "f", "g"}
	for n := 1; n <= 9; n++ {
		var all []string
		for i := 1; i <= n; i++ {
			part := Take(Spec{Index: i, Total: n}, items)
			if len(part) > (len(items)+n-1)/n || len(part) < len(items)/n {
				t.Errorf("shard %d/%d has %d items", i, n, len(part))
			}
			all = append(all, part...)
		}
		slices.Sort(all)
		if !slices.Equal(all, items) {
			t.Errorf("shards of %d: union %v, want %v", n, all, items)
		}
	}
}

func TestParse(t *testing.T) {
	if s, err := Parse("2/4"); err != nil || s != (Spec{2, 4}) {
		t.Errorf("Parse(2/4) = %v, %v", s, err)
	}
	if s, err := Parse(""); err != nil || s.Enabled() {
		t.Errorf("Parse(\"\") = %v, %v", s, err)
	}
	for _, bad := range []string{"0/4", "5/4", "1/0", "x/2", "3", "1/2/3"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}
