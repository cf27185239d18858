package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Root is one root the host advertises to a server (roots/list): a file URI
// and a name for people.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// rootList parses the "roots" array of an entry from file ("" for an inline
// server): each element is a file:// URI or a path. A relative path is
// resolved against file's directory; an inline server must give absolute
// ones. Any bad element is an error naming roots[i].
func (c *entryCheck) rootList(key string, v jval, file string) []Root {
	if !v.isArray() {
		c.fail(key, v.off, "must be an array of strings (file:// URIs or paths), got %s", v.kind())
		return nil
	}
	out := []Root{}
	for i, e := range v.elems() {
		field := fmt.Sprintf("%s[%d]", key, i)
		s, isStr := e.str()
		if !isStr {
			c.fail(field, e.off, "must be a string, got %s", e.kind())
			continue
		}
		r, err := ParseRoot(s, file)
		if err != nil {
			c.fail(field, e.off, "%v", err)
			continue
		}
		out = append(out, r)
	}
	return out
}

// ParseRoot turns a root as written in a config file (a file:// URI or a
// path) into a Root. A relative path is resolved against the directory of
// file; when file is "" it is an error.
func ParseRoot(s, file string) (Root, error) {
	if s == "" {
		return Root{}, fmt.Errorf("empty root (want a file:// URI or a path)")
	}
	var path string
	if i := strings.Index(s, "://"); i > 0 && !strings.ContainsAny(s[:i], `/\`) {
		u, err := url.Parse(s)
		if err != nil {
			return Root{}, fmt.Errorf("root %q is not a valid URI: %w", s, err)
		}
		if u.Scheme != "file" {
			return Root{}, fmt.Errorf("root %q: unsupported scheme %q (roots are file:// URIs or paths)", s, u.Scheme)
		}
		if u.Host != "" && u.Host != "localhost" {
			return Root{}, fmt.Errorf("root %q: file URI with host %q (want file:///absolute/path)", s, u.Host)
		}
		if !strings.HasPrefix(u.Path, "/") {
			return Root{}, fmt.Errorf("root %q: file URI without an absolute path", s)
		}
		path = filepath.FromSlash(u.Path)
	} else {
		path = s
		if !filepath.IsAbs(path) {
			if file == "" {
				return Root{}, fmt.Errorf("relative root %q needs a config file to resolve against (give an absolute path or a file:// URI)", s)
			}
			path = filepath.Join(filepath.Dir(file), path)
		}
	}
	path = filepath.Clean(path)
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	return Root{URI: u.String(), Name: filepath.Base(path)}, nil
}
