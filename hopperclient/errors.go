package hopperclient

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// Errors of the server's refusals that package hopper has no error for; tell them apart with
// errors.Is.
var (
	// ErrUnauthenticated: the server wants an API key and got none, or one it does not know
	// or that was revoked (UNAUTHENTICATED).
	ErrUnauthenticated = errors.New("API key refused")
	// ErrPermissionDenied: the API key lacks the scope the call needs (PERMISSION_DENIED).
	ErrPermissionDenied = errors.New("API key lacks the scope")
)

// apiError is a server's refusal, or a call that did not reach the server: the server's
// message, the error of package hopper (or of this one) it means, and the Connect error.
type apiError struct {
	kind error // nil when no error says more than the code
	err  *connect.Error
}

func (e *apiError) Error() string { return e.err.Message() }

// Unwrap makes errors.Is and errors.As see the meaning and the Connect error.
func (e *apiError) Unwrap() []error {
	if e.kind == nil {
		return []error{e.err}
	}
	return []error{e.kind, e.err}
}

// callErr is the error of a call (op says what it did) that failed with err; nil for nil.
func callErr(op string, err error) error {
	if err == nil {
		return nil
	}
	ce, ok := errors.AsType[*connect.Error](err)
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w", op, &apiError{kind: meaning(ce), err: ce})
}

// incidentErr is callErr for a replay or a retry in place, whose ALREADY_EXISTS means a dead
// letter replayed before (hopper.ErrAlreadyReplayed), not a duplicate idempotency key.
func incidentErr(op string, err error) error {
	if ce, ok := errors.AsType[*connect.Error](err); ok && ce.Code() == connect.CodeAlreadyExists {
		return fmt.Errorf("%s: %w", op, &apiError{kind: hopper.ErrAlreadyReplayed, err: ce})
	}
	return callErr(op, err)
}

// meaning is the error a refusal means.
func meaning(ce *connect.Error) error {
	switch ce.Code() {
	case connect.CodeInvalidArgument:
		if ve := apiview.ValidationError(ce.Message()); ve != nil {
			return ve
		}
		return hopper.ErrInvalid
	case connect.CodeNotFound:
		return hopper.ErrNotFound
	case connect.CodeFailedPrecondition:
		return hopper.ErrInvalidTransition
	case connect.CodeAlreadyExists:
		return hopper.ErrDuplicate
	case connect.CodeUnavailable:
		return hopper.ErrUnavailable
	case connect.CodeUnauthenticated:
		return ErrUnauthenticated
	case connect.CodePermissionDenied:
		return ErrPermissionDenied
	case connect.CodeCanceled:
		return context.Canceled
	case connect.CodeDeadlineExceeded:
		return context.DeadlineExceeded
	}
	return nil
}
