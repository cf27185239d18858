package mcpproxy_test

import (
	"slices"
	"testing"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/mcplife/mcplife/internal/docsection"
	"github.com/mcplife/mcplife/internal/mcpproxy"
)

const testingDoc = "../../docs/TESTING.md"

func TestDocsProxySections(t *testing.T) {
	if err := docsection.Check(testingDoc, "proxy-journal", journal.KindTable(mcpproxy.JournalKinds())); err != nil {
		t.Error(err)
	}
	rules := "```\n" + mcpproxy.RuleSyntax + "\n```\n\n```\n" + mcpproxy.ControlAPI + "\n```\n"
	if err := docsection.Check(testingDoc, "proxy-rules", rules); err != nil {
		t.Error(err)
	}
}

// checkJournalKinds fails the test when the proxy wrote a kind its
// documentation does not list.
func checkJournalKinds(t *testing.T, entries []journal.Entry) {
	t.Helper()
	var known []string
	for _, k := range mcpproxy.JournalKinds() {
		known = append(known, k.Kind)
	}
	for _, e := range entries {
		if !slices.Contains(known, e.Kind) {
			t.Errorf("the proxy journaled kind %q, which JournalKinds does not document", e.Kind)
		}
	}
}
