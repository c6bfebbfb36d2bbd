package hoppertype

import (
	"errors"
	"fmt"
	"time"
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
	// ErrAlreadyReplayed: the dead letter was replayed before, and the call did not say to
	// do it again (contract 18: a dead letter becomes one new job, not two by mistake). The
	// error is a *ReplayedError naming the earlier replay.
	ErrAlreadyReplayed = errors.New("dead letter already replayed")
)

// ReplayedError refuses to replay, or to retry in place, a dead letter that was replayed
// before: it names the newest replay. errors.Is(err, ErrAlreadyReplayed) holds.
type ReplayedError struct {
	// JobID is the dead letter, ReplayJobID the job its newest replay created, ReplayedBy who
	// made that replay and ReplayedAt when.
	JobID       string
	ReplayJobID string
	ReplayedBy  string
	ReplayedAt  time.Time
}

func (e *ReplayedError) Error() string {
	return fmt.Sprintf("dead letter %s was already replayed as job %s (by %s at %s); replay or retry it again only if a second run is wanted",
		e.JobID, e.ReplayJobID, e.ReplayedBy, e.ReplayedAt.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrAlreadyReplayed) true.
func (e *ReplayedError) Is(target error) bool { return target == ErrAlreadyReplayed }

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
