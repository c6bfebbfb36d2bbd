// Package jobstate holds Hopper's job state machine: the one table of allowed transitions.
// Every store and the engine check moves against it; anything else is ErrInvalidTransition.
package jobstate

import (
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper/hoppertype"
)

// ErrInvalidTransition is returned for a move the state machine does not allow.
var ErrInvalidTransition = errors.New("invalid state transition")

// RetryInPlace is why a failed job leaves its state: an incident resolved in place, the same
// job back to work with more attempts (contract 18). It is the only way out of failed; a
// replay leaves the failed job as it is and makes a new one. A retry in place also re-arms the
// jobs the failure canceled (Rearmed): the only way out of canceled but for a replay.
const RetryInPlace = "retry in place"

// ParentsEnded is why a waiting job is released: its last parent ended (docs/workflows.md).
const ParentsEnded = "parents ended"

// Rearmed is why a canceled job waits again: the parent whose failure canceled it (directly or
// down a cascade) was retried in place (docs/workflows.md#retrying-a-failed-parent).
const Rearmed = "re-armed: the parent whose failure canceled it was retried in place"

// New is the pseudo-state of a job that does not exist yet; enqueue moves from it.
const New hoppertype.JobState = ""

type (
	s = hoppertype.JobState
)

// table lists, for each state, the states it may move to and why.
var table = map[s]map[s]string{
	New: {
		hoppertype.StateQueued:    "enqueue",
		hoppertype.StateScheduled: "enqueue with run_at in the future",
		hoppertype.StateWaiting:   "enqueue after parents",
	},
	hoppertype.StateWaiting: {
		hoppertype.StateQueued:    ParentsEnded,
		hoppertype.StateScheduled: ParentsEnded + ", run_at in the future",
		hoppertype.StateCanceled:  "cancel or parent failed",
	},
	hoppertype.StateScheduled: {
		hoppertype.StateQueued:   "run_at reached",
		hoppertype.StateCanceled: "cancel",
	},
	hoppertype.StateQueued: {
		hoppertype.StateRunning:  "claim",
		hoppertype.StateCanceled: "cancel",
	},
	hoppertype.StateRunning: {
		hoppertype.StateCompleted: "success",
		hoppertype.StateFailed:    "no attempts left or not retryable",
		hoppertype.StateScheduled: "retry with backoff, snooze or suspend until a time",
		hoppertype.StateQueued:    "lease expired, node dead, released on shutdown or unstarted",
		hoppertype.StateSuspended: "suspend until resumed",
		hoppertype.StateCanceled:  "cancel",
	},
	hoppertype.StateSuspended: {
		hoppertype.StateQueued:   "resume",
		hoppertype.StateFailed:   "suspend deadline passed",
		hoppertype.StateCanceled: "cancel",
	},
	hoppertype.StateFailed: {
		hoppertype.StateQueued:    RetryInPlace,
		hoppertype.StateScheduled: RetryInPlace + " at a later time",
	},
	hoppertype.StateCanceled: {
		hoppertype.StateQueued:  "replay",
		hoppertype.StateWaiting: Rearmed,
	},
	hoppertype.StateCompleted: {},
}

// Allowed reports whether a job may move from one state to another.
func Allowed(from, to hoppertype.JobState) bool {
	_, ok := table[from][to]
	return ok
}

// Check returns nil when the move is allowed and an error wrapping ErrInvalidTransition otherwise.
func Check(from, to hoppertype.JobState) error {
	if Allowed(from, to) {
		return nil
	}
	return &TransitionError{From: from, To: to}
}

// Why names the transition from one state to another, or "" when it is not allowed.
func Why(from, to hoppertype.JobState) string {
	return table[from][to]
}

// Sources lists the states from which a job may move to the given state.
func Sources(to hoppertype.JobState) []hoppertype.JobState {
	var out []hoppertype.JobState
	for _, from := range append([]hoppertype.JobState{New}, hoppertype.AllStates...) {
		if Allowed(from, to) {
			out = append(out, from)
		}
	}
	return out
}

// TransitionError says which move was refused. It matches ErrInvalidTransition with errors.Is.
type TransitionError struct {
	From, To hoppertype.JobState
}

func (e *TransitionError) Error() string {
	from := string(e.From)
	if from == "" {
		from = "new"
	}
	return fmt.Sprintf("%v: %s → %s", ErrInvalidTransition, from, e.To)
}

// Is makes errors.Is(err, ErrInvalidTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrInvalidTransition }
