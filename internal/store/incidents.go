package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/jobstate"
)

// IncidentStore resolves incidents in place (contract 18): a failed job goes back to work as
// the same job (same id, idempotency key, group, history and attempts so far) with more
// attempts, and a job that has not ended gets another attempt budget. Both stores implement
// it; implementations are safe for concurrent use.
type IncidentStore interface {
	// JobRetry moves one failed job back to queued (scheduled when p.RunAt is after now) with
	// p.Attempts more attempts (max_attempts becomes attempt + p.Attempts), p.Args when not
	// nil, a history event (failed → queued, p.Actor, p.Reason) and an audit row (action
	// retry, by p.By) in one transaction. The job's last attempt stays in its history. A
	// conditional update fences it: of concurrent retries and replays of one dead letter, one
	// succeeds. ErrNotFound for an unknown or expired job, ErrInvalidTransition for one that
	// is not failed, a *hoppertype.ReplayedError for a dead letter replayed before unless
	// p.Again. The audit row's Job is the job as retried.
	JobRetry(ctx context.Context, p *RetryParams) (*Replay, error)
	// JobRetryMany retries in place, oldest first, up to p.Limit failed jobs matching the
	// filter that were never replayed, each as JobRetry does, all in one transaction, and
	// counts the matching ones it skipped as replayed. Concurrent calls never retry one job
	// twice.
	JobRetryMany(ctx context.Context, p *RetryManyParams) (*RetryManyResult, error)
	// JobSetMaxAttempts sets the attempt budget of a job that has not ended (scheduled,
	// queued, running or suspended). ErrNotFound for an unknown job, ErrInvalidTransition for
	// an ended one, a *hoppertype.ValidationError (field max_attempts) for a budget below what
	// the job has used: its attempts so far, plus one for a job waiting to run.
	JobSetMaxAttempts(ctx context.Context, p *SetMaxAttemptsParams) (*hoppertype.JobRow, error)
}

// RetryParams retries one failed job in place.
type RetryParams struct {
	ID string
	// Attempts is how many more attempts the job gets (at least 1).
	Attempts int
	// Args, when not nil, replaces the job's args (validated by the caller).
	Args json.RawMessage
	// RunAt, when after now, schedules the job for then; zero (or past) queues it now.
	RunAt time.Time
	// Again retries a dead letter that was replayed before (recorded as forced).
	Again bool
	// By names who retried, in the audit log; Actor and Reason go to the job's history, and
	// Reason to the audit row.
	By     string
	Actor  hoppertype.Actor
	Reason string
}

// RetryManyParams retries in place the failed jobs matching a filter that were never
// replayed.
type RetryManyParams struct {
	DeadLetterFilter
	// Limit is the most jobs to retry (at least 1).
	Limit    int
	Attempts int
	By       string
	Actor    hoppertype.Actor
	Reason   string
}

// RetryManyResult is what JobRetryMany did: the audit rows of the jobs retried (each with
// Job), and how many dead letters matching its filter it left because they were replayed.
type RetryManyResult struct {
	Retries []*Replay
	Skipped int
}

// SetMaxAttemptsParams sets a job's attempt budget.
type SetMaxAttemptsParams struct {
	ID          string
	MaxAttempts int
}

// CheckRetry allows a retry in place of job id, in state, to target only from failed and
// only along the state machine; otherwise it returns an error wrapping ErrInvalidTransition.
func CheckRetry(id string, state, target hoppertype.JobState) error {
	if state == hoppertype.StateFailed && jobstate.Allowed(state, target) {
		return nil
	}
	return fmt.Errorf("job %s is %s, and only failed jobs are retried in place: %w", id, state,
		&jobstate.TransitionError{From: state, To: target})
}

// RetryEventReason is what a retry in place records as the reason of the job's history event:
// who did it, and why.
func RetryEventReason(by, reason string) string {
	if reason == "" {
		return "retry by " + by
	}
	return fmt.Sprintf("retry by %s: %s", by, reason)
}

// CheckMaxAttempts is the stores' one decision on a new attempt budget n for job id, found in
// state with attempt attempts made: an ended job gets none (ErrInvalidTransition), and n may
// not be below the attempts made, one more for a job waiting to run (a running job's attempt
// is counted already): a *hoppertype.ValidationError for max_attempts.
func CheckMaxAttempts(id string, state hoppertype.JobState, attempt, n int) error {
	if state.Terminal() {
		return fmt.Errorf("job %s is %s, and only a job that has not ended gets a new attempt budget: %w",
			id, state, ErrInvalidTransition)
	}
	least := attempt + 1
	if state == hoppertype.StateRunning {
		least = max(attempt, 1)
	}
	if n < least {
		return &hoppertype.ValidationError{Field: "max_attempts",
			Reason: fmt.Sprintf("%d is less than %d: the job has made %d attempts", n, least, attempt)}
	}
	return nil
}
