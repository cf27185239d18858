package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// TimeoutEnvVar names the environment variable that overrides every server's
// connect timeout, in milliseconds; 0 disables the timeout.
const TimeoutEnvVar = "MCPLIFE_MCP_TIMEOUT_MS"

// Options says where Discover looks.
type Options struct {
	// ProjectDir is the workspace root; "" means no project-level sources.
	ProjectDir string
	// HomeDir is the user's home; "" means os.UserHomeDir().
	HomeDir string
	// Env looks up environment variables for ${VAR} expansion and the timeout
	// override; nil means os.LookupEnv.
	Env func(string) (string, bool)
	// SkipProjectConfig drops every project-level definition; they are listed
	// in Result.Dropped and do not shadow user-level ones.
	SkipProjectConfig bool
	// Files are extra files named by the embedding host. They rank above every
	// discovered file, in the order given.
	Files []File
	// Inline servers, by name, rank above everything (Level inline).
	Inline map[string]json.RawMessage
	// OnlyFiles reads Inline and Files only: no project or user file is
	// discovered (a tool checking the files it was given uses it).
	OnlyFiles bool
}

// File is a config file given explicitly by the embedding host.
type File struct {
	Path     string // relative paths are relative to the working directory
	Level    Level  // LevelProject or LevelUser
	Provider string // "" means "mcplife"
}

// Shadowed records a lower-priority definition of a name that lost to an
// earlier one. Definitions are never merged.
type Shadowed struct {
	Name     string
	Winner   Source
	Shadowed Source
}

// Result is what Discover found.
type Result struct {
	// Servers are the winning enabled definitions, sorted by name.
	Servers []*Server
	// Disabled are the winning definitions with "enabled": false, sorted by
	// name. They are never connected.
	Disabled []*Server
	// Dropped are the valid project-level definitions ignored because of
	// Options.SkipProjectConfig, in priority order.
	Dropped []*Server
	// Shadowed lists every losing definition, sorted by name, then priority.
	Shadowed []Shadowed
	// Diagnostics are in source priority order, then file order.
	Diagnostics []Diagnostic
}

// Discover loads every source in the priority order given in the package
// documentation (inline, Options.Files, then .mcplife, Claude, Cursor, VS Code
// and root mcp.json files, project before user within each agent), validates
// each server, and splits the winners into enabled and disabled ones.
//
// It returns an error only for unusable Options (an explicit file without a
// path or with a level other than project or user); every problem with the
// files themselves is a Diagnostic, and the other sources still load.
func Discover(opts Options) (*Result, error) {
	env := opts.Env
	if env == nil {
		env = os.LookupEnv
	}
	res := &Result{}
	srcs, err := sources(opts, res)
	if err != nil {
		return nil, err
	}

	var entries []entry
	names := make([]string, 0, len(opts.Inline))
	for name := range opts.Inline {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s, diags := parseInline(name, opts.Inline[name], env)
		res.Diagnostics = append(res.Diagnostics, diags...)
		entries = append(entries, entry{name: name, src: Source{Level: LevelInline, Provider: "inline"}, server: s})
	}

	for _, src := range srcs {
		data, err := ReadFile(src.path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				continue // an absent file is not a problem
			}
			if src.level == LevelProject && opts.SkipProjectConfig {
				continue
			}
			res.Diagnostics = append(res.Diagnostics, Diagnostic{
				Severity: SeverityError, File: src.path, Err: err,
				Message: fmt.Sprintf("cannot read config file: %v", err),
			})
			continue
		}
		es, diags := parseDoc(src.path, data, src.level, src.provider, env, src.first)
		if src.level == LevelProject && opts.SkipProjectConfig {
			for _, e := range es {
				if e.server != nil {
					res.Dropped = append(res.Dropped, e.server)
				}
			}
			continue
		}
		res.Diagnostics = append(res.Diagnostics, diags...)
		entries = append(entries, es...)
	}

	override, hasOverride := timeoutOverride(env, res)
	winners := map[string]entry{}
	for _, e := range entries {
		if e.server != nil && hasOverride {
			e.server.Timeout = override
		}
		if w, ok := winners[e.name]; ok {
			res.Shadowed = append(res.Shadowed, Shadowed{Name: e.name, Winner: w.src, Shadowed: e.src})
			continue
		}
		winners[e.name] = e
	}
	for _, w := range winners {
		switch {
		case w.server == nil: // invalid: reported, and it still hides lower definitions
		case w.server.Enabled:
			res.Servers = append(res.Servers, w.server)
		default:
			res.Disabled = append(res.Disabled, w.server)
		}
	}
	byName := func(list []*Server) {
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	}
	byName(res.Servers)
	byName(res.Disabled)
	sort.SliceStable(res.Shadowed, func(i, j int) bool { return res.Shadowed[i].Name < res.Shadowed[j].Name })
	return res, nil
}

