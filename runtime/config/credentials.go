package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
)

// ErrCredentialNotFound reports that a CredentialStore has no token for an id.
var ErrCredentialNotFound = errors.New("credential not found")

// CredentialStore hands out OAuth access tokens by credential id (the
// "credentialId" of a server's "auth" block).
type CredentialStore interface {
	// Token returns the access token for id, or an error wrapping
	// ErrCredentialNotFound when there is none.
	Token(ctx context.Context, id string) (string, error)
}

// FileCredentials is a CredentialStore backed by a JSON file mapping ids to
// {"accessToken": "..."}. The file is read on every call, so a refreshed
// token is picked up at the next connect. A missing file, id or empty token
// is ErrCredentialNotFound.
type FileCredentials struct {
	Path string
}

// Token implements CredentialStore.
func (f FileCredentials) Token(ctx context.Context, id string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	data, err := ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("credential %q: %w (no file %s)", id, ErrCredentialNotFound, f.Path)
	}
	if err != nil {
		return "", fmt.Errorf("credential %q: %w", id, err)
	}
	var creds map[string]struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.Unmarshal(data, &creds); err != nil {
		return "", fmt.Errorf("credential %q: %s: %w", id, f.Path, err)
	}
	c, ok := creds[id]
	if !ok || c.AccessToken == "" {
		return "", fmt.Errorf("credential %q: %w in %s", id, ErrCredentialNotFound, f.Path)
	}
	return c.AccessToken, nil
}
