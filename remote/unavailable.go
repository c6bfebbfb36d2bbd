package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"connectrpc.com/connect/v2"
)

// unavailable reports a lost connection to the server as what it is, UNAVAILABLE: a server
// that crashed or restarted mid-call reaches the client as "internal: protocol error:
// incomplete envelope: unexpected EOF", a reset connection or a plain EOF. Other errors, and
// the caller's own cancellation, are returned as they are.
func unavailable(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	switch connect.CodeOf(err) {
	case connect.CodeInternal, connect.CodeUnknown:
		if connectionLost(err) {
			return connect.NewError(connect.CodeUnavailable, "connection to the server lost: "+err.Error()).WithCause(err)
		}
	}
	return err
}

// connectionLost reports whether err says the connection broke rather than the server
// answered.
func connectionLost(err error) bool {
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	for _, e := range []error{io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.EPIPE,
		net.ErrClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
