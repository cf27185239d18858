package unidiff

import (
	"strings"
	"testing"
)

const base = `package p

func a() int {
	x := 1
	return x
}

func b() int {
	y := 2
	return y
}
`

// twoHunks was made against base: it changes a and b.
const twoHunks = `what the change does

diff --git a/p/p.go b/p/p.go
index 1111111..2222222 100644
--- a/p/p.go
+++ b/p/p.go
@@ -3,4 +3,5 @@ package p
 func a() int {
 	x := 1
+	x++
 	return x
 }
@@ -8,4 +9,4 @@ func a() int {
 func b() int {
-	y := 2
+	y := 3
 	return y
 }
`

func mustParse(t *testing.T, s string) *Patch {
	t.Helper()
	p, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func TestParse(t *testing.T) {
	p := mustParse(t, twoHunks)
	if p.Preamble != "what the change does" {
		t.Errorf("Preamble = %q", p.Preamble)
	}
	if len(p.Files) != 1 || p.Files[0].OldName != "p/p.go" || p.Files[0].NewName != "p/p.go" {
		t.Fatalf("Files = %+v", p.Files)
	}
	if hs := p.Files[0].Hunks; len(hs) != 2 || hs[0].OldStart != 3 || hs[1].OldStart != 8 || len(hs[1].Lines) != 5 {
		t.Errorf("Hunks = %+v", hs)
	}
}

func TestApply(t *testing.T) {
	want := strings.Replace(strings.Replace(base, "\tx := 1\n", "\tx := 1\n\tx++\n", 1), "y := 2", "y := 3", 1)
	for name, src := range map[string]string{
		"as made":         base,
		"lines moved":     "// a comment\n// another\n" + base,
		"lines after":     base + "\nfunc c() {}\n",
		"context changed": strings.Replace(base, "package p\n", "package p // edited\n", 1),
	} {
		got, err := mustParse(t, twoHunks).Files[0].Apply([]byte(src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if name == "as made" && string(got) != want {
			t.Errorf("%s: got\n%s\nwant\n%s", name, got, want)
		}
		if !strings.Contains(string(got), "\tx := 1\n\tx++\n\treturn x\n") || !strings.Contains(string(got), "y := 3") {
			t.Errorf("%s: got\n%s", name, got)
		}
	}
}

// TestApplyFuzz: a hunk whose outer context lines were changed by another
// patch still applies, within MaxFuzz lines.
func TestApplyFuzz(t *testing.T) {
	src := strings.Replace(base, "func a() int {", "func a() (n int) {", 1)
	got, err := mustParse(t, twoHunks).Files[0].Apply([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "func a() (n int) {\n\tx := 1\n\tx++\n") {
		t.Errorf("got\n%s", got)
	}
}

func TestApplyRefusesMissingLines(t *testing.T) {
	// Both lines around the insertion changed: nothing anchors it.
	src := strings.Replace(base, "\tx := 1\n\treturn x\n", "\tx := 7\n\treturn -x\n", 1)
	_, err := mustParse(t, twoHunks).Files[0].Apply([]byte(src))
	if err == nil || !strings.Contains(err.Error(), "p/p.go: hunk 1") {
		t.Fatalf("err = %v, want hunk 1 of p/p.go named", err)
	}
	// A removed line that changed is never fuzzed away.
	src = strings.Replace(base, "y := 2", "y := 4", 1)
	if _, err := mustParse(t, twoHunks).Files[0].Apply([]byte(src)); err == nil || !strings.Contains(err.Error(), "hunk 2") {
		t.Fatalf("err = %v, want hunk 2", err)
	}
}

// TestApplyNearest: of two places that match, the one nearest the hunk's
// own line number is changed.
func TestApplyNearest(t *testing.T) {
	src := "x\ny\nz\n\n\n\n\nx\ny\nz\n"
	p := mustParse(t, "--- a/f\n+++ b/f\n@@ -8,3 +8,3 @@\n x\n-y\n+Y\n z\n")
	got, err := p.Files[0].Apply([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if want := "x\ny\nz\n\n\n\n\nx\nY\nz\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestApplyCreate(t *testing.T) {
	p := mustParse(t, "diff --git a/n.go b/n.go\nnew file mode 100644\n--- /dev/null\n+++ b/n.go\n@@ -0,0 +1,2 @@\n+package n\n+// x\n")
	f := p.Files[0]
	if !f.Created() {
		t.Fatal("Created() = false")
	}
	got, err := f.Apply(nil)
	if err != nil || string(got) != "package n\n// x\n" {
		t.Fatalf("Apply = %q, %v", got, err)
	}
	if _, err := f.Apply([]byte("package n\n")); err == nil {
		t.Error("creating a file that exists: no error")
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{
		"",
		"just words\n",
		"@@ -1 +1 @@\n-a\n+b\n",
		"--- a/f\n+++ b/f\n@@ -x +1 @@\n-a\n+b\n",
		"diff --git a/f b/f\n--- a/f\n+++ b/f\n",
	} {
		if _, err := Parse([]byte(s)); err == nil {
			t.Errorf("Parse(%q): no error", s)
		}
	}
}

// TestParseDashLines: a removed line that starts with "-- " is not taken
// for the next file's header.
func TestParseDashLines(t *testing.T) {
	p := mustParse(t, "--- a/f\n+++ b/f\n@@ -1,2 +1,1 @@\n--- not a header\n+++ b/neither\n")
	if len(p.Files) != 1 || len(p.Files[0].Hunks[0].Lines) != 2 {
		t.Fatalf("parsed %+v", p.Files[0].Hunks[0])
	}
}
