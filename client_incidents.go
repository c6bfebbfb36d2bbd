package hopper

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

// Incidents (contract 18). A failed job is an incident: its attempts ran out, or its handler
// said not to retry. It can be resolved in two ways:
//
//   - RetryJob resolves it in place: the same job (id, idempotency key, group, lineage,
//     history, attempts so far) goes back to work with more attempts and, if need be,
//     corrected args. Use it when the cause is fixed and the job itself should finish, as
//     Zeebe resolves an incident.
//   - Replay makes a new job with the failed one's work and lineage, and leaves the failed one
//     as it is. Use it when a new job is wanted (a new id, no idempotency key).
//
// Both are recorded in the dead-letter audit log (Replays), with who did it. A dead letter is
// either retried or replayed, not both by mistake: a dead letter that was replayed is not
// retried (nor replayed again) unless the call says Again, and a retried job is no longer
// failed, so it cannot be replayed until it fails again.

// DefaultRetryAttempts is how many more attempts a retry in place gives when it is not told.
const DefaultRetryAttempts = 1

// RetryOpts says how RetryJob resolves a failed job in place. The zero value gives one more
// attempt now, with the same args, recorded as done by "api".
type RetryOpts struct {
	// Retries is how many more attempts the job gets: its MaxAttempts becomes its Attempt plus
	// Retries. 0 means DefaultRetryAttempts (1); at most the MaxAttempts limit (1,000).
	Retries int
	// Args, when not nil, replaces the job's args: one JSON value, checked as Enqueue checks
	// args (valid UTF-8, at most Config.MaxArgsBytes).
	Args json.RawMessage
	// RunAt, when after now, schedules the job for then (state scheduled); zero queues it now.
	RunAt time.Time
	// Reason is recorded in the job's history and in the audit log (at most MaxReasonBytes).
	Reason string
	// By names who retried, in the audit log and the history (default "api"); Actor is who it
	// was in the history's terms (default ActorAPI; the CLI and the dashboard say operator).
	By    string
	Actor Actor
	// Again retries a dead letter that was replayed before. Without it such a retry is refused
	// with a *ReplayedError, so that one failure does not become two runs by mistake. The
	// audit row records that it was forced.
	Again bool
}

// RetryJob resolves the incident of failed job id in place (contract 18): the same job goes
// back to queued (scheduled when opts.RunAt is in the future) with opts.Retries more attempts,
// with opts.Args if given, its last attempt kept in its history, a history event (failed →
// queued, with the actor and "retry by BY: REASON") and an audit row (Replays, action retry)
// written in one transaction. The transaction is fenced: of concurrent retries and replays of
// one dead letter, one wins. It returns the job as retried.
//
// Errors: a *ValidationError for bad options, ErrNotFound (no such job, or expired),
// ErrInvalidTransition (the job is not failed: only a failed job is retried in place), a
// *ReplayedError matching ErrAlreadyReplayed (the dead letter was replayed; see opts.Again).
func (c *Client) RetryJob(ctx context.Context, id string, opts RetryOpts) (*JobRow, error) {
	p, err := c.retryParams(id, opts)
	if err != nil {
		return nil, err
	}
	r, err := c.store.JobRetry(ctx, p)
	if err != nil {
		return nil, err
	}
	c.wake(r.Job)
	return r.Job, nil
}

