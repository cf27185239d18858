package config

import (
	"fmt"
	"strings"
)

// MaxNameLen is the longest server name accepted.
const MaxNameLen = 100

// ValidateName checks a server name: 1 to 100 characters from
// [a-zA-Z0-9_.-]. The error wraps ErrInvalidConfig and reads
// "Invalid server config: name: <problem>".
func ValidateName(name string) error {
	if p := nameProblem(name); p != "" {
		return invalidConfig("name", p)
	}
	return nil
}

func nameProblem(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > MaxNameLen:
		return fmt.Sprintf("must be at most %d characters, got %d", MaxNameLen, len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return fmt.Sprintf("%q: only letters, digits, '_', '.' and '-' are allowed, found %q", name, r)
		}
	}
	return ""
}

// invalidConfig builds the writer's validation error.
func invalidConfig(field, problem string) error {
	msg := ErrInvalidConfig.Error() + ": "
	if field != "" {
		msg += field + ": "
	}
	return &msgError{msg: msg + problem, err: ErrInvalidConfig}
}

// ValidateEntry checks one server entry the way discovery does, without
// expanding ${VAR} references. It returns nil when the entry loads without any
// diagnostic; otherwise an error wrapping ErrInvalidConfig that lists every
// problem, warnings included, as "Invalid server config: <field>: <problem>".
// The writer uses it for add and update.
func ValidateEntry(name string, entry []byte) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	data := blankJSONC(entry)
	if err := checkJSON(data); err != nil {
		return invalidConfig("", "entry is not valid JSON: "+err.Error())
	}
	p := &parser{data: data, src: Source{Level: LevelUser, Provider: "mcplife"}, env: noEnv, noExpand: true}
	p.parseEntry(name, 0, topValue(data))
	if len(p.diags) == 0 {
		return nil
	}
	var parts []string
	for _, d := range p.diags {
		if d.Field != "" {
			parts = append(parts, d.Field+": "+d.Message)
		} else {
			parts = append(parts, d.Message)
		}
	}
	return invalidConfig("", strings.Join(parts, "; "))
}

func noEnv(string) (string, bool) { return "", false }
