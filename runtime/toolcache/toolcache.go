// Package toolcache keeps each MCP server's tool definitions on disk, so a
// session can expose deferred tools before a slow server has connected.
//
// One record file per server lives in the cache directory:
//
//	{"version":1,"server":"github","configHash":"…","tools":[…],"savedAt":"2026-01-01T00:00:00Z"}
//
// A record is used only when its version, server and config hash match and
// it is younger than the TTL. Writes are atomic (temp file in the same
// directory, then rename), so readers never see a partial record and
// concurrent writers leave one complete record (the last rename wins).
package toolcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/runtime/clock"
)

// Version is the record format version written and accepted.
const Version = 1

// DefaultTTL is how long a record stays valid when Cache.TTL is zero.
const DefaultTTL = 30 * 24 * time.Hour

// Lookup reasons. A corrupt record's reason is ReasonCorrupt followed by
// ": " and a detail naming the file.
const (
	ReasonAbsent        = "absent"
	ReasonExpired       = "expired"
	ReasonVersion       = "version"
	ReasonConfigChanged = "config-changed"
	ReasonCorrupt       = "corrupt"
)

// Lookup tells how Get went.
type Lookup struct {
	// Hit is set when the returned tools are usable.
	Hit bool
	// Reason says why a miss missed: "absent", "expired", "version",
	// "config-changed" or "corrupt: <detail>"; empty on a hit.
	Reason string
	// SavedAt is when the record was written, when it could be read.
	SavedAt time.Time
}

// Corrupt reports whether the miss was caused by an unreadable record, which
// the runtime reports as a warning.
func (l Lookup) Corrupt() bool { return strings.HasPrefix(l.Reason, ReasonCorrupt) }

// Cache is a directory of per-server tool records. Its methods are safe for
// concurrent use, also across processes sharing the directory. TTL may be
// set right after New, before the Cache is shared.
type Cache struct {
	dir   string
	clock clock.Clock
	// TTL is the maximum age of a usable record; zero means DefaultTTL.
	TTL time.Duration
}

// New returns a cache keeping its records in dir, created on first write.
// A nil c means the real clock.
func New(dir string, c clock.Clock) *Cache {
	if c == nil {
		c = clock.Real{}
	}
	return &Cache{dir: dir, clock: c, TTL: DefaultTTL}
}

// Dir returns the cache directory.
func (c *Cache) Dir() string { return c.dir }

// Path returns the record file of server. The file name keeps the
// characters [a-zA-Z0-9_-] of the server name (others become "_", at most
// 48 of them) followed by "-" and 16 hex digits of the SHA-256 of the exact
// name, so any name is a safe single path element and names differing only
// in letter case or punctuation never share a file.
func (c *Cache) Path(server string) string {
	return filepath.Join(c.dir, fileName(server))
}