// parseInline parses one inline server.
func parseInline(name string, raw json.RawMessage, env func(string) (string, bool)) (*Server, []Diagnostic) {
	p := &parser{data: blankJSONC(raw), src: Source{Level: LevelInline, Provider: "inline"}, env: env}
	if err := checkJSON(p.data); err != nil {
		p.add(SeverityError, name, "", -1, fmt.Errorf("%w: %w", ErrMalformedJSON, err), "malformed JSON: %v", err)
		return nil, p.diags
	}
	s := p.parseEntry(name, -1, topValue(p.data))
	return s, p.diags
}

// timeoutOverride reads TimeoutEnvVar; a bad value is a warning and ignored.
func timeoutOverride(env func(string) (string, bool), res *Result) (time.Duration, bool) {
	v, ok := env(TimeoutEnvVar)
	if !ok || v == "" {
		return 0, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > int64(maxMillis) {
		res.Diagnostics = append(res.Diagnostics, Diagnostic{
			Severity: SeverityWarning, Field: TimeoutEnvVar, Err: ErrInvalidConfig,
			Message: fmt.Sprintf("must be a whole number of milliseconds >= 0, got %q; ignored", v),
		})
		return 0, false
	}
	if ms == 0 {
		return NoTimeout, true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// source is one file to read.
type source struct {
	path     string
	level    Level
	provider string
	first    [][]string // extra server sections that precede mcpServers/servers
}

// sources lists the files to read, in priority order, each path once. When
// the project directory is the home directory, a file that is both a project
// and a user source keeps its first position and counts as user-level: it is
// the user's own file.
func sources(opts Options, res *Result) ([]source, error) {
	var list []source
	for i, f := range opts.Files {
		if f.Path == "" {
			return nil, fmt.Errorf("config: Options.Files[%d]: empty path", i)
		}
		if f.Level != LevelProject && f.Level != LevelUser {
			return nil, fmt.Errorf("config: Options.Files[%d] (%s): level must be %q or %q, got %q", i, f.Path, LevelProject, LevelUser, f.Level)
		}
		abs, err := filepath.Abs(f.Path)
		if err != nil {
			return nil, fmt.Errorf("config: Options.Files[%d]: %w", i, err)
		}
		prov := f.Provider
		if prov == "" {
			prov = "mcplife"
		}
		list = append(list, source{path: abs, level: f.Level, provider: prov})
	}

	project := ""
	if opts.ProjectDir != "" && !opts.OnlyFiles {
		abs, err := filepath.Abs(opts.ProjectDir)
		if err != nil {
			return nil, fmt.Errorf("config: project dir: %w", err)
		}
		project = abs
	}
	home := opts.HomeDir
	if opts.OnlyFiles {
		home = ""
	} else if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			res.Diagnostics = append(res.Diagnostics, Diagnostic{
				Severity: SeverityWarning, Err: err,
				Message: fmt.Sprintf("user-level config skipped: %v", err),
			})
		}
		home = h
	}
	if home != "" {
		if abs, err := filepath.Abs(home); err == nil {
			home = abs
		}
	}

	proj := func(rel, provider string) {
		if project != "" {
			list = append(list, source{path: filepath.Join(project, rel), level: LevelProject, provider: provider})
		}
	}
	user := func(rel, provider string, first [][]string) {
		if home != "" {
			list = append(list, source{path: filepath.Join(home, rel), level: LevelUser, provider: provider, first: first})
		}
	}
	var claudeLocal [][]string
	if project != "" {
		claudeLocal = append(claudeLocal, []string{"projects", project, "mcpServers"})
		if real, err := filepath.EvalSymlinks(project); err == nil && real != project {
			claudeLocal = append(claudeLocal, []string{"projects", real, "mcpServers"})
		}
	}
	proj(filepath.Join(".mcplife", "mcp.json"), "mcplife")
	user(filepath.Join(".mcplife", "mcp.json"), "mcplife", nil)
	proj(".mcp.json", "claude")
	user(".claude.json", "claude", claudeLocal)
	proj(filepath.Join(".cursor", "mcp.json"), "cursor")
	user(filepath.Join(".cursor", "mcp.json"), "cursor", nil)
	proj(filepath.Join(".vscode", "mcp.json"), "vscode")
	proj("mcp.json", "mcp.json")

	seen := map[string]int{}
	var out []source
	for _, s := range list {
		if i, ok := seen[s.path]; ok {
			if s.level == LevelUser {
				out[i].level = LevelUser
				out[i].first = append(out[i].first, s.first...)
			}
			continue
		}
		seen[s.path] = len(out)
		out = append(out, s)
	}
	return out, nil
}
