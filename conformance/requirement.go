package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/mcplife/mcplife/conformance/driver"
)

// Level is the strength of a requirement, as in RFC 2119.
type Level string

// The levels. A failing SHOULD requirement fails the run like a MUST; an
// implementation that deliberately departs from one records it in its
// baseline with the reason.
const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
)

// Source names the seed statement a requirement comes from.
type Source struct {
	// Doc is the document: "seed 000" ... "seed 004" (/work/shared/seeds),
	// "field failure N" (notes/field-failures.md) or "reference semantics"
	// (notes/reference-semantics.md).
	Doc string `json:"doc"`
	// Quote is the statement, quoted or closely paraphrased.
	Quote string `json:"quote"`
}

func (s Source) String() string { return s.Doc + ": " + s.Quote }

// Requirement is one conformance requirement: one spec of the suite.
type Requirement struct {
	// ID is stable: a requirement keeps its id forever; a retired one is
	// never reused. Form: <PROFILE>-<AREA>-<NNN>.
	ID string `json:"id"`
	// Level is MUST or SHOULD.
	Level Level `json:"level"`
	// Statement is one sentence containing the Level keyword.
	Statement string `json:"statement"`
	// Source is the seed statement the requirement comes from.
	Source Source `json:"source"`
	// Area groups related requirements (a ginkgo label).
	Area string `json:"area"`
	// Profile is the profile the requirement belongs to (a ginkgo label).
	Profile driver.Profile `json:"profile"`
	// Formerly, for a requirement of a profile a later protocol version
	// added (driver.ProfileSince), is the profile it belonged to before:
	// a driver of an earlier version is judged on it when it claims that
	// profile, as it was before the move, and the requirement keeps the id
	// that profile gave it. It is also a ginkgo label, so -profile with
	// the former profile still selects it.
	Formerly driver.Profile `json:"formerly,omitempty"`
	// Needs lists capabilities the requirement needs beyond those its
	// profile requires.
	Needs []driver.Capability `json:"needs,omitempty"`
	// Timing marks requirements about durations: checked exactly with the
	// virtual clock, within tolerance bands in real time.
	Timing bool `json:"timing,omitempty"`
	// Eras are the MCP protocol eras the requirement applies to: Legacy,
	// Modern or Both. A requirement of both eras runs once per era the
	// driver speaks, with the fixture servers set to that era; one that
	// only makes sense in one era (the initialize handshake, ping, protocol
	// sessions) is judged in that era only.
	Eras []driver.Era `json:"eras"`
	// ModernPending, for a requirement of both eras by meaning that is
	// judged in the legacy era only for now (Eras is Legacy), says what its
	// modern run still needs.
	ModernPending string `json:"modernPending,omitempty"`
}

// The era sets of requirements.
var (
	// Both is every era: the requirement holds whatever the protocol
	// generation.
	Both = []driver.Era{driver.EraLegacy, driver.EraModern}
	// Legacy is the handshake era only (initialize, ping, sessions).
	Legacy = []driver.Era{driver.EraLegacy}
	// Modern is the stateless era only (server/discover, no handshake).
	Modern = []driver.Era{driver.EraModern}
)

// Key names one requirement in one era in reports, verdicts and
// baselines: "CORE-CONNECT-001@modern".
func Key(id string, era driver.Era) string { return id + "@" + string(era) }

// SplitKey splits a key of the form "ID@era" or "ID"; era is "" for a bare
// id.
func SplitKey(key string) (id string, era driver.Era) {
	i, e, _ := strings.Cut(key, "@")
	return i, driver.Era(e)
}

// Has reports whether the requirement applies to era e.
func (r Requirement) Has(e driver.Era) bool { return slices.Contains(r.Eras, e) }

// EraString renders the requirement's eras for people: "both", "legacy"
// or "modern".
func (r Requirement) EraString() string {
	if len(r.Eras) == len(driver.Eras()) {
		return "both"
	}
	parts := make([]string, len(r.Eras))
	for i, e := range r.Eras {
		parts[i] = string(e)
	}
	return strings.Join(parts, ", ")
}

