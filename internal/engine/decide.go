package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/store"
)

// What happens to a job after an attempt is decided in one place, for every worker: the
// engine's executor, a remote worker and the server that hears from it. The code that ran the
// attempt turns the handler's error into an Ending (Classify); a remote worker sends the
// Ending's fields over the wire and the server rebuilds it; Decide turns an Ending into the
// store's outcome, with the retry policy of whoever decides (the engine's configuration, the
// server's).

// Ending is how one attempt ended, as the code that ran it saw it.
type Ending struct {
	// Outcome is OutcomeOK, OutcomeError, OutcomePanic, OutcomeTimeout, OutcomeSnoozed,
	// OutcomeSuspended, or OutcomeCanceled: the runner gives the job back without having run
	// it to an end (it is shutting down); the attempt is not consumed.
	Outcome hoppertype.Outcome
	// Gone: the job stopped being the attempt's while it ran (canceled, its lease lost). There
	// is nothing to store: the store already moved the job and the token is void.
	Gone bool
	// Error is the handler's error text; Stack the stack of a panic.
	Error string
	Stack string
	// Result is what a successful attempt stores with the job.
	Result json.RawMessage
	// NoRetry fails the job whatever attempts are left.
	NoRetry bool
	// RetriesLeft, when set, overrides the attempts left: 0 or less fails the job, n > 0 allows
	// n more attempts whatever the job's budget was (remote workers' Fail can say so).
	RetriesLeft *int
	// RetryAfter, when set, is the wait before the next attempt instead of the backoff's.
	RetryAfter *time.Duration
	// KindPolicy is the backoff of the job's kind, when its worker has one: the job's own
	// policy wins over it, and it over the decider's default.
	KindPolicy *hoppertype.RetryPolicy
	// Snooze is the wait of a snoozed attempt.
	Snooze time.Duration
	// Suspend is the suspension of a suspended attempt.
	Suspend *SuspendError
}

// Classify describes an attempt that ended with err (the handler's result) while its context
// ended with cause (nil if it had not), under an execution limit of timeout (for the text of
// a timeout). An error the handler returns after a shutdown began still counts as a snooze or
// a suspension when it is one: that outcome wins over the plain release.
func Classify(err, cause error, timeout time.Duration) Ending {
	switch {
	case errors.Is(cause, ErrJobCanceled), errors.Is(cause, ErrLeaseLost):
		return Ending{Outcome: hoppertype.OutcomeCanceled, Gone: true}
	case err == nil:
		return Ending{Outcome: hoppertype.OutcomeOK}
	}
	var sn *SnoozeError
	var su *SuspendError
	switch {
	case errors.As(err, &sn):
		return Ending{Outcome: hoppertype.OutcomeSnoozed, Snooze: sn.Delay}
	case errors.As(err, &su):
		return Ending{Outcome: hoppertype.OutcomeSuspended, Suspend: su}
	case errors.Is(cause, ErrShutdown):
		return Ending{Outcome: hoppertype.OutcomeCanceled, Error: fmt.Sprintf("released on shutdown: %v", err)}
	}
	e := Ending{Outcome: hoppertype.OutcomeError, Error: err.Error()}
	var pe *PanicError
	if errors.As(err, &pe) {
		e.Outcome, e.Stack = hoppertype.OutcomePanic, pe.Stack
	} else if errors.Is(cause, ErrTimeout) {
		e.Outcome, e.Error = hoppertype.OutcomeTimeout, fmt.Sprintf("%v after %s: %v", ErrTimeout, timeout, err)
	}
	var noRetry *NoRetryError
	e.NoRetry = errors.As(err, &noRetry)
	var after *RetryAfterError
	if errors.As(err, &after) {
		d := max(after.Delay, 0)
		e.RetryAfter = &d
	}
	return e
}

// MaxAttemptsCap bounds a job's attempts, whatever a worker's RetriesLeft asks for.
const MaxAttemptsCap = 1000

// Decide is the store's outcome of an attempt of row that ended as e, at now, with retry as
// the decider's default backoff; nil when e.Gone. It does not set ExpiresAt (the engine's
// retention does).
func Decide(row *hoppertype.JobRow, e Ending, retry *hoppertype.RetryPolicy, now time.Time) *store.FinishParams {
	if e.Gone {
		return nil
	}
	switch e.Outcome {
	case hoppertype.OutcomeOK:
		return &store.FinishParams{ID: row.ID, Token: row.Token, State: hoppertype.StateCompleted,
			Outcome: hoppertype.OutcomeOK, Result: e.Result, Actor: hoppertype.ActorWorker, Reason: "success"}
	case hoppertype.OutcomeSnoozed:
		return ParkParams(row.ID, row.Token, &SnoozeError{Delay: e.Snooze}, now)
	case hoppertype.OutcomeSuspended:
		su := e.Suspend
		if su == nil {
			su = &SuspendError{}
		}
		return ParkParams(row.ID, row.Token, su, now)
	case hoppertype.OutcomeCanceled:
		return releaseParams(row, e.Error, "released on shutdown")
	}
	p := &store.FinishParams{ID: row.ID, Token: row.Token, Outcome: e.Outcome, Error: e.Error,
		Stack: e.Stack, Actor: hoppertype.ActorWorker}
	left := row.MaxAttempts - row.Attempt
	switch {
	case e.NoRetry:
		left = 0
	case e.RetriesLeft != nil:
		left = *e.RetriesLeft
		if left > 0 {
			p.MaxAttempts = row.Attempt + min(left, MaxAttemptsCap)
		}
	}
	if left <= 0 {
		p.State, p.Reason = hoppertype.StateFailed, deadReason(e, row)
		return p
	}
	delay := backoff.Delay(MergePolicy(row.RetryPolicy, e.KindPolicy, retry), row.Attempt, nil)
	if e.RetryAfter != nil {
		delay = max(*e.RetryAfter, 0)
	}
	p.State, p.Reason, p.RunAt = hoppertype.StateScheduled, "retry", now.Add(delay)
	return p
}

func deadReason(e Ending, row *hoppertype.JobRow) string {
	switch {
	case e.NoRetry:
		return "not retryable"
	case e.RetriesLeft != nil:
		return "no retries left (set by the worker)"
	}
	return fmt.Sprintf("no attempts left (%d of %d)", row.Attempt, row.MaxAttempts)
}

// releaseParams hands a job back to the queue without consuming its attempt.
func releaseParams(row *hoppertype.JobRow, why, reason string) *store.FinishParams {
	return &store.FinishParams{ID: row.ID, Token: row.Token, State: hoppertype.StateQueued,
		Outcome: hoppertype.OutcomeCanceled, GiveBack: true, Error: why,
		Actor: hoppertype.ActorWorker, Reason: reason, Job: row}
}
