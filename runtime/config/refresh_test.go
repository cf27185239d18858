package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

type refresher struct{ next string }

func (r refresher) Token(context.Context, string) (string, error) { return "old", nil }
func (r refresher) RefreshToken(_ context.Context, _, rejected string) (string, error) {
	if rejected != "old" {
		return "", errors.New("unexpected rejected token")
	}
	return r.next, nil
}

func TestRefreshToken(t *testing.T) {
	ctx := context.Background()
	if tok, err := RefreshToken(ctx, refresher{next: "new"}, "id", "old"); err != nil || tok != "new" {
		t.Fatalf("refresher: %q %v", tok, err)
	}
	if _, err := RefreshToken(ctx, refresher{next: "old"}, "id", "old"); err == nil {
		t.Fatal("a refresh that returns the rejected token succeeded")
	}
	path := filepath.Join(t.TempDir(), "creds.json")
	store := FileCredentials{Path: path}
	if _, err := RefreshToken(ctx, store, "id", "old"); !errors.Is(err, ErrCredentialNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"id":{"accessToken":"old"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := RefreshToken(ctx, store, "id", "old"); err == nil {
		t.Fatal("same token in the file counted as a refresh")
	}
	if err := os.WriteFile(path, []byte(`{"id":{"accessToken":"rotated"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := RefreshToken(ctx, store, "id", "old"); err != nil || tok != "rotated" {
		t.Fatalf("rotated file: %q %v", tok, err)
	}
	if _, err := RefreshToken(ctx, nil, "id", "old"); !errors.Is(err, ErrCredentialNotFound) {
		t.Fatalf("nil store: %v", err)
	}
}