// Capabilities returns every capability the requirement needs: its
// profile's and its own.
func (r Requirement) Capabilities() []driver.Capability {
	var out []driver.Capability
	for _, p := range Profiles() {
		if p.Name == r.Profile {
			out = append(out, p.Requires...)
		}
	}
	for _, c := range r.Needs {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Labels returns the ginkgo labels of the requirement's spec in era e:
// profile, area, id and era.
func (r Requirement) Labels(e driver.Era) []string {
	if r.Formerly != "" {
		return []string{string(r.Profile), string(r.Formerly), r.Area, r.ID, string(e)}
	}
	return []string{string(r.Profile), r.Area, r.ID, string(e)}
}

// ClaimedAs returns the profile a driver that answered hello must claim
// for the requirement to apply: its profile, or, for a driver whose
// protocol version predates that profile, the one it formerly belonged to.
func (r Requirement) ClaimedAs(hello *driver.HelloResult) driver.Profile {
	if r.Formerly != "" && !hello.Knows(r.Profile) {
		return r.Formerly
	}
	return r.Profile
}

// In reports whether the requirement belongs to profile p, now or, for a
// driver of an earlier protocol version, formerly.
func (r Requirement) In(p driver.Profile) bool { return r.Profile == p || r.Formerly == p }

var (
	idPattern   = regexp.MustCompile(`^(CORE|GATE|SHARED|BOUNDED|REG|SEC|REMOTE|FIELD|CONV)-[A-Z]+-[0-9]{3}$`)
	areaPattern = regexp.MustCompile(`^[a-z][a-z-]*$`)
	prefixes    = map[driver.Profile]string{
		driver.ProfileCore:             "CORE",
		driver.ProfileStartupGate:      "GATE",
		driver.ProfileSharedRestart:    "SHARED",
		driver.ProfileBoundedReconnect: "BOUNDED",
		driver.ProfileRegistration:     "REG",
		driver.ProfileSecurity:         "SEC",
		driver.ProfileRemote:           "REMOTE",
		ProfileField:                   "FIELD",
		driver.ProfileConventions:      "CONV",
	}
)

// validate checks the requirement's own fields.
func (r Requirement) validate() error {
	idProfile := r.Profile
	if r.Formerly != "" {
		idProfile = r.Formerly
	}
	prefix, ok := prefixes[idProfile]
	switch {
	case r.Formerly != "" && driver.ProfileSince(r.Profile) == "":
		return fmt.Errorf("%s: Formerly is for a requirement of a profile a later protocol version added, not of %q", r.ID, r.Profile)
	case r.Formerly != "" && driver.ProfileSince(r.Formerly) != "":
		return fmt.Errorf("%s: it formerly belonged to %q, a profile of %s: a requirement moves out of a profile of the first version", r.ID, r.Formerly, driver.ProfileSince(r.Formerly))
	case !ok:
		return fmt.Errorf("%s: unknown profile %q", r.ID, r.Profile)
	case !idPattern.MatchString(r.ID) || !strings.HasPrefix(r.ID, prefix+"-"):
		return fmt.Errorf("%s: id must look like %s-AREA-NNN", r.ID, prefix)
	case r.Level != Must && r.Level != Should:
		return fmt.Errorf("%s: level must be MUST or SHOULD", r.ID)
	case !strings.Contains(r.Statement, string(r.Level)):
		return fmt.Errorf("%s: the statement must say %s", r.ID, r.Level)
	case !strings.HasSuffix(r.Statement, "."):
		return fmt.Errorf("%s: the statement must be one sentence ending with a period", r.ID)
	case r.Source.Doc == "" || r.Source.Quote == "":
		return fmt.Errorf("%s: the source needs a document and a quote", r.ID)
	case !areaPattern.MatchString(r.Area):
		return fmt.Errorf("%s: area %q must be lower-case words", r.ID, r.Area)
	case len(r.Eras) == 0:
		return fmt.Errorf("%s: the requirement must state its eras (Legacy, Modern or Both)", r.ID)
	}
	var eras []driver.Era
	for _, e := range driver.Eras() {
		if slices.Contains(r.Eras, e.Name) {
			eras = append(eras, e.Name)
		}
	}
	if !slices.Equal(eras, r.Eras) {
		return fmt.Errorf("%s: eras %v must be known eras, each once, in the order %v", r.ID, r.Eras, Both)
	}
	if r.ModernPending != "" && !slices.Equal(r.Eras, Legacy) {
		return fmt.Errorf("%s: ModernPending is for a requirement judged in the legacy era only", r.ID)
	}
	known := map[driver.Capability]bool{}
	for _, c := range driver.Capabilities() {
		known[c.Name] = true
	}
	for _, c := range r.Needs {
		if !known[c] {
			return fmt.Errorf("%s: unknown capability %q", r.ID, c)
		}
	}
	return nil
}

// declaration is one Spec call: a requirement and the body of its specs.
type declaration struct {
	r    Requirement
	body func(h *H)
}

// declarations holds every Spec call, in declaration order. Spec only
// records: validating the requirements and declaring their ginkgo specs
// wait until something needs them (catalogue, declareSpecs), because the
// harness binary is also the fixture server and every fixture process
// initialises this package without ever running a spec.
var declarations []declaration

// catalogue is the validated registry, built once from declarations.
var catalogue = sync.OnceValue(func() []Requirement {
	registry := make([]Requirement, 0, len(declarations))
	seen := map[string]bool{}
	for _, d := range declarations {
		if err := d.r.validate(); err != nil {
			panic("conformance: " + err.Error())
		}
		if seen[d.r.ID] {
			panic("conformance: duplicate requirement id " + d.r.ID)
		}
		seen[d.r.ID] = true
		registry = append(registry, d.r)
	}
	return registry
})

// Requirements returns every requirement of the suite, sorted by profile
// (in the protocol's order) and id.
func Requirements() []Requirement {
	order := map[driver.Profile]int{}
	for i, p := range Profiles() {
		order[p.Name] = i
	}
	out := slices.Clone(catalogue())
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Profile != out[j].Profile {
			return order[out[i].Profile] < order[out[j].Profile]
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Keys returns the key (id@era) of every requirement in every era it
// applies to, in Requirements order, eras in vocabulary order.
func Keys() []string {
	var out []string
	for _, r := range Requirements() {
		for _, e := range r.Eras {
			out = append(out, Key(r.ID, e))
		}
	}
	return out
}

// Lookup returns the requirement with id.
func Lookup(id string) (Requirement, bool) {
	for _, r := range catalogue() {
		if r.ID == id {
			return r, true
		}
	}
	return Requirement{}, false
}

// CatalogueJSON renders the golden catalogue (testdata/requirements.json).
func CatalogueJSON() []byte {
	type entry struct {
		Requirement
		Needs []driver.Capability `json:"needs"`
	}
	list := Requirements()
	out := make([]entry, len(list))
	for i, r := range list {
		out[i] = entry{Requirement: r, Needs: r.Capabilities()}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// extraNeeds returns, for profile p, each capability some of its
// requirements need beyond the profile's own, with the ids needing it, in
// first-use order.
func extraNeeds(p driver.Profile) (caps []driver.Capability, ids map[driver.Capability][]string) {
	ids = map[driver.Capability][]string{}
	for _, r := range Requirements() {
		if r.Profile != p {
			continue
		}
		for _, c := range r.Needs {
			if _, seen := ids[c]; !seen {
				caps = append(caps, c)
			}
			ids[c] = append(ids[c], r.ID)
		}
	}
	return caps, ids
}

// alsoNeeded renders the extra capabilities of profile p as a sentence
// (with a leading space), or "".
func alsoNeeded(p driver.Profile) string {
	caps, ids := extraNeeds(p)
	if len(caps) == 0 {
		return ""
	}
	parts := make([]string, len(caps))
	for i, c := range caps {
		parts[i] = fmt.Sprintf("`%s` (%s)", c, strings.Join(ids[c], ", "))
	}
	return " Some requirements also need " + strings.Join(parts, ", ") + "; without it they are not applicable."
}

// DocSectionPrerequisites names the generated section of docs/DRIVER.md that
// holds PrerequisitesMarkdown.
const DocSectionPrerequisites = "profile-prerequisites"

// PrerequisitesMarkdown renders, for docs/DRIVER.md, the capabilities each
// profile needs: those it requires and those only some of its requirements
// need.
func PrerequisitesMarkdown() string {
	var b strings.Builder
	b.WriteString("<!-- Rendered from the requirements in conformance/*.go; do not edit by hand. -->\n\n")
	b.WriteString("| Profile | Requires (claim rejected without) | Also needed by some requirements (not applicable without) |\n|---|---|---|\n")
	for _, p := range Profiles() {
		req := make([]string, len(p.Requires))
		for i, c := range p.Requires {
			req[i] = "`" + string(c) + "`"
		}
		caps, ids := extraNeeds(p.Name)
		also := "—"
		if len(caps) > 0 {
			parts := make([]string, len(caps))
			for i, c := range caps {
				parts[i] = fmt.Sprintf("`%s`: %s", c, strings.Join(ids[c], ", "))
			}
			also = strings.Join(parts, "; ")
		}
		requires := strings.Join(req, ", ")
		if requires == "" {
			requires = "none"
		}
		if p.Name == ProfileField {
			requires = "never claimed: every driver is judged on it"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p.Name, requires, also)
	}
	return b.String()
}

// CatalogueMarkdown renders the requirements section of docs/CONFORMANCE.md.
func CatalogueMarkdown() string {
	var b strings.Builder
	list := Requirements()
	counts := map[driver.Profile]int{}
	for _, r := range list {
		counts[r.Profile]++
	}
	fmt.Fprintf(&b, "<!-- Rendered from the requirements in conformance/*.go; do not edit by hand. -->\n\n")
	eraCounts := map[string]int{}
	for _, r := range list {
		eraCounts[r.EraString()]++
	}
	fmt.Fprintf(&b, "%d requirements (%d of both eras, %d of the legacy era only, %d of the modern era only):",
		len(list), eraCounts["both"], eraCounts[string(driver.EraLegacy)], eraCounts[string(driver.EraModern)])
	for i, p := range Profiles() {
		sep := ","
		if i == len(Profiles())-1 {
			sep = "."
		}
		fmt.Fprintf(&b, " %s %d%s", p.Name, counts[p.Name], sep)
	}
	b.WriteString("\n")
	for _, p := range Profiles() {
		fmt.Fprintf(&b, "\n### Profile `%s`\n\n", p.Name)
		caps := make([]string, len(p.Requires))
		for i, c := range p.Requires {
			caps[i] = "`" + string(c) + "`"
		}
		if p.Name == ProfileField {
			fmt.Fprintf(&b, "Never claimed: every driver is judged on it, with no capability beyond tools.list, tool.call and shutdown, whatever clock the run uses. Covers what a user sees when servers crash, hang, exit or misbehave, from outside and on the real clock (call outcomes and latency, journals, processes); each verdict records what was measured.\n\n")
		} else {
			requires := "Requires " + strings.Join(caps, ", ") + "."
			if len(caps) == 0 {
				requires = "Requires no capability."
			}
			if since := driver.ProfileSince(p.Name); since != "" {
				requires = fmt.Sprintf("%s A driver of a version before %s is judged on each of its requirements under the profile it belonged to before (after its id), as before the move.", requires, since)
			}
			fmt.Fprintf(&b, "%s%s Covers %s.\n\n", requires, alsoNeeded(p.Name), p.Covers)
		}
		b.WriteString("| ID | Level | Eras | Requirement | Area | Source |\n|---|---|---|---|---|---|\n")
		for _, r := range list {
			if r.Profile != p.Name {
				continue
			}
			stmt := r.Statement
			if r.Timing {
				stmt += " *(timing)*"
			}
			if len(r.Needs) > 0 {
				needs := make([]string, len(r.Needs))
				for i, c := range r.Needs {
					needs[i] = "`" + string(c) + "`"
				}
				stmt += " Needs " + strings.Join(needs, ", ") + "."
			}
			era := r.EraString()
			if r.ModernPending != "" {
				era += " ([modern pending](#modern-era-pending))"
			}
			id := "`" + r.ID + "`"
			if r.Formerly != "" {
				id += " (formerly `" + string(r.Formerly) + "`)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s: %s |\n", id, r.Level, era, cell(stmt), r.Area, r.Source.Doc, cell(r.Source.Quote))
		}
	}
	var pending []Requirement
	for _, r := range list {
		if r.ModernPending != "" {
			pending = append(pending, r)
		}
	}
	if len(pending) > 0 {
		fmt.Fprintf(&b, "\n### Modern era pending\n\n%d requirements hold in both eras by meaning but are judged in the legacy era only for now; each says what its modern run still needs.\n\n| ID | What the modern run needs |\n|---|---|\n", len(pending))
		for _, r := range pending {
			fmt.Fprintf(&b, "| `%s` | %s |\n", r.ID, cell(r.ModernPending))
		}
	}
	return b.String()
}

// cell escapes s for a Markdown table cell: pipes, and angle brackets,
// which renderers would take for HTML tags (mcp_<server>_<tool>).
func cell(s string) string {
	s = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "\n", " ").Replace(s)
	return s
}
