package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

func TestToolName(t *testing.T) {
	tests := []struct {
		name, server, tool, want string
	}{
		{"plain", "github", "search", "mcp_github_search"},
		{"lowercase", "GitHub", "SearchIssues", "mcp_github_searchissues"},
		{"hyphen and dot", "my-server", "get.file", "mcp_my_server_get_file"},
		{"run of invalid chars is one underscore", "a--..b", "x  !! y", "mcp_a_b_x_y"},
		{"repeated underscores collapse", "a___b", "c__d", "mcp_a_b_c_d"},
		{"mixed run of underscore and invalid", "a_-_b", "t", "mcp_a_b_t"},
		{"trim leading and trailing", "__srv__", "--tool--", "mcp_srv_tool"},
		{"digits kept", "s3", "v2_list", "mcp_s3_v2_list"},
		{"empty server falls back", "", "tool", "mcp_server_tool"},
		{"empty tool falls back", "srv", "", "mcp_srv_tool"},
		{"both empty", "", "", "mcp_server_tool"},
		{"only invalid chars fall back", "!!!", "...", "mcp_server_tool"},
		{"unicode becomes underscore", "café", "naïve-tool", "mcp_caf_na_ve_tool"},
		{"all unicode falls back", "日本", "ツール", "mcp_server_tool"},
		{"unicode upper lowercased then replaced", "ÉCOLE", "X", "mcp_cole_x"},
		{"prefix stripped", "github", "github_search", "mcp_github_search"},
		{"prefix stripped once only", "github", "github_github_search", "mcp_github_github_search"},
		{"prefix stripped after sanitizing", "My-Server", "my_server.read", "mcp_my_server_read"},
		{"prefix compared sanitized", "git.hub", "GIT_HUB-list", "mcp_git_hub_list"},
		{"prefix kept when nothing remains", "github", "github_", "mcp_github_github"},
		{"prefix kept when equal", "github", "github", "mcp_github_github"},
		{"prefix needs underscore boundary", "git", "github_search", "mcp_git_github_search"},
		{"fallback server prefix", "", "server_x", "mcp_server_x"},
		{"exactly 64 not capped", "s", strings.Repeat("t", 64-len("mcp_s_")), "mcp_s_" + strings.Repeat("t", 58)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ToolName(tc.server, tc.tool); got != tc.want {
				t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
			}
		})
	}
}

func TestToolNameCap(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9_]{1,64}$`)
	hash8 := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])[:8]
	}
	tests := []struct {
		name, server, tool string
	}{
		{"long tool", "srv", strings.Repeat("x", 100)},
		{"long server", strings.Repeat("s", 100), "t"},
		{"one over", "s", strings.Repeat("t", 59)},
		{"long unicode", strings.Repeat("é", 50), strings.Repeat("ab-", 40)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			full := "mcp_" + sanitizePart(tc.server, "server") + "_" + sanitizePart(tc.tool, "tool")
			got := ToolName(tc.server, tc.tool)
			if len(full) <= 64 {
				if got != full {
					t.Fatalf("got %q, want uncapped %q", got, full)
				}
				return
			}
			if len(got) != 64 {
				t.Fatalf("len = %d, want 64 (%q)", len(got), got)
			}
			want := full[:55] + "_" + hash8(full)
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
			if !valid.MatchString(got) {
				t.Errorf("%q has characters outside [a-z0-9_]", got)
			}
			if again := ToolName(tc.server, tc.tool); again != got {
				t.Errorf("not stable: %q then %q", got, again)
			}
		})
	}

	// Long names sharing their first 55 characters stay distinct.
	a := ToolName("srv", strings.Repeat("x", 70)+"_alpha")
	b := ToolName("srv", strings.Repeat("x", 70)+"_beta")
	if a == b {
		t.Errorf("capped names collide: %q", a)
	}
	if a[:55] != b[:55] {
		t.Errorf("prefixes differ: %q %q", a, b)
	}

	// A known value pins the hash input (the full uncapped name).
	full := "mcp_srv_" + strings.Repeat("x", 60)
	if got, want := ToolName("srv", strings.Repeat("x", 60)), full[:55]+"_"+hash8(full); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestToolNameAlwaysValid(t *testing.T) {
	valid := regexp.MustCompile(`^mcp_[a-z0-9]+(_[a-z0-9]+)*_[a-z0-9]+(_[a-z0-9]+)*$`)
	inputs := []string{"", "_", "a", "A-B", "ü", "x\x00y", "\xff\xfe", "a b\tc\nd", "😀tool😀", strings.Repeat("_", 10)}
	for _, s := range inputs {
		for _, tl := range inputs {
			got := ToolName(s, tl)
			if len(got) > 64 {
				t.Errorf("ToolName(%q,%q) too long: %q", s, tl, got)
			}
			if !valid.MatchString(got) {
				t.Errorf("ToolName(%q,%q) = %q: not a clean name", s, tl, got)
			}
		}
	}
}
