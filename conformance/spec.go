package conformance

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/onsi/ginkgo/v2"
)

// specTimeout bounds one spec in real time; nothing waits on it unless an
// implementation hangs in a way the per-wait timeouts do not catch.
const specTimeout = 3 * time.Minute

// Spec declares the requirement r and its specs: one ginkgo It per era of
// the requirement, labelled with the requirement's profile, area and id and
// the era, whose body runs against a fresh driver with the fixture servers
// set to that era. Declaring both from one value is what keeps the
// catalogue and the specs from drifting apart. Spec only records the
// declaration; a bad or duplicate requirement panics the first time the
// catalogue is read (every test of this package reads it), and the ginkgo
// specs are declared by Run.
func Spec(r Requirement, body func(h *H)) bool {
	declarations = append(declarations, declaration{r: r, body: body})
	return true
}

// declareSpecs declares the ginkgo specs of every requirement, once per
// process (ginkgo allows one run per process).
var declareSpecs = sync.OnceFunc(func() {
	catalogue() // validates every requirement first
	for _, d := range declarations {
		declareRequirement(d.r, d.body)
	}
})

// declareRequirement declares the specs of r, one per era.
func declareRequirement(r Requirement, body func(h *H)) {
	for _, era := range r.Eras {
		ginkgo.It(Key(r.ID, era)+": "+r.Statement, ginkgo.Label(r.Labels(era)...), ginkgo.SpecTimeout(specTimeout),
			func(ctx ginkgo.SpecContext) {
				if suite == nil {
					ginkgo.Fail("the conformance suite must be started with conformance.Run")
				}
				if why := suite.notApplicable(r, era); why != "" {
					ginkgo.Skip(why)
				}
				suite.applied++
				ginkgo.AddReportEntry("requirement", ginkgo.ReportEntryVisibilityNever,
					fmt.Sprintf("%s %s: %s (source: %s)", r.ID, r.Level, r.Statement, r.Source))
				ginkgo.AddReportEntry("era", ginkgo.ReportEntryVisibilityNever, string(era))
				ginkgo.AddReportEntry("clock", ginkgo.ReportEntryVisibilityNever, suite.modeString())
				h := newH(ctx, r, era, suite)
				ginkgo.DeferCleanup(h.teardown)
				body(h)
				h.endChecks()
			})
	}
}

// Source of an observation: where the evidence was seen.
type Evidence string

// The sources of evidence, strongest first. The fixture journal is what the
// server itself saw; process state and files are what the OS says; events
// and responses are what the implementation says about itself.
const (
	Journal  Evidence = "journal"
	Process  Evidence = "process"
	Files    Evidence = "files"
	Events   Evidence = "events"
	Response Evidence = "response"
)

// observation is one proven check.
type observation struct {
	src   Evidence
	claim string
	seen  string
}

func (o observation) String() string {
	if o.seen == "" {
		return fmt.Sprintf("[%s] %s", o.src, o.claim)
	}
	return fmt.Sprintf("[%s] %s (%s)", o.src, o.claim, o.seen)
}

// Claim is a check a spec declares before it can prove it. A claim starts
// failed: the spec fails unless it is verified before the spec ends.
type Claim struct {
	h     *H
	src   Evidence
	text  string
	proof *observation
}

// Claim declares a check that must be proven before the spec ends.
func (h *H) Claim(src Evidence, text string) *Claim {
	c := &Claim{h: h, src: src, text: text}
	h.claims = append(h.claims, c)
	return c
}

// Verify proves the claim when ok, and fails the spec otherwise.
func (c *Claim) Verify(ok bool, format string, args ...any) {
	ginkgo.GinkgoHelper()
	seen := fmt.Sprintf(format, args...)
	if !ok {
		c.h.fail("[%s] expected: %s\n  observed: %s", c.src, c.text, seen)
	}
	o := observation{src: c.src, claim: c.text, seen: seen}
	c.proof = &o
	c.h.observed = append(c.h.observed, o)
}

// Check is Verify for a check the rest of the spec does not depend on: a
// failed check is recorded and the spec goes on, failing at its end (or at
// its next failure) with every failed check listed, so a baseline can pin
// all of them (FailedChecks).
func (h *H) Check(src Evidence, ok bool, claim string, format string, args ...any) {
	seen := fmt.Sprintf(format, args...)
	if !ok {
		h.failedChecks = append(h.failedChecks, fmt.Sprintf("[%s] expected: %s\n  observed: %s", src, claim, seen))
		return
	}
	h.observed = append(h.observed, observation{src: src, claim: claim, seen: seen})
}

// endChecks fails the spec when a Check failed.
func (h *H) endChecks() {
	ginkgo.GinkgoHelper()
	if len(h.failedChecks) > 0 {
		h.fail("%d checks failed", len(h.failedChecks))
	}
}

// Verify checks one claim at once: when ok it records the observation as
// evidence, otherwise it fails the spec saying what was seen instead.
func (h *H) Verify(src Evidence, ok bool, claim string, format string, args ...any) {
	ginkgo.GinkgoHelper()
	h.Claim(src, claim).Verify(ok, format, args...)
}

// evidenceProblems reports a spec that left claims unproven or proved
// nothing from the journal, the OS or the events.
func (h *H) evidenceProblems() []string {
	var problems, unproven []string
	for _, c := range h.claims {
		if c.proof == nil {
			unproven = append(unproven, c.text)
		}
	}
	if len(unproven) > 0 {
		problems = append(problems, "unproven claims: "+strings.Join(unproven, "; "))
	}
	strong := 0
	for _, o := range h.observed {
		if o.src != Response {
			strong++
		}
	}
	if strong == 0 {
		problems = append(problems, "the spec observed no evidence in the fixture journal, the processes, the files or the events")
	}
	return problems
}

// pick names an observed state for evidence: which when cond, else other.
func pick(cond bool, which, other string) string {
	if cond {
		return which
	}
	return other
}

// tailOf returns the last n bytes of s, for a failure message that quotes
// what may be long (a stderr tail, an error that embeds one).
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// brokenRuneAt returns the byte offset of the first invalid UTF-8 sequence
// or U+FFFD (what a decoder makes of one) in s, or -1 when s has neither.
func brokenRuneAt(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			return i
		}
	}
	return -1
}

// around returns about n bytes of s on each side of offset i, quoted, cut
// where a character begins.
func around(s string, i, n int) string {
	lo, hi := max(0, i-n), min(len(s), i+n)
	for lo > 0 && !utf8.RuneStart(s[lo]) {
		lo--
	}
	for hi < len(s) && !utf8.RuneStart(s[hi]) {
		hi++
	}
	return fmt.Sprintf("%q", s[lo:hi])
}
