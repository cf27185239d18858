package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/shard"
)

// TestRunShardsMerge: the shards of a run partition the selected
// scenarios, and merge-reports joins their JSON reports.
func TestRunShardsMerge(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, sh := range []string{"1/2", "2/2"} {
		f := filepath.Join(dir, strings.ReplaceAll(sh, "/", "of")+".json")
		code, out, errs := harness(t, "run", "-run", "^00[1-3]-", "-shard", sh, "-json", f)
		if code != 0 {
			t.Fatalf("shard %s: exit %d\nstdout:\n%s\nstderr:\n%s", sh, code, out, errs)
		}
		files = append(files, f)
	}
	merged := filepath.Join(dir, "merged.json")
	code, out, errs := harness(t, append([]string{"merge-reports", "-o", merged}, files...)...)
	if code != 0 || !strings.Contains(out, "6 passed, 0 failed, 0 skipped, 0 not applicable") {
		t.Fatalf("merge: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	b, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	var rep jsonReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rep.Scenarios {
		names = append(names, s.Era+"/"+s.Name[:3])
	}
	// Both eras (the default), each sorted by name, legacy first.
	if want := []string{"legacy/001", "legacy/002", "legacy/003", "modern/001", "modern/002", "modern/003"}; !slices.Equal(names, want) {
		t.Errorf("merged scenarios %v, want %v", names, want)
	}
}

func TestShardBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"run", "-shard", "3/2"},
		{"run", "-shard", "x"},
		{"conformance", "-shard", "0/4"},
		{"merge-reports", "-o", "x.json"},
	} {
		if code, _, _ := harness(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestConformanceShardsPartition: the requirement shards are disjoint and
// cover the suite.
func TestConformanceShardsPartition(t *testing.T) {
	var all []string
	for i := 1; i <= 3; i++ {
		all = append(all, shardRequirements(mustShard(t, i, 3), nil, nil)...)
	}
	want := shardRequirements(mustShard(t, 1, 1), nil, nil)
	slices.Sort(all)
	if len(want) == 0 || !slices.Equal(all, want) {
		t.Errorf("shards cover %d requirements, want %d", len(all), len(want))
	}
}

func mustShard(t *testing.T, i, n int) shard.Spec {
	t.Helper()
	return shard.Spec{Index: i, Total: n}
}
