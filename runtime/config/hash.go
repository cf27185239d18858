package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// ConfigHash returns the hex SHA-256 of a canonical JSON form of the server's
// name and unresolved config (Raw): object keys sorted, no insignificant
// whitespace, strings re-encoded, numbers kept as written. Reformatting the
// file or reordering keys does not change it, and neither does rotating a
// secret in the environment, since Raw is never expanded or resolved. The tool
// cache uses it as its key.
func (s *Server) ConfigHash() string {
	raw := s.Raw
	if len(bytes.TrimSpace(raw)) == 0 {
		raw, _ = json.Marshal(s) // a Server built in code: hash its JSON fields
	}
	h := sha256.New()
	doc := map[string]any{"name": s.Name, "config": canonicalValue(raw)}
	b, _ := json.Marshal(doc)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalValue decodes JSON keeping numbers as written; json.Marshal then
// writes maps with sorted keys and no whitespace. Text that does not decode is
// hashed as a string.
func canonicalValue(raw []byte) any {
	dec := json.NewDecoder(bytes.NewReader(blankJSONC(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	return v
}
