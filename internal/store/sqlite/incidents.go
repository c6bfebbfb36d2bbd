package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.IncidentStore = (*Store)(nil)

// keepRowAttemptSQL writes the attempt that ended job ?1, which its row holds (history.go), to
// job_attempts, before a retry in place reuses the row.
const keepRowAttemptSQL = `INSERT INTO job_attempts (job_id, token, attempt, worker_id, started_at, ended_at, outcome,
	error, stack, start_seq, end_seq, to_state, actor, reason)
	SELECT id, token, attempt, worker_id, started_at, finished_at, coalesce(last_outcome, 'error'), last_error,
		last_stack, version - 1, version, state, last_actor, last_reason
	FROM jobs j WHERE id = ?1 AND ` + rowAttempt

// retrySQL moves failed job ?1 back to state ?2 at run_at ?3 with ?4 more attempts, args ?5
// when not NULL, its rescues counted afresh. state = 'failed' fences it.
const retrySQL = `UPDATE jobs SET state = ?2, version = version + 1, run_at = ?3, max_attempts = attempt + ?4,
	args = coalesce(?5, args), worker_id = NULL, lease_expires_at = NULL, finished_at = NULL, expires_at = NULL,
	rescues = 0, last_actor = ?6, last_reason = ?7, updated_at = ?8
	WHERE id = ?1 AND state = 'failed' RETURNING ` + jobColumns

// JobRetry retries one failed job in place: its history, the update and the audit row in one
// transaction of the single writer.
func (s *Store) JobRetry(ctx context.Context, p *store.RetryParams) (*store.Replay, error) {
	var r *store.Replay
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := s.clock.Now()
		state, forced, err := checkDeadLetter(ctx, tx, p.ID, p.Again, now)
		if err != nil {
			return err
		}
		if err := store.CheckRetry(p.ID, state, retryTarget(p.RunAt, now)); err != nil {
			return err
		}
		r, err = retryOne(ctx, tx, p, now)
		if err != nil {
			return err
		}
		r.Forced = forced
		return audit(ctx, tx, r)
	})
	if err != nil {
		return nil, fmt.Errorf("retry job %s: %w", p.ID, err)
	}
	return r, nil
}

// retryTarget is where a retry in place sends a job: scheduled for a run_at after now, else
// queued.
func retryTarget(runAt, now time.Time) hoppertype.JobState {
	if runAt.After(now) {
		return hoppertype.StateScheduled
	}
	return hoppertype.StateQueued
}

// retryOne retries failed job p.ID inside tx and returns its audit row, not yet written.
func retryOne(ctx context.Context, tx *sql.Tx, p *store.RetryParams, now time.Time) (*store.Replay, error) {
	if _, err := tx.ExecContext(ctx, keepRowAttemptSQL, p.ID); err != nil {
		return nil, fmt.Errorf("keep the last attempt of job %s: %w", p.ID, err)
	}
	target, runAt := retryTarget(p.RunAt, now), now
	if target == hoppertype.StateScheduled {
		runAt = p.RunAt
	}
	var args any
	if p.Args != nil {
		args = []byte(p.Args)
	}
	job, err := scanJob(tx.QueryRowContext(ctx, retrySQL, p.ID, string(target), micros(runAt), p.Attempts, args,
		string(p.Actor), store.RetryEventReason(p.By, p.Reason), micros(now)))
	if err != nil {
		return nil, fmt.Errorf("retry job %s: %w", p.ID, err)
	}
	var workflows []string
	if job.HasChildren {
		if workflows, err = store.Rearm(ctx, &rearmer{tx: tx, actor: p.Actor, now: now}, []string{job.ID}); err != nil {
			return nil, fmt.Errorf("retry job %s: %w", p.ID, err)
		}
	}
	if job.WorkflowID != "" && !slices.Contains(workflows, job.WorkflowID) {
		workflows = append(workflows, job.WorkflowID)
	}
	if err := reopenWorkflows(ctx, tx, workflows); err != nil {
		return nil, fmt.Errorf("retry job %s: %w", p.ID, err)
	}
	original := job.OriginalID
	if original == "" {
		original = job.ID
	}
	return &store.Replay{SourceJobID: job.ID, NewJobID: job.ID, OriginalID: original, ReplayedBy: p.By,
		ReplayedAt: fromMicros(micros(now)), Reason: p.Reason, Action: store.ActionRetry, Job: job}, nil
}

// reopenWorkflows opens again those of workflows ids that were marked ended: a step of each
// runs again, or waits again, in the retry's transaction.
func reopenWorkflows(ctx context.Context, tx *sql.Tx, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE workflows SET state = NULL, ended_at = NULL
		WHERE id IN (SELECT value FROM json_each(?1)) AND state IS NOT NULL`, string(list)); err != nil {
		return fmt.Errorf("reopen workflows: %w", err)
	}
	return nil
}

// JobRetryMany retries in place the oldest failed jobs matching p that were never replayed.
func (s *Store) JobRetryMany(ctx context.Context, p *store.RetryManyParams) (*store.RetryManyResult, error) {
	var out *store.RetryManyResult
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		out = &store.RetryManyResult{} // a retried request starts over
		now := s.clock.Now()
		ids, err := unreplayed(ctx, tx, &p.DeadLetterFilter, p.Limit, now)
		if err != nil {
			return err
		}
		if out.Skipped, err = countReplayed(ctx, tx, &p.DeadLetterFilter, now); err != nil {
			return err
		}
		for _, id := range ids {
			r, err := retryOne(ctx, tx, &store.RetryParams{ID: id, Attempts: p.Attempts, By: p.By, Actor: p.Actor,
				Reason: p.Reason}, now)
			if err != nil {
				return err
			}
			if err := audit(ctx, tx, r); err != nil {
				return err
			}
			out.Retries = append(out.Retries, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retry failed jobs: %w", err)
	}
	return out, nil
}

// JobSetMaxAttempts sets the attempt budget of a job that has not ended.
func (s *Store) JobSetMaxAttempts(ctx context.Context, p *store.SetMaxAttemptsParams) (*hoppertype.JobRow, error) {
	var job *hoppertype.JobRow
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		var state string
		var attempt int
		err := tx.QueryRowContext(ctx, `SELECT state, attempt FROM jobs WHERE id = ?1 AND `+live, p.ID,
			micros(s.clock.Now())).Scan(&state, &attempt)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("job %s: %w", p.ID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := store.CheckMaxAttempts(p.ID, hoppertype.JobState(state), attempt, p.MaxAttempts); err != nil {
			return err
		}
		job, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET max_attempts = ?2, updated_at = ?3 WHERE id = ?1
			RETURNING `+jobColumns, p.ID, p.MaxAttempts, micros(s.clock.Now())))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("set the attempts of job %s: %w", p.ID, err)
	}
	return job, nil
}
