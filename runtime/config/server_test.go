package config

import (
	"testing"
	"time"
)

func TestConnectTimeout(t *testing.T) {
	tests := []struct{ field, want time.Duration }{
		{0, DefaultConnectTimeout},
		{NoTimeout, NoTimeout},
		{1500 * time.Millisecond, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		s := &Server{Timeout: tt.field}
		if got := s.ConnectTimeout(); got != tt.want {
			t.Errorf("Timeout %v: ConnectTimeout() = %v, want %v", tt.field, got, tt.want)
		}
	}
	if DefaultConnectTimeout != 30*time.Second {
		t.Errorf("DefaultConnectTimeout = %v", DefaultConnectTimeout)
	}
}

func TestValidateName(t *testing.T) {
	// Every end of each character range is allowed.
	for _, ok := range []string{"a", "my-server", "my.server_2", "A9", string(make([]byte, 0)) + "x", "z", "Z", "0", "9", "azAZ09_.-"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	long := make([]byte, 100)
	for i := range long {
		long[i] = 'a'
	}
	if err := ValidateName(string(long)); err != nil {
		t.Errorf("100 chars: %v", err)
	}
	for _, bad := range []string{"", string(long) + "a", "has space", "slash/", "ü", "a:b"} {
		err := ValidateName(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		mustIs(t, err, ErrInvalidConfig)
		if got := err.Error(); len(got) < 30 || got[:29] != "Invalid server config: name: " {
			t.Errorf("%q: %q", bad, got)
		}
	}
}
