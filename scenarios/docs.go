package scenarios

import (
	"fmt"
	"strings"
)

// RenderCommands renders the scenario-commands section of docs/TESTING.md
// from the command and condition registry.
func RenderCommands() string {
	var b strings.Builder
	b.WriteString("<!-- Rendered from scenarios/registry.go; do not edit by hand. -->\n")
	cmds := Commands()
	for _, g := range GroupOrder {
		fmt.Fprintf(&b, "\n**%s**\n\n", g)
		for _, c := range cmds {
			if c.Group != g {
				continue
			}
			fmt.Fprintf(&b, "- `%s`", c.Usage)
			var tags []string
			if c.Check {
				tags = append(tags, "check")
			}
			for _, n := range c.Needs {
				tags = append(tags, "needs `"+string(n)+"`")
			}
			if len(tags) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(tags, "; "))
			}
			fmt.Fprintf(&b, "\n  %s\n", c.Description)
		}
	}
	b.WriteString("\n**Conditions**\n\n")
	for _, c := range Conditions() {
		fmt.Fprintf(&b, "- `%s` %s\n", c.Usage, c.Description)
	}
	return b.String()
}

// RenderCatalog renders the scenario-catalog section of docs/TESTING.md
// from the headers of the scenario files.
func RenderCatalog() (string, error) {
	list, err := List()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("<!-- Rendered from the headers of scenarios/*.txtar; do not edit by hand. -->\n")
	b.WriteString("| # | Scenario | What it checks | Guards | Era |\n|---|---|---|---|---|\n")
	perEra := map[string]int{}
	for _, sc := range list {
		era := "both"
		if sc.Era != "" {
			era = sc.Era + " only"
		}
		perEra[sc.Era]++
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", sc.Number, sc.Slug, cell(sc.Description), cell(sc.Guards), era)
	}
	fmt.Fprintf(&b, "\n%d scenarios: %d in both eras, %d in the legacy era only, %d in the modern era only.\n",
		len(list), perEra[""], perEra[EraLegacy], perEra[EraModern])
	return b.String(), nil
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
