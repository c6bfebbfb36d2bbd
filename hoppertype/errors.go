package hoppertype

import (
	"errors"
	"fmt"
)

// Errors callers tell apart with errors.Is, whichever layer returns them: the stores, the
// engine, the client, the remote worker. The hopper package exports them under the same names.
var (
	// ErrNotFound: no job (or other object) with that id.
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost: the fencing token presented is not the job's current lease (the job was
	// rescued, re-claimed, canceled or finished). Nothing was changed.
	ErrLeaseLost = errors.New("lease lost: fencing token is not the current lease")
	// ErrInvalid: bad input. Checks at the doors return a *ValidationError naming the field;
	// a store returns ErrInvalid itself for a value it cannot keep that got past them.
	ErrInvalid = errors.New("invalid input")
)

// ValidationError says which input field was wrong and why. errors.Is(err, ErrInvalid) holds.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }
