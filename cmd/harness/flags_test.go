package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
)

// TestCommandHelp checks that every command of the command list answers -h
// the same way: its usage and flags on stdout, nothing on stderr, exit 0;
// and a bad flag with one line on stderr, exit 2.
func TestCommandHelp(t *testing.T) {
	for _, c := range commands {
		if c.name == "fixture" || c.name == "version" {
			continue // the fixture's flags are its own; version takes none
		}
		var stdout, stderr bytes.Buffer
		if code := run([]string{c.name, "-h"}, &stdout, &stderr); code != 0 || stderr.Len() > 0 ||
			!strings.HasPrefix(stdout.String(), "usage: harness "+c.name+" ") {
			t.Errorf("harness %s -h: exit %d, stdout %q, stderr %q", c.name, code, stdout.String(), stderr.String())
		}
		stdout.Reset()
		stderr.Reset()
		want := "harness " + c.name + ": flag provided but not defined: -no-such-flag (harness " + c.name + " -h lists the flags)\n"
		if code := run([]string{c.name, "-no-such-flag"}, &stdout, &stderr); code != 2 || stderr.String() != want || stdout.Len() > 0 {
			t.Errorf("harness %s -no-such-flag: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.name, code, stdout.String(), stderr.String(), want)
		}
	}
}

// TestDocListsEveryCommand checks the synopsis in the package doc
// (main.go) against the command list.
func TestDocListsEveryCommand(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	for _, c := range commands {
		if !regexp.MustCompile(`(?m)^\tharness ` + regexp.QuoteMeta(c.name) + `( |$)`).MatchString(doc) {
			t.Errorf("the package doc's synopsis lacks harness %s", c.name)
		}
	}
}