// retryParams checks opts and builds the store's retry of job id.
func (c *Client) retryParams(id string, opts RetryOpts) (*store.RetryParams, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	p, err := checkRetry(opts.Retries, opts.By, opts.Actor, opts.Reason)
	if err != nil {
		return nil, err
	}
	if err := checkRunAt(InsertOpts{RunAt: opts.RunAt}, c.clock.Now()); err != nil {
		return nil, err
	}
	p.ID, p.RunAt, p.Again = id, opts.RunAt, opts.Again
	if opts.Args != nil {
		if p.Args, err = encodeArgs(RawArgs{JSON: opts.Args}, false, c.cfg.MaxArgsBytes); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// checkRetry checks what a retry and a bulk retry share and returns it, defaulted.
func checkRetry(retries int, by string, actor Actor, reason string) (*store.RetryParams, error) {
	if actor == "" {
		actor = ActorAPI
	}
	if err := checkActor(actor); err != nil {
		return nil, err
	}
	if err := checkLimited("reason", reason, MaxReasonBytes); err != nil {
		return nil, err
	}
	attempts, err := retryAttempts(retries)
	if err != nil {
		return nil, err
	}
	if by, err = replayedBy(by); err != nil {
		return nil, err
	}
	return &store.RetryParams{Attempts: attempts, By: by, Actor: actor, Reason: reason}, nil
}

// retryAttempts is the number of more attempts a retry asks for (field retries), defaulted.
func retryAttempts(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultRetryAttempts, nil
	case n < 0 || n > maxAttemptsCap:
		return 0, invalid("retries", "%d is outside 1–%d (0 gives %d)", n, maxAttemptsCap, DefaultRetryAttempts)
	}
	return n, nil
}

// wake tells this process's workers of a job back at work.
func (c *Client) wake(job *JobRow) {
	if job.State == StateScheduled {
		c.engine.NotifyScheduled(job.RunAt)
		return
	}
	c.engine.Notify(job.Queue)
}

// UpdateRetries sets the attempt budget (MaxAttempts) of job id while it has not ended
// (scheduled, queued, running or suspended), as Zeebe's UpdateJobRetries: more attempts for a
// job that keeps failing for a cause being fixed, fewer for one that should give up sooner.
// maxAttempts is the new total, counting the attempts made: at least Attempt (a running
// job's attempt counts), and one more than that for a job waiting to run; at most 1,000.
//
// Errors: a *ValidationError (field max_attempts) for a budget out of range or below what the
// job has used, ErrNotFound, ErrInvalidTransition for a job that has ended (RetryJob resolves
// a failed one).
func (c *Client) UpdateRetries(ctx context.Context, id string, maxAttempts int) (*JobRow, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	if maxAttempts < 1 || maxAttempts > maxAttemptsCap {
		return nil, invalid("max_attempts", "%d is outside 1–%d", maxAttempts, maxAttemptsCap)
	}
	return c.store.JobSetMaxAttempts(ctx, &store.SetMaxAttemptsParams{ID: id, MaxAttempts: maxAttempts})
}

// RetryManyOpts says how RetryMany retries dead letters in place.
type RetryManyOpts struct {
	// Limit is the most jobs to retry (default 100, at most 1,000), as ReplayMany's.
	Limit int
	// Retries, Reason, By and Actor are RetryOpts'.
	Retries int
	Reason  string
	By      string
	Actor   Actor
}

// RetryManyResult is what RetryMany did: the jobs it retried, oldest first, and how many dead
// letters matching the filter it skipped because they were replayed before.
type RetryManyResult struct {
	Jobs    []*JobRow
	Skipped int
}

// RetryMany retries in place, like RetryJob, the failed jobs matching f that were never
// replayed, oldest first, at most opts.Limit of them, all in one transaction, each with an
// audit row. Calling it again continues where it stopped, and concurrent calls never retry
// one job twice. Dead letters that were replayed are skipped (counted in Skipped): retry them
// one by one with RetryOpts.Again.
func (c *Client) RetryMany(ctx context.Context, f DeadLetterFilter, opts RetryManyOpts) (*RetryManyResult, error) {
	limit, err := replayLimit(opts.Limit)
	if err != nil {
		return nil, err
	}
	p, err := checkRetry(opts.Retries, opts.By, opts.Actor, opts.Reason)
	if err != nil {
		return nil, err
	}
	if err := checkFilter(f.Queues, f.Kinds, ""); err != nil {
		return nil, err
	}
	res, err := c.store.JobRetryMany(ctx, &store.RetryManyParams{DeadLetterFilter: storeFilter(f), Limit: limit,
		Attempts: p.Attempts, By: p.By, Actor: p.Actor, Reason: p.Reason})
	if err != nil {
		return nil, err
	}
	out := &RetryManyResult{Skipped: res.Skipped, Jobs: make([]*JobRow, len(res.Retries))}
	for i, r := range res.Retries {
		out.Jobs[i] = r.Job
		c.wake(r.Job)
	}
	return out, nil
}
