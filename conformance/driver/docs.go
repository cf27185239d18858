package driver

import (
	"bytes"
	"fmt"
	"strings"
)

// The generated sections of docs/DRIVER.md.
const (
	// DocSectionVocabulary holds the tables of methods, capabilities,
	// profiles and codes (VocabularySection).
	DocSectionVocabulary = "driver-vocabulary"
	// DocSectionSchemas holds every JSON Schema (SchemaSection).
	DocSectionSchemas = "driver-schemas"
)

// VocabularySection renders the closed vocabularies of the protocol (methods,
// capabilities, profiles, eras, error and outcome codes) as
// Markdown tables, for the generated section of docs/DRIVER.md.
func VocabularySection() string {
	var b strings.Builder
	b.WriteString("<!-- Rendered from conformance/driver/protocol.go; do not edit by hand. -->\n")
	b.WriteString("\n### Methods\n\n| Method | Needs capability | Summary |\n|---|---|---|\n")
	for _, m := range Methods() {
		c := "—"
		if m.Capability != "" {
			c = "`" + string(m.Capability) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", m.Name, c, cell(m.Summary))
	}
	b.WriteString("\n### Capabilities\n\n| Capability | The driver promises |\n|---|---|\n")
	for _, c := range Capabilities() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", c.Name, cell(c.Promises))
	}
	b.WriteString("\n### Profiles\n\n| Profile | Requires capabilities | Covers |\n|---|---|---|\n")
	for _, p := range Profiles() {
		caps := make([]string, len(p.Requires))
		for i, c := range p.Requires {
			caps[i] = "`" + string(c) + "`"
		}
		requires := strings.Join(caps, ", ")
		if requires == "" {
			requires = "none"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p.Name, requires, cell(p.Covers))
	}
	b.WriteString("\n### Eras\n\n| Era | MCP protocol versions | Meaning |\n|---|---|---|\n")
	for _, e := range Eras() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", e.Name, e.Versions, cell(e.Meaning))
	}
	b.WriteString("\n### Error codes of responses\n\n| Code | Meaning |\n|---|---|\n")
	for _, c := range ErrorCodes() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", c.Code, cell(c.Meaning))
	}
	b.WriteString("\n### Outcome codes of `call_result` and `acquire_result`\n\n| Code | Meaning |\n|---|---|\n")
	for _, c := range OutcomeCodes() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", c.Code, cell(c.Meaning))
	}
	return b.String()
}

// cell escapes text for a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// SchemaSection renders every schema as Markdown, in SchemaNames order, for
// the generated section of docs/DRIVER.md.
func SchemaSection() (string, error) {
	var b strings.Builder
	b.WriteString("<!-- Rendered from conformance/driver/schema/*.json; do not edit by hand. -->\n")
	lines := map[string]bool{SchemaRequest: true, SchemaResponse: true, SchemaError: true, SchemaEvent: true, SchemaCallResult: true, SchemaAcquireResult: true}
	heading := ""
	for _, name := range SchemaNames() {
		h := "### Lines"
		if !lines[name] {
			h = "### Method `" + strings.TrimSuffix(strings.TrimSuffix(name, ".params"), ".result") + "`"
		}
		if h != heading {
			heading = h
			fmt.Fprintf(&b, "\n%s\n", h)
		}
		data, err := Schema(name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\n#### `%s.json`\n\n```json\n%s\n```\n", name, bytes.TrimSpace(data))
	}
	return b.String(), nil
}
