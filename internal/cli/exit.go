package cli

import (
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper"
)

// Exit codes of the hopper command. Scripts rely on them: never renumber.
const (
	ExitOK          = 0 // success
	ExitInternal    = 1 // anything unexpected: I/O, a corrupt database, a bug
	ExitUsage       = 2 // bad input: unknown flag, missing argument, invalid job options
	ExitNotFound    = 3 // no job with that id
	ExitConflict    = 4 // the state machine refused (e.g. canceling a finished job), a duplicate, or a dead letter replayed before
	ExitAuth        = 5 // --server refused the API key (missing, invalid, revoked, or lacking a scope)
	ExitUnavailable = 6 // --server could not be reached or is shutting down, or the database is unavailable
)

// exitError carries an exit code and the message to show for err.
type exitError struct {
	code int
	msg  string
	err  error
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a bad-input error (exit code 2).
func usageErrorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &exitError{code: ExitUsage, msg: err.Error(), err: err}
}

// exitCode maps err to the process exit code.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, hopper.ErrInvalid):
		return ExitUsage
	case errors.Is(err, hopper.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, hopper.ErrInvalidTransition), errors.Is(err, hopper.ErrDuplicate),
		errors.Is(err, hopper.ErrAlreadyReplayed):
		return ExitConflict
	case errors.Is(err, hopper.ErrUnavailable):
		return ExitUnavailable
	}
	return ExitInternal
}

// message is what the user sees for err: a validation error is shown on its own, without the
// context wrapped around it, because it already names the field.
func message(err error) string {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.msg
	}
	var ve *hopper.ValidationError
	if errors.As(err, &ve) {
		return ve.Error()
	}
	return err.Error()
}
