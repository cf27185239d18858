package config

import "testing"

// TestDiagnosticError checks the "file:line:col: server "x": field: message"
// layout, with the unknown parts left out (Line 0 means the position is
// unknown).
func TestDiagnosticError(t *testing.T) {
	tests := []struct {
		name string
		d    Diagnostic
		want string
	}{
		{"everything", Diagnostic{File: "/p/.mcp.json", Line: 3, Column: 5, Server: "s", Field: "args[1]", Message: "must be a string"},
			`/p/.mcp.json:3:5: server "s": args[1]: must be a string`},
		{"first column", Diagnostic{File: "/f.json", Line: 1, Column: 1, Message: "top-level value must be an object"},
			"/f.json:1:1: top-level value must be an object"},
		{"file without a position", Diagnostic{File: "/f.json", Message: "cannot read config file"},
			"/f.json: cannot read config file"},
		{"file without a position, with server", Diagnostic{File: "/f.json", Server: "s", Field: "headers.X", Message: "value dropped"},
			`/f.json: server "s": headers.X: value dropped`},
		{"inline", Diagnostic{Server: "s", Field: "url", Message: "required for http servers"},
			`server "s": url: required for http servers`},
		{"no file, no server", Diagnostic{Field: TimeoutEnvVar, Message: "ignored"},
			TimeoutEnvVar + ": ignored"},
		{"message only", Diagnostic{Message: "user-level config skipped"},
			"user-level config skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}
