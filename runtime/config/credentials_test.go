package config

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestFileCredentials(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := FileCredentials{Path: filepath.Join(dir, "none.json")}
	if _, err := missing.Token(ctx, "gh"); !errors.Is(err, ErrCredentialNotFound) {
		t.Errorf("missing file: %v", err)
	}
	path := writeFile(t, filepath.Join(dir, "creds.json"), `{"gh": {"accessToken": "tok-1", "refreshToken": "r"}, "empty": {"accessToken": ""}}`)
	fc := FileCredentials{Path: path}
	if tok, err := fc.Token(ctx, "gh"); err != nil || tok != "tok-1" {
		t.Errorf("gh: %q %v", tok, err)
	}
	for _, id := range []string{"nope", "empty"} {
		if _, err := fc.Token(ctx, id); !errors.Is(err, ErrCredentialNotFound) {
			t.Errorf("%s: %v", id, err)
		}
	}
	bad := FileCredentials{Path: writeFile(t, filepath.Join(dir, "bad.json"), `{"gh": `)}
	if _, err := bad.Token(ctx, "gh"); err == nil || errors.Is(err, ErrCredentialNotFound) {
		t.Errorf("malformed file: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := fc.Token(cctx, "gh"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
