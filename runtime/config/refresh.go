package config

import (
	"context"
	"fmt"
)

// TokenRefresher is an optional interface of a CredentialStore that can mint
// a new access token when a server rejected the current one (an OAuth refresh
// grant, for instance).
type TokenRefresher interface {
	// RefreshToken returns a new access token for id; rejected is the token
	// the server refused.
	RefreshToken(ctx context.Context, id, rejected string) (string, error)
}

// RefreshToken asks store for a token to replace rejected: through
// TokenRefresher when the store implements it, otherwise by reading the token
// again (FileCredentials rereads its file, so a token rotated by another
// process is picked up). It fails when the store has nothing newer than the
// rejected token.
func RefreshToken(ctx context.Context, store CredentialStore, id, rejected string) (string, error) {
	if store == nil {
		return "", fmt.Errorf("credential %q: %w: no credential store is configured", id, ErrCredentialNotFound)
	}
	var tok string
	var err error
	if r, ok := store.(TokenRefresher); ok {
		tok, err = r.RefreshToken(ctx, id, rejected)
	} else {
		tok, err = store.Token(ctx, id)
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("refresh credential %q: %w", id, err)
	case tok == "":
		return "", fmt.Errorf("refresh credential %q: %w (empty token)", id, ErrCredentialNotFound)
	case tok == rejected:
		return "", fmt.Errorf("refresh credential %q: the provider has no newer token than the rejected one", id)
	}
	return tok, nil
}
