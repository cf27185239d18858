package host

import (
	"errors"
	"testing"
)

// TestServerErrorText: the text is "code:server: detail", where detail is
// Detail when set, else the cause's text, else the sentinel's; Unwrap
// yields the sentinel and the cause, when there is one.
func TestServerErrorText(t *testing.T) {
	cause := errors.New("pipe closed")
	for _, tc := range []struct {
		err  *ServerError
		want string
	}{
		{&ServerError{Code: CodeConnectionLost, Server: "fx", Kind: ErrConnectionLost, Cause: cause, Detail: "tool \"x\" timed out"}, `mcp_connection_lost:fx: tool "x" timed out`},
		{&ServerError{Code: CodeConnectionLost, Server: "fx", Kind: ErrConnectionLost, Cause: cause}, "mcp_connection_lost:fx: pipe closed"},
		{&ServerError{Code: CodeConnectionLost, Server: "fx", Kind: ErrConnectionLost}, "mcp_connection_lost:fx: " + ErrConnectionLost.Error()},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(tc.err, ErrConnectionLost) {
			t.Errorf("%q does not match its sentinel", tc.err)
		}
		wantWrapped := 1
		if tc.err.Cause != nil {
			wantWrapped = 2
			if !errors.Is(tc.err, cause) {
				t.Errorf("%q does not match its cause", tc.err)
			}
		}
		if got := tc.err.Unwrap(); len(got) != wantWrapped {
			t.Errorf("%q unwraps to %v, want %d errors", tc.err, got, wantWrapped)
		}
	}
}