func fileName(server string) string {
	var b strings.Builder
	for i := 0; i < len(server) && b.Len() < 48; i++ {
		ch := server[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9', ch == '_', ch == '-':
			b.WriteByte(ch)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		b.WriteString("server")
	}
	sum := sha256.Sum256([]byte(server))
	return b.String() + "-" + hex.EncodeToString(sum[:8]) + ".json"
}

// record is the on-disk form.
type record struct {
	Version    int         `json:"version"`
	Server     string      `json:"server"`
	ConfigHash string      `json:"configHash"`
	Tools      []*mcp.Tool `json:"tools"`
	SavedAt    string      `json:"savedAt"`
}

// storedRecord is record as read, its tools decoded only once the record is
// known to be usable.
type storedRecord struct {
	Version    int             `json:"version"`
	Server     string          `json:"server"`
	ConfigHash string          `json:"configHash"`
	Tools      json.RawMessage `json:"tools"`
	SavedAt    string          `json:"savedAt"`
}

func (c *Cache) ttl() time.Duration {
	if c.TTL > 0 {
		return c.TTL
	}
	return DefaultTTL
}

// Get returns the cached tools of server if its record is usable for
// configHash. Every failure is a miss whose Lookup.Reason says why; Get
// never returns an error and never modifies the directory.
func (c *Cache) Get(server, configHash string) ([]*mcp.Tool, Lookup) {
	p := c.Path(server)
	corrupt := func(format string, args ...any) ([]*mcp.Tool, Lookup) {
		return nil, Lookup{Reason: ReasonCorrupt + ": " + p + ": " + fmt.Sprintf(format, args...)}
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Lookup{Reason: ReasonAbsent}
	}
	if err != nil {
		return nil, Lookup{Reason: ReasonCorrupt + ": " + err.Error()}
	}
	// The version is checked before anything else, so that a record of
	// another format version is a version miss even if its other fields
	// changed shape.
	var head map[string]json.RawMessage
	if err := json.Unmarshal(data, &head); err != nil {
		return corrupt("%v", err)
	}
	if head == nil {
		return corrupt("not a JSON object")
	}
	v, ok := head["version"]
	if !ok {
		return corrupt("no version")
	}
	var version int
	if err := json.Unmarshal(v, &version); err != nil {
		return corrupt("version: %v", err)
	}
	if version != Version {
		return nil, Lookup{Reason: ReasonVersion}
	}
	var rec storedRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return corrupt("%v", err)
	}
	if rec.Server != server {
		return corrupt("record is for server %q", rec.Server)
	}
	savedAt, err := time.Parse(time.RFC3339, rec.SavedAt)
	if err != nil {
		return corrupt("savedAt: %v", err)
	}
	if rec.ConfigHash != configHash {
		return nil, Lookup{Reason: ReasonConfigChanged, SavedAt: savedAt}
	}
	// A record from the future (clock moved back) is still bounded by TTL.
	if age := c.clock.Since(savedAt); age > c.ttl() || -age > c.ttl() {
		return nil, Lookup{Reason: ReasonExpired, SavedAt: savedAt}
	}
	var tools []*mcp.Tool
	if err := json.Unmarshal(rec.Tools, &tools); err != nil {
		return corrupt("tools: %v", err)
	}
	if len(tools) == 0 {
		return corrupt("no tools")
	}
	for i, t := range tools {
		if t == nil || t.Name == "" {
			return corrupt("tool %d has no name", i)
		}
	}
	return tools, Lookup{Hit: true, SavedAt: savedAt}
}

// Put stores tools as server's record for configHash, stamped with the
// clock's time. Nil entries are dropped. An empty list is never stored:
// it removes an existing record instead, and invalidated reports whether
// there was one. The write is atomic; the directory is created (0700) if
// missing. A server name or config hash that is not valid UTF-8 is refused
// (JSON could not record it exactly, so the record would never match).
func (c *Cache) Put(server, configHash string, tools []*mcp.Tool) (invalidated bool, err error) {
	if !utf8.ValidString(server) || !utf8.ValidString(configHash) {
		return false, fmt.Errorf("toolcache: record %s: server name or config hash is not valid UTF-8", c.Path(server))
	}
	kept := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if t != nil {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		return c.remove(server)
	}
	p := c.Path(server)
	data, err := json.Marshal(record{
		Version:    Version,
		Server:     server,
		ConfigHash: configHash,
		Tools:      kept,
		SavedAt:    c.clock.Now().UTC().Format(time.RFC3339),
	})
	if err != nil {
		return false, fmt.Errorf("toolcache: encode record %s: %w", p, err)
	}
	if err := writeAtomic(p, data); err != nil {
		return false, err
	}
	return false, nil
}

// Invalidate removes server's record; a missing record is not an error.
func (c *Cache) Invalidate(server string) error {
	_, err := c.remove(server)
	return err
}

func (c *Cache) remove(server string) (bool, error) {
	p := c.Path(server)
	err := os.Remove(p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("toolcache: remove record %s: %w", p, err)
	}
}

// writeAtomic writes data to a uniquely named temp file next to p and
// renames it over p.
func writeAtomic(p string, data []byte) (err error) {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("toolcache: create directory for %s: %w", p, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return fmt.Errorf("toolcache: write record %s: %w", p, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("toolcache: write record %s: %w", p, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("toolcache: sync record %s: %w", p, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("toolcache: close record %s: %w", p, err)
	}
	if err = os.Rename(tmp, p); err != nil {
		return fmt.Errorf("toolcache: replace record %s: %w", p, err)
	}
	return nil
}

// ConfigHash returns the hex SHA-256 of the canonical JSON of v (object keys
// sorted at every level), the key that ties a record to a server's
// configuration. Pass the unresolved configuration, so that rotating secrets
// neither change the key nor reach the cache.
func ConfigHash(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toolcache: hash config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return "", fmt.Errorf("toolcache: hash config: %w", err)
	}
	canon, err := json.Marshal(generic)
	if err != nil {
		return "", fmt.Errorf("toolcache: hash config: %w", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}
