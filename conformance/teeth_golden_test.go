package conformance

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// teethGoldenFile lists, for every requirement, the proofs that it has
// teeth: a realistic defect that makes it fail.
const teethGoldenFile = "testdata/teeth.golden"

// The proof kinds of teeth.golden.
const (
	// proofFault is a deliberate defect of conformance/faults whose
	// row in the teeth table fails the requirement (names or also).
	proofFault = "fault"
	// proofUnproven records, with its reason, that no realistic defect is
	// known yet to fail the requirement: a visible gap, never a proof. The
	// catalogue test fails while any line says it.
	proofUnproven = "unproven"
)

// teethProof is one line of teeth.golden.
type teethProof struct {
	line int
	id   string
	kind string // proofFault or proofUnproven
	arg  string // the fault's name, or why the requirement is unproven
}

// parseTeethGolden reads teeth.golden: one "ID  kind:arg" per line, blank
// lines and # comments ignored, lines sorted by id.
func parseTeethGolden(name string, r io.Reader) ([]teethProof, error) {
	var proofs []teethProof
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		id, proof, ok := strings.Cut(text, " ")
		if !ok {
			id, proof, ok = strings.Cut(text, "\t")
		}
		if !ok {
			return nil, fmt.Errorf("%s:%d: %q: want a requirement id and a proof (fault:NAME or unproven:REASON)", name, n, text)
		}
		kind, arg, ok := strings.Cut(strings.TrimSpace(proof), ":")
		arg = strings.TrimSpace(arg)
		if !ok || arg == "" || (kind != proofFault && kind != proofUnproven) {
			return nil, fmt.Errorf("%s:%d: %s: proof %q: want fault:NAME or unproven:REASON", name, n, id, strings.TrimSpace(proof))
		}
		if k := len(proofs); k > 0 && proofs[k-1].id > id {
			return nil, fmt.Errorf("%s:%d: %s comes after %s: keep the lines sorted by id", name, n, id, proofs[k-1].id)
		}
		proofs = append(proofs, teethProof{line: n, id: id, kind: kind, arg: arg})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return proofs, nil
}

// teethGoldenProblems checks the proofs against the requirements and the
// teeth table: every requirement has a line, every line's id exists, every
// fault has a row that fails that id, no line is repeated, and no
// requirement is left unproven.
func teethGoldenProblems(name string, proofs []teethProof) (problems []string) {
	rows := map[string][]string{}
	for _, v := range teeth {
		rows[v.fault] = append([]string{v.names}, v.also...)
	}
	byID := map[string][]teethProof{}
	for _, p := range proofs {
		where := fmt.Sprintf("%s:%d: %s", name, p.line, p.id)
		if _, ok := Lookup(p.id); !ok {
			problems = append(problems, where+": no such requirement")
		}
		for _, q := range byID[p.id] {
			if q.kind == p.kind && q.arg == p.arg {
				problems = append(problems, fmt.Sprintf("%s: repeats line %d", where, q.line))
			}
		}
		byID[p.id] = append(byID[p.id], p)
		if p.kind != proofFault {
			continue
		}
		ids, ok := rows[p.arg]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: fault %s has no row in the teeth table (conformance/teeth_test.go)", where, p.arg))
		case !slices.Contains(ids, p.id):
			problems = append(problems, fmt.Sprintf("%s: the teeth row of fault %s does not fail it (it fails %s)", where, p.arg, strings.Join(ids, ", ")))
		}
	}
	for _, r := range Requirements() {
		ps := byID[r.ID]
		switch {
		case len(ps) == 0:
			problems = append(problems, fmt.Sprintf("%s: %s has no proof of teeth: add a line with a fault that fails it", name, r.ID))
		case slices.ContainsFunc(ps, func(p teethProof) bool { return p.kind == proofUnproven }):
			if len(ps) > 1 {
				problems = append(problems, fmt.Sprintf("%s: %s is proven: remove its unproven line", name, r.ID))
			} else {
				problems = append(problems, fmt.Sprintf("%s: %s is unproven (%s): no fault shows the suite catches its defect; add one (a patch in conformance/faults/patches and a teeth row)", name, r.ID, ps[0].arg))
			}
		}
	}
	return problems
}

// checkTeethGolden is the catalogue test's check of teeth.golden.
func checkTeethGolden(t *testing.T) {
	t.Helper()
	f, err := os.Open(teethGoldenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	proofs, err := parseTeethGolden(teethGoldenFile, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range teethGoldenProblems(teethGoldenFile, proofs) {
		t.Error(p)
	}
}

func TestParseTeethGolden(t *testing.T) {
	in := "# comment\n\nCORE-NAMING-004  fault:name-cap-off-by-one\nCORE-NAMING-004\tfault:other\nSEC-WRAP-002  unproven: the driver protocol itself\n"
	got, err := parseTeethGolden("g", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []teethProof{
		{3, "CORE-NAMING-004", proofFault, "name-cap-off-by-one"},
		{4, "CORE-NAMING-004", proofFault, "other"},
		{5, "SEC-WRAP-002", proofUnproven, "the driver protocol itself"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parsed %+v, want %+v", got, want)
	}
	for _, bad := range []string{"CORE-NAMING-004\n", "CORE-NAMING-004 name-cap\n", "CORE-NAMING-004 mutant:x\n", "CORE-NAMING-004 fault:\n", "SEC-WRAP-002 unproven:x\nCORE-NAMING-004 fault:y\n"} {
		if _, err := parseTeethGolden("g", strings.NewReader(bad)); err == nil {
			t.Errorf("parseTeethGolden(%q) succeeded", bad)
		}
	}
	problems := teethGoldenProblems("g", []teethProof{
		{1, "CORE-NAMING-004", proofFault, "no-such-fault"},
		{2, "CORE-NAMING-004", proofFault, "no-probe"},
		{3, "NOPE-X-001", proofUnproven, "x"},
		{4, "SEC-WRAP-002", proofUnproven, "no defect known"},
	})
	for _, want := range []string{"no-such-fault has no row", "no-probe does not fail it", "NOPE-X-001: no such requirement", "CORE-APPROVAL-001 has no proof", "SEC-WRAP-002 is unproven (no defect known)"} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem says %q: %q", want, problems)
		}
	}
}
