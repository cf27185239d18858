// Package shard splits a sorted list of work items deterministically
// across N machines: shard I of N (1-based) takes the items whose index in
// the sorted list is I-1 modulo N. Every item lands in exactly one shard,
// the shards differ in size by at most one, and the split depends only on
// the list, so a CI matrix can run `-shard 1/N` ... `-shard N/N` and merge
// the reports.
package shard

import (
	"fmt"
	"strconv"
	"strings"
)

// Spec is one shard: Index of Total, 1 <= Index <= Total. The zero Spec
// means no sharding.
type Spec struct {
	Index, Total int
}

// Parse reads "I/N". An empty string is the zero Spec.
func Parse(s string) (Spec, error) {
	if s == "" {
		return Spec{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || err1 != nil || err2 != nil {
		return Spec{}, fmt.Errorf("shard %q: want I/N, e.g. 2/4", s)
	}
	if n < 1 || i < 1 || i > n {
		return Spec{}, fmt.Errorf("shard %q: want 1 <= I <= N", s)
	}
	return Spec{Index: i, Total: n}, nil
}

// Enabled reports whether s selects a part of the work.
func (s Spec) Enabled() bool { return s.Total > 1 }

// String formats s as "I/N".
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Total) }

// Take returns the items of sorted that belong to shard s; all of them when
// s is not Enabled. sorted must be in a stable order (e.g. sorted by name).
func Take[T any](s Spec, sorted []T) []T {
	if !s.Enabled() {
		return sorted
	}
	var out []T
	for i, it := range sorted {
		if i%s.Total == s.Index-1 {
			out = append(out, it)
		}
	}
	return out
}
