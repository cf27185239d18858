// Package faults holds the deliberate defects of the reference runtime that
// prove the conformance suite has teeth (docs/CONFORMANCE.md, section 9),
// and builds binaries with them compiled in.
//
// The shipped runtime holds no trace of them: each defect is a patch in
// patches/, named after the defect, a description on its first line and
// then a unified diff against runtime/ whose added code asks
// faultOn("name"). Build applies every patch at once to copies of the files
// they touch, adds a faultOn to each patched package (it reads Env, the
// comma-separated defects to inject), and runs go build with -overlay, so
// the tree is never copied or changed and the build cache is reused. One
// such binary serves every defect: which one is injected is chosen at run
// time with Env.
//
// A patch that no longer applies (the code it changes was edited) fails
// TestPatchesApply with the file and hunk; refresh it as section 9 of
// docs/CONFORMANCE.md shows (git apply, edit, git diff).
package faults
