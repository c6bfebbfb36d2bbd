package server

import (
	"context"
	"errors"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apierr"
)

// rpcError turns a Hopper error into the Connect error callers can act on. Messages of
// errors callers caused (bad input, stale lease…) go to the wire, except a store's refusal of
// a value (apierr.StoreRefusal), which gets apierr.StoreRefusalMessage and
// goes to the log (guardErrors). An unavailable store is UNAVAILABLE with a fixed message
// (guardErrors adds Retry-After). Any other error is INTERNAL with the whole error as its
// message, which never reaches the caller: guardErrors logs it, once, with the request id
// and answers with the id alone.
func rpcError(op string, err error) error {
	var code connect.Code
	switch {
	case err == nil:
		return nil
	case apierr.StoreRefusal(err):
		return connect.NewError(connect.CodeInvalidArgument, apierr.StoreRefusalMessage).WithCause(err)
	case errors.Is(err, hopper.ErrInvalid):
		code = connect.CodeInvalidArgument
	case errors.Is(err, hopper.ErrNotFound):
		code = connect.CodeNotFound
	case errors.Is(err, hopper.ErrAlreadyReplayed):
		if re, ok := errors.AsType[*hopper.ReplayedError](err); ok {
			// The refusal names the earlier replay; the layers it passed through add nothing.
			return connect.NewError(connect.CodeAlreadyExists, re.Error()).WithCause(err)
		}
		code = connect.CodeAlreadyExists
	case errors.Is(err, hopper.ErrLeaseLost), errors.Is(err, hopper.ErrInvalidTransition):
		code = connect.CodeFailedPrecondition
	case errors.Is(err, hopper.ErrDuplicate):
		code = connect.CodeAlreadyExists
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, "canceled").WithCause(err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, "deadline exceeded").WithCause(err)
	case errors.Is(err, hopper.ErrShutdown):
		return connect.NewError(connect.CodeUnavailable, "server shutting down").WithCause(err)
	case errors.Is(err, hopper.ErrUnavailable):
		return connect.NewError(connect.CodeUnavailable, apierr.UnavailableMessage).WithCause(err)
	default:
		return connect.NewError(connect.CodeInternal, op+": "+err.Error()).WithCause(err)
	}
	return connect.NewError(code, err.Error()).WithCause(err)
}

// invalidArg is a caller's bad input found by the server itself.
func invalidArg(field, reason string) error {
	return connect.NewError(connect.CodeInvalidArgument, "invalid "+field+": "+reason)
}
