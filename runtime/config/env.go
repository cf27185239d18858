package config

import (
	"os"
	"slices"
	"sort"
)

// envAllowlist holds the variables a stdio child inherits from our process:
// what programs need to find executables, locate home and temp directories,
// print text in the right locale and reach TLS endpoints. Nothing that
// usually holds a secret (API keys, tokens, proxy URLs with credentials) is on
// it; a server that needs such a value names it in its own env block.
var envAllowlist = []string{
	// POSIX
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM",
	"TMPDIR", "TMP", "TEMP", "TZ",
	"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_NUMERIC", "LC_TIME", "LC_COLLATE",
	"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
	// Windows (harmless elsewhere)
	"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT",
	"APPDATA", "LOCALAPPDATA", "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "USERNAME",
	"PROGRAMFILES", "PROGRAMDATA", "PROCESSOR_ARCHITECTURE",
}

// EnvAllowlist returns, sorted, the names of the environment variables a
// stdio server inherits from the runtime's environment:
//
//	APPDATA COLORTERM COMSPEC HOME HOMEDRIVE HOMEPATH LANG LANGUAGE LC_ALL
//	LC_COLLATE LC_CTYPE LC_MESSAGES LC_NUMERIC LC_TIME LOCALAPPDATA LOGNAME
//	NODE_EXTRA_CA_CERTS PATH PATHEXT PROCESSOR_ARCHITECTURE PROGRAMDATA
//	PROGRAMFILES SHELL SSL_CERT_DIR SSL_CERT_FILE SYSTEMDRIVE SYSTEMROOT TEMP
//	TERM TMP TMPDIR TZ USER USERNAME USERPROFILE WINDIR XDG_CACHE_HOME
//	XDG_CONFIG_HOME XDG_DATA_HOME XDG_RUNTIME_DIR XDG_STATE_HOME
//
// Everything else, API keys in particular, stays out unless the server's own
// env block passes it (for example "env": {"GITHUB_TOKEN": "GITHUB_TOKEN"},
// which the Resolver looks up by name).
func EnvAllowlist() []string {
	l := slices.Clone(envAllowlist)
	sort.Strings(l)
	return l
}

// ChildEnv builds a stdio child's environment: the allowlisted variables found
// through lookup (nil means os.LookupEnv), overlaid with own, the server's
// resolved env block, which wins. The result is KEY=VALUE pairs sorted by key.
func ChildEnv(lookup func(string) (string, bool), own map[string]string) []string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	merged := make(map[string]string, len(envAllowlist)+len(own))
	for _, k := range envAllowlist {
		if v, ok := lookup(k); ok {
			merged[k] = v
		}
	}
	for k, v := range own {
		merged[k] = v
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + merged[k]
	}
	return out
}
