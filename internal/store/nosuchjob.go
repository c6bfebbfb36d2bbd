package store

import "fmt"

// NoSuchJob is a fenced call's verdict when no job has the id it names (never enqueued, or
// expired and swept): errors.Is matches both ErrNotFound, which tells the caller its id is
// wrong, and ErrLeaseLost, because the attempt owns nothing either, so code that stops work
// on a lost lease stops here too.
func NoSuchJob(id string) error { return &noSuchJobError{id: id} }

type noSuchJobError struct{ id string }

func (e *noSuchJobError) Error() string { return fmt.Sprintf("job %s: %v", e.id, ErrNotFound) }

func (e *noSuchJobError) Is(target error) bool {
	return target == ErrNotFound || target == ErrLeaseLost
}
