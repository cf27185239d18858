package host

import (
	"errors"
	"io"
)

// isEOF reports whether err says the peer went away mid-call (go-sdk wraps
// io.EOF, not ErrConnectionClosed, for a server that dies during a call).
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
