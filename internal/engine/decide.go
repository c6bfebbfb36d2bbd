package engine

import (
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/store"
)

// What happens to a job after an attempt is decided in one place, for every worker: the
// engine's executor, a remote worker and the server that hears from it. The code that ran the
// attempt turns the handler's error into an Ending (Classify); a remote worker sends the
// Ending's fields over the wire and the server rebuilds it; Decide turns an Ending into the
// store's outcome, with the retry policy of whoever decides (the engine's configuration, the
// server's).

// MaxAttemptsCap bounds a job's attempts, whatever a worker's RetriesLeft asks for.
const MaxAttemptsCap = 1000

// Decide is the store's outcome of an attempt of row that ended as e, at now, with retry as
// the decider's default backoff; nil when e.Gone. It does not set ExpiresAt (the engine's
// retention does).
func Decide(row *hoppertype.JobRow, e attempt.Ending, retry *hoppertype.RetryPolicy, now time.Time) *store.FinishParams {
	if e.Gone {
		return nil
	}
	switch e.Outcome {
	case hoppertype.OutcomeOK:
		return &store.FinishParams{ID: row.ID, Token: row.Token, State: hoppertype.StateCompleted,
			Outcome: hoppertype.OutcomeOK, Result: e.Result, Actor: hoppertype.ActorWorker, Reason: "success"}
	case hoppertype.OutcomeSnoozed:
		return ParkParams(row.ID, row.Token, &attempt.SnoozeError{Delay: e.Snooze}, now)
	case hoppertype.OutcomeSuspended:
		su := e.Suspend
		if su == nil {
			su = &attempt.SuspendError{}
		}
		return ParkParams(row.ID, row.Token, su, now)
	case hoppertype.OutcomeCanceled:
		return releaseParams(row, e.Error, "released on shutdown")
	}
	p := &store.FinishParams{ID: row.ID, Token: row.Token, Outcome: e.Outcome, Error: e.Error,
		Stack: e.Stack, Actor: hoppertype.ActorWorker, Checkpoint: e.Checkpoint, ErrorCode: e.ErrorCode}
	policy := MergePolicy(row.RetryPolicy, e.KindPolicy, retry)
	left := row.MaxAttempts - row.Attempt
	switch {
	case e.NoRetry:
		left = 0
	case e.ErrorCode != "" && !policy.RetryBusinessErrors: // part of the job's contract: final
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
	delay := backoff.Delay(policy, row.Attempt, nil)
	if e.RetryAfter != nil {
		delay = max(*e.RetryAfter, 0)
	}
	p.State, p.Reason, p.RunAt = hoppertype.StateScheduled, "retry", now.Add(delay)
	return p
}

func deadReason(e attempt.Ending, row *hoppertype.JobRow) string {
	switch {
	case e.ErrorCode != "":
		return "business error " + e.ErrorCode
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
