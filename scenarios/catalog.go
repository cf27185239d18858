// Package scenarios is the numbered scenario catalog of mcplife and the
// testscript vocabulary that runs it.
//
// Each scenario is a txtar file NNN-slug.txtar that checks one behaviour of
// an MCP-client implementation through the driver protocol (docs/DRIVER.md):
// it starts the implementation, opens sessions, calls tools, advances the
// virtual clock and awaits lifecycle events and fixture journal entries. The
// files are embedded (Catalog), so the harness binary carries them.
//
// The leading comment lines of a file are its header: the first line says
// in one sentence what it checks, the following paragraphs explain how, and
// a line starting "# Guards:" names the seed statement or field failure it
// guards. docs/TESTING.md lists the catalog and the command vocabulary
// (both generated from this package; a test fails when they are stale).
//
// Run them with `go test ./scenarios/` (every scenario against the reference
// runtime in process, and a selection through an external driver process),
// or with `harness run` against any implementation that speaks the driver
// protocol.
package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Catalog holds the scenario files.
//
//go:embed *.txtar
var Catalog embed.FS

// Scenario describes one file of the catalog.
type Scenario struct {
	// Number is the scenario's number, e.g. "071" or "072a".
	Number string
	// Name is the file name without ".txtar", e.g. "071-restart-success".
	Name string
	// Slug is the part of the name after the number.
	Slug string
	// File is the file name.
	File string
	// Description is the first header line: what the scenario checks.
	Description string
	// Prose is the rest of the header without the Guards line.
	Prose string
	// Guards names the seed statement or field failure the scenario guards.
	Guards string
	// Era is the protocol era the scenario exists for (EraLegacy or
	// EraModern), from its "# Era:" header directive; "" when it runs in
	// both eras.
	Era string
	// EraReason says why the scenario exists in one era only (the text of
	// the directive after the era).
	EraReason string
}

// The protocol eras a catalog run puts every fixture server in
// (RunOptions.Eras, Options.Era): the handshake era (2025-11-25 and older,
// initialize) and the stateless revision 2026-07-28 (no handshake;
// server/discover).
const (
	EraLegacy = "legacy"
	EraModern = "modern"
)

// Eras lists the protocol eras in the order a run of both takes them.
func Eras() []string { return []string{EraLegacy, EraModern} }

// AppliesTo tells whether the scenario runs in era: it declares no era, or
// declares that one.
func (sc Scenario) AppliesTo(era string) bool { return sc.Era == "" || sc.Era == era }

// NotApplicable is the reason a scenario that declares another era is not
// run in era: "not applicable in modern: <the directive's reason>".
func (sc Scenario) NotApplicable(era string) string {
	return fmt.Sprintf("not applicable in %s: %s", era, sc.EraReason)
}

var fileRE = regexp.MustCompile(`^([0-9]{3}[a-z]?)-([a-z0-9]+(?:-[a-z0-9]+)*)\.txtar$`)

// List returns the scenarios of the catalog sorted by number.
func List() ([]Scenario, error) {
	return ListFS(Catalog)
}

// ListFS returns the scenarios of the txtar files at the root of fsys.
func ListFS(fsys fs.FS) ([]Scenario, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []Scenario
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".txtar") {
			continue
		}
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		sc, err := Parse(e.Name(), data)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Parse reads the name and header of one scenario file.
func Parse(file string, data []byte) (Scenario, error) {
	m := fileRE.FindStringSubmatch(file)
	if m == nil {
		return Scenario{}, fmt.Errorf("%s: a scenario file is named NNN-slug.txtar (NNN three digits, optionally followed by a letter; slug lowercase words joined by -)", file)
	}
	sc := Scenario{Number: m[1], Slug: m[2], File: file, Name: strings.TrimSuffix(file, ".txtar")}
	var header []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		header = append(header, strings.TrimSpace(strings.TrimPrefix(line, "#")))
	}
	if len(header) == 0 || header[0] == "" {
		return sc, fmt.Errorf("%s: the script must start with a header: a first comment line saying what the scenario checks", file)
	}
	sc.Description = header[0]
	header, err := parseEra(&sc, header)
	if err != nil {
		return sc, err
	}
	var prose []string
	for i, line := range header[1:] {
		if g, ok := strings.CutPrefix(line, "Guards:"); ok {
			parts := []string{strings.TrimSpace(g)}
			// Continuation lines of the Guards paragraph.
			for _, more := range header[i+2:] {
				if more == "" {
					break
				}
				parts = append(parts, more)
			}
			sc.Guards = strings.Join(parts, " ")
			break
		}
		prose = append(prose, line)
	}
	sc.Prose = strings.TrimSpace(joinParagraphs(prose))
	if sc.Guards == "" {
		return sc, fmt.Errorf("%s: the header has no \"# Guards:\" line naming the seed statement or field failure the scenario guards", file)
	}
	if sc.Prose == "" {
		return sc, fmt.Errorf("%s: the header has no prose between the first line and the Guards line", file)
	}
	return sc, nil
}

// EraDirective starts the header line that restricts a scenario to one
// protocol era: "# Era: legacy. Why it exists in that era only." (or
// modern). Without it a scenario runs in both eras.
const EraDirective = "Era:"

// parseEra takes the "# Era:" directive out of a header, filling sc.Era
// and sc.EraReason, and returns the other lines.
func parseEra(sc *Scenario, header []string) ([]string, error) {
	var rest []string
	for i := 0; i < len(header); i++ {
		v, ok := strings.CutPrefix(header[i], EraDirective)
		if !ok || i == 0 {
			rest = append(rest, header[i])
			continue
		}
		if sc.Era != "" {
			return nil, fmt.Errorf("%s: more than one %q directive", sc.File, "# "+EraDirective)
		}
		era, reason, _ := strings.Cut(strings.TrimSpace(v), " ")
		era = strings.TrimSuffix(era, ".")
		if era != EraLegacy && era != EraModern {
			return nil, fmt.Errorf("%s: %q names era %q: want %s or %s (a scenario of both eras has no directive)", sc.File, "# "+EraDirective, era, EraLegacy, EraModern)
		}
		// The reason may go on over the next lines of its paragraph.
		parts := []string{strings.TrimSpace(reason)}
		for i+1 < len(header) && header[i+1] != "" && !strings.HasPrefix(header[i+1], "Guards:") {
			i++
			parts = append(parts, header[i])
		}
		sc.Era, sc.EraReason = era, strings.TrimSpace(strings.Join(parts, " "))
		if sc.EraReason == "" {
			return nil, fmt.Errorf("%s: the %q directive gives no reason: say why the scenario exists in the %s era only", sc.File, "# "+EraDirective, era)
		}
	}
	return rest, nil
}

// joinParagraphs joins wrapped lines, keeping blank lines as paragraph
// breaks.
func joinParagraphs(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		switch {
		case l == "":
			b.WriteString("\n\n")
		case b.Len() == 0 || strings.HasSuffix(b.String(), "\n"):
			b.WriteString(l)
		default:
			b.WriteString(" " + l)
		}
	}
	return b.String()
}

// Extract writes the catalog files whose names match match (nil matches
// every file) into dir and returns their paths, sorted.
func Extract(dir string, match func(Scenario) bool) ([]string, error) {
	list, err := List()
	if err != nil {
		return nil, err
	}
	var files []string
	for _, sc := range list {
		if match != nil && !match(sc) {
			continue
		}
		data, err := Catalog.ReadFile(sc.File)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, sc.File)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	return files, nil
}
