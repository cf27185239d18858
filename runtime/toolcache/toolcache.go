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
//
// # Cache hints (MCP 2026-07-28)
//
// A server of the stateless revision sends cache hints with its list
// results (SEP-2549): ttlMs, how long the list stays fresh after it was
// received, and cacheScope, "public" or "private". PutHint records them
// with the list, inside the config-hash rule, never instead of it:
//
//   - a positive ttlMs is stored with the record ("ttlMs", next to a
//     "savedAt" of millisecond precision) and bounds it: once ttlMs has
//     passed on the clock the record is a miss with reason "ttl", even
//     within the TTL. The config hash is checked first, so a changed
//     configuration misses (config-changed) whatever the hint says;
//   - a ttlMs of 0 (or none: every SDK sends 0 by default, and the
//     legacy era has no hints) sets no bound of the server's: the record
//     lives by the config hash and the TTL alone, as before hints existed;
//   - a list scoped "private" (or with a scope this package does not
//     know) is never stored: the cache is keyed on the unresolved
//     configuration, blind to the credentials a connection used, so it
//     cannot keep authorization contexts apart, and the revision forbids
//     sharing a private result across them. PutHint removes the server's
//     record instead, as for an empty list.
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
	// ReasonTTL: the record is older than the ttlMs its server sent with
	// the list (a cache hint of the 2026-07-28 revision).
	ReasonTTL = "ttl"
)

// The cacheScope values of the 2026-07-28 revision.
const (
	ScopePublic  = "public"
	ScopePrivate = "private"
)

// Hint is the cache hint a server sent with a list result (MCP 2026-07-28,
// SEP-2549). The zero Hint is no hint: the legacy era, or a server that
// sent ttlMs 0 and scope public.
type Hint struct {
	// TTL is the server's ttlMs: the list stays fresh this long after it
	// was received. Zero (or negative) sets no bound of the server's.
	TTL time.Duration
	// Scope is the cacheScope as the server sent it: ScopePublic,
	// ScopePrivate, or "" when it sent none.
	Scope string
}

// Shareable reports whether the list may be kept in a cache shared across
// authorization contexts: its scope is public or absent (the schema's
// default). A private scope, or one this package does not know, is not.
func (h Hint) Shareable() bool { return h.Scope == "" || h.Scope == ScopePublic }

// Lookup tells how Get went.
type Lookup struct {
	// Hit is set when the returned tools are usable.
	Hit bool
	// Reason says why a miss missed: "absent", "expired", "version",
	// "config-changed" or "corrupt: <detail>"; empty on a hit.
	Reason string
	// SavedAt is when the record was written, when it could be read.
	SavedAt time.Time
	// TTL is the ttlMs the server sent with the recorded list (zero when
	// none), when the record could be read.
	TTL time.Duration
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

// record is the on-disk form. TTLMs and CacheScope are the server's cache
// hint (absent when it sent none); a record of version 1 without them is
// read as before hints existed.
type record struct {
	Version    int         `json:"version"`
	Server     string      `json:"server"`
	ConfigHash string      `json:"configHash"`
	Tools      []*mcp.Tool `json:"tools"`
	SavedAt    string      `json:"savedAt"`
	TTLMs      int64       `json:"ttlMs,omitempty"`
	CacheScope string      `json:"cacheScope,omitempty"`
}

// storedRecord is record as read, its tools decoded only once the record is
// known to be usable.
type storedRecord struct {
	Version    int             `json:"version"`
	Server     string          `json:"server"`
	ConfigHash string          `json:"configHash"`
	Tools      json.RawMessage `json:"tools"`
	SavedAt    string          `json:"savedAt"`
	TTLMs      int64           `json:"ttlMs"`
	CacheScope string          `json:"cacheScope"`
}

func (c *Cache) ttl() time.Duration {
	if c.TTL > 0 {
		return c.TTL
	}
	return DefaultTTL
}

// Get returns the cached tools of server if its record is usable for
// configHash: the config hash matches, the record is younger than the TTL
// and, when its server sent a positive ttlMs, younger than that too. Every
// failure is a miss whose Lookup.Reason says why; Get never returns an
// error and never modifies the directory.
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
	if rec.TTLMs < 0 {
		return corrupt("ttlMs %d", rec.TTLMs)
	}
	if !(Hint{Scope: rec.CacheScope}).Shareable() {
		// Never written by Put: a private list is not stored.
		return corrupt("cacheScope %q", rec.CacheScope)
	}
	hintTTL := time.Duration(rec.TTLMs) * time.Millisecond
	// The config hash decides first: a changed configuration misses
	// whatever the server's hint says.
	if rec.ConfigHash != configHash {
		return nil, Lookup{Reason: ReasonConfigChanged, SavedAt: savedAt, TTL: hintTTL}
	}
	// A record from the future (clock moved back) is still bounded by TTL.
	age := c.clock.Since(savedAt)
	if age > c.ttl() || -age > c.ttl() {
		return nil, Lookup{Reason: ReasonExpired, SavedAt: savedAt, TTL: hintTTL}
	}
	// The server's ttlMs: fresh for that long after the list was received
	// (stale from that instant on), bounded the same way in the past.
	if hintTTL > 0 && (age >= hintTTL || -age >= hintTTL) {
		return nil, Lookup{Reason: ReasonTTL, SavedAt: savedAt, TTL: hintTTL}
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
	return tools, Lookup{Hit: true, SavedAt: savedAt, TTL: hintTTL}
}

// Put stores tools as server's record for configHash, stamped with the
// clock's time. Nil entries are dropped. An empty list is never stored:
// it removes an existing record instead, and invalidated reports whether
// there was one. The write is atomic; the directory is created (0700) if
// missing. A server name or config hash that is not valid UTF-8 is refused
// (JSON could not record it exactly, so the record would never match).
func (c *Cache) Put(server, configHash string, tools []*mcp.Tool) (invalidated bool, err error) {
	return c.PutHint(server, configHash, tools, Hint{})
}

// PutHint is Put of a list that came with the cache hint h, stored with the
// record; the stamp is the clock's time, taken as the time the list was
// received (call it right after). A list h does not let a shared cache
// keep (Hint.Shareable: a private scope) is never stored: like an empty
// list, it removes an existing record, and invalidated reports whether
// there was one.
func (c *Cache) PutHint(server, configHash string, tools []*mcp.Tool, h Hint) (invalidated bool, err error) {
	if !utf8.ValidString(server) || !utf8.ValidString(configHash) {
		return false, fmt.Errorf("toolcache: record %s: server name or config hash is not valid UTF-8", c.Path(server))
	}
	kept := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if t != nil {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 || !h.Shareable() {
		return c.remove(server)
	}
	p := c.Path(server)
	data, err := json.Marshal(record{
		Version:    Version,
		Server:     server,
		ConfigHash: configHash,
		Tools:      kept,
		// Milliseconds, so that a ttlMs is measured from when the list
		// arrived, not from the start of its second.
		SavedAt:    c.clock.Now().UTC().Format(savedAtLayout),
		TTLMs:      max(h.TTL.Milliseconds(), 0),
		CacheScope: h.Scope,
	})
	if err != nil {
		return false, fmt.Errorf("toolcache: encode record %s: %w", p, err)
	}
	if err := writeAtomic(p, data); err != nil {
		return false, err
	}
	return false, nil
}

// savedAtLayout is RFC 3339 with the milliseconds, when there are any.
const savedAtLayout = "2006-01-02T15:04:05.999Z07:00"

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
