package conformance

import (
	"fmt"

	"github.com/mcplife/mcplife/fixtures/mcp-fixture/journal"
	"github.com/onsi/ginkgo/v2"
)

// This file holds reading and awaiting fixture journals.

// JournalEntries is a fixture journal.
type JournalEntries []journal.Entry

// Of returns the entries of kind.
func (j JournalEntries) Of(kind string) JournalEntries {
	var out JournalEntries
	for _, e := range j {
		if e.Kind == kind || (kind == Handshake && handshake(e)) {
			out = append(out, e)
		}
	}
	return out
}

// Handshake is a kind of journal entry for Of, Count, Last and
// AwaitJournal that matches a completed connect in either era: the
// "initialized" notification of the legacy handshake, or the answered
// server/discover ("discover" without an error) that opens a modern
// connection. The opening request itself, answered or not, is the
// fixture's "open" entry in both eras.
const Handshake = "handshake"

// handshake reports whether e completed a connect (Handshake).
func handshake(e journal.Entry) bool {
	return e.Kind == "initialized" || (e.Kind == "discover" && e.Str("error") == "")
}

// Count returns how many entries are of kind.
func (j JournalEntries) Count(kind string) int { return len(j.Of(kind)) }

// Where returns the entries of kind whose field key formats as val.
func (j JournalEntries) Where(kind, key, val string) JournalEntries {
	var out JournalEntries
	for _, e := range j.Of(kind) {
		if fmt.Sprint(e.Fields[key]) == val {
			out = append(out, e)
		}
	}
	return out
}

// Launches returns the launch entries.
func (j JournalEntries) Launches() JournalEntries { return j.Of("launch") }

// PIDs returns the pids of the launches, in order.
func (j JournalEntries) PIDs() []int {
	var out []int
	for _, e := range j.Launches() {
		out = append(out, e.PID)
	}
	return out
}

// AllPIDs returns every process the journal knows of: launches and spawned
// children.
func (j JournalEntries) AllPIDs() []int {
	seen := map[int]bool{}
	var out []int
	add := func(p int) {
		if p > 0 && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, e := range j {
		add(e.PID)
		if e.Kind == "child-started" {
			add(e.Int("childPid"))
		}
	}
	return out
}

// EscapedPIDs returns the children that left their server's process group
// (child-started with escaped true).
func (j JournalEntries) EscapedPIDs() []int {
	var out []int
	for _, e := range j.Of("child-started") {
		if c := e.Int("childPid"); c > 0 && e.Bool("escaped") {
			out = append(out, c)
		}
	}
	return out
}

// Last returns the last entry of kind, or a zero entry.
func (j JournalEntries) Last(kind string) journal.Entry {
	es := j.Of(kind)
	if len(es) == 0 {
		return journal.Entry{}
	}
	return es[len(es)-1]
}

// readJournal reads the journal named key through its follower: specs
// poll journals every few milliseconds, and a follower parses only what
// was appended since.
func (h *H) readJournal(key string) JournalEntries {
	f, ok := h.followers[key]
	if !ok {
		return nil
	}
	es, err := f.Read()
	if err != nil {
		return nil
	}
	return es
}

// Journal reads the fixture journal named key.
func (h *H) Journal(key string) JournalEntries {
	ginkgo.GinkgoHelper()
	if _, ok := h.journals[key]; !ok {
		h.fail("no fixture journal %q", key)
	}
	return h.readJournal(key)
}

// AwaitJournal waits until the journal named key has at least n entries of
// kind: the server's own evidence that it got that far.
func (h *H) AwaitJournal(key, kind string, n int) JournalEntries {
	ginkgo.GinkgoHelper()
	return h.AwaitJournalFunc(key, fmt.Sprintf("%d %q entries", n, kind), func(j JournalEntries) bool { return j.Count(kind) >= n })
}

// AwaitJournalFunc waits until cond holds for the journal named key; a
// timeout says what was awaited and shows the journal's tail.
func (h *H) AwaitJournalFunc(key, what string, cond func(JournalEntries) bool) JournalEntries {
	ginkgo.GinkgoHelper()
	var j JournalEntries
	h.EventuallySeen("journal "+key+": "+what, func() bool {
		j = h.Journal(key)
		return cond(j)
	}, func() string { return "journal " + key + ": " + journalTail(j, 8) })
	return j
}
