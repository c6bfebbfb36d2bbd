package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

var _ store.IncidentStore = (*Store)(nil)

// retrySQL retries the failed jobs $2 in place, in one statement: the attempt each row holds
// (history.go) goes to job_attempts (the statement's snapshot reads the rows as they were
// before its update), each job back to state $3 at run_at $4 (NULL: now) with $5 more
// attempts, args $6 when not NULL and its rescues counted afresh, and an audit row each. The
// update matches only failed rows: that fences it. Actor $7, history reason $8, by $9, audit
// reason $10, forced $11.
const retrySQL = `WITH clk AS (SELECT coalesce($1::timestamptz, now()) AS now),
kept AS (
	INSERT INTO {schema}.job_attempts (job_id, token, attempt, worker_id, started_at, ended_at, outcome, error,
		stack, start_seq, end_seq, to_state, actor, reason)
	SELECT j.id, j.token, j.attempt, j.worker_id, j.started_at, j.finished_at, coalesce(j.last_outcome, 'error'),
		j.last_error, j.last_stack, j.version - 1, j.version, j.state, j.last_actor, j.last_reason
	FROM {schema}.jobs j WHERE j.id = ANY($2::text[]) AND ` + rowAttempt + `
),
upd AS (
	UPDATE {schema}.jobs j SET state = $3, version = j.version + 1, run_at = coalesce($4::timestamptz, clk.now),
		max_attempts = j.attempt + $5, args = coalesce($6::bytea, j.args), worker_id = NULL,
		lease_expires_at = NULL, finished_at = NULL, expires_at = NULL, rescues = 0, last_actor = $7,
		last_reason = $8, updated_at = clk.now
	FROM clk WHERE j.id = ANY($2::text[]) AND j.state = 'failed'
	RETURNING ` + jCols + `
),
aud AS (
	INSERT INTO {schema}.job_replays (source_job_id, new_job_id, original_id, replayed_by, replayed_at, reason,
		action, forced)
	SELECT upd.id, upd.id, coalesce(upd.original_id, upd.id), $9, clk.now, $10, 'retry', $11
	FROM upd, clk ORDER BY upd.id
	RETURNING id, source_job_id, replayed_at
)
SELECT a.id, a.replayed_at, ` + jCols + `
FROM upd j JOIN aud a ON a.source_job_id = j.id ORDER BY j.id`

// retry runs retrySQL in tx for failed jobs whose rows the caller has locked.
func (s *Store) retry(ctx context.Context, tx pgx.Tx, ids []string, p *store.RetryParams, target hoppertype.JobState, forced bool) ([]*store.Replay, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	by, reason := field.Clean(p.By), field.Clean(p.Reason)
	var runAt any
	if target == hoppertype.StateScheduled {
		runAt = p.RunAt
	}
	var args any
	if p.Args != nil {
		args = []byte(p.Args)
	}
	rs, err := tx.Query(ctx, s.sql(retrySQL), s.nowArg(), ids, string(target), runAt, p.Attempts, args,
		string(p.Actor), field.Clean(store.RetryEventReason(by, reason)), by, nullStr(reason), forced)
	if err != nil {
		return nil, err
	}
	out, err := scanRetries(rs, by, reason, forced)
	if err != nil {
		return nil, err
	}
	var parents []string
	for _, r := range out {
		if r.Job.HasChildren {
			parents = append(parents, r.Job.ID)
		}
	}
	var workflows []string
	if len(parents) > 0 {
		if workflows, err = store.Rearm(ctx, &rearmer{s: s, tx: pgxDB{tx}, actor: p.Actor}, parents); err != nil {
			return nil, err
		}
	}
	return out, s.reopenWorkflows(ctx, tx, out, workflows)
}

// lockWorkflowsSQL and reopenSQL open again the workflows $1 of steps just retried in place,
// or re-armed by such a retry (which may be in other workflows), if they were marked ended. The first locks every one of them, in id order, marked or not:
// a pass of WorkflowMarkEnded that holds one (and read the step as failed) is waited for, and
// one that comes later skips it, so that none marks a workflow whose step this retry runs
// again. The second is a statement of its own: its snapshot, taken once the lock is held,
// sees what such a pass marked.
const (
	lockWorkflowsSQL = `SELECT id FROM {schema}.workflows WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`
	reopenSQL        = `UPDATE {schema}.workflows SET state = NULL, ended_at = NULL WHERE id = ANY($1::text[]) AND state IS NOT NULL`
)

// reopenWorkflows opens again the workflows of the steps among rs and the workflows rearmed
// (lockWorkflowsSQL, reopenSQL).
func (s *Store) reopenWorkflows(ctx context.Context, tx pgx.Tx, rs []*store.Replay, rearmed []string) error {
	ids := slices.Clone(rearmed)
	for _, r := range rs {
		if id := r.Job.WorkflowID; id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, s.sql(lockWorkflowsSQL), ids); err != nil {
		return fmt.Errorf("lock workflows: %w", err)
	}
	if _, err := tx.Exec(ctx, s.sql(reopenSQL), ids); err != nil {
		return fmt.Errorf("reopen workflows: %w", err)
	}
	return nil
}

// scanRetries reads retrySQL's rows and closes them.
func scanRetries(rs pgx.Rows, by, reason string, forced bool) ([]*store.Replay, error) {
	defer rs.Close()
	var out []*store.Replay
	for rs.Next() {
		r := &store.Replay{ReplayedBy: by, Reason: reason, Action: store.ActionRetry, Forced: forced}
		var at time.Time
		job, err := scanJob(prefixScanner{rs, []any{&r.ID, &at}})
		if err != nil {
			return nil, err
		}
		r.ReplayedAt, r.Job, r.SourceJobID, r.NewJobID = at.UTC(), job, job.ID, job.ID
		r.OriginalID = job.OriginalID
		if r.OriginalID == "" {
			r.OriginalID = job.ID
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// retryTarget is where a retry in place sends a job: scheduled for a run_at after now, else
// queued.
func retryTarget(runAt, now time.Time) hoppertype.JobState {
	if runAt.After(now) {
		return hoppertype.StateScheduled
	}
	return hoppertype.StateQueued
}

// JobRetry retries one failed job in place, holding its row.
func (s *Store) JobRetry(ctx context.Context, p *store.RetryParams) (*store.Replay, error) {
	var out []*store.Replay
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		state, forced, err := s.lockDeadLetter(ctx, tx, p.ID, p.Again)
		if err != nil {
			return err
		}
		target := retryTarget(p.RunAt, s.clock.Now())
		if err := store.CheckRetry(p.ID, state, target); err != nil {
			return err
		}
		out, err = s.retry(ctx, tx, []string{p.ID}, p, target, forced)
		return err
	})
	if err != nil {
		return nil, s.wrap(err, "retry job %s", p.ID)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("retry job %s: %d rows updated", p.ID, len(out))
	}
	return out[0], nil
}

// JobRetryMany retries in place the oldest failed jobs matching p that were never replayed,
// locked as JobReplayMany locks them.
func (s *Store) JobRetryMany(ctx context.Context, p *store.RetryManyParams) (*store.RetryManyResult, error) {
	var out *store.RetryManyResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ids, skipped, err := s.lockUnreplayed(ctx, tx, &p.DeadLetterFilter, p.Limit)
		if err != nil {
			return err
		}
		out = &store.RetryManyResult{Skipped: skipped}
		out.Retries, err = s.retry(ctx, tx, ids, &store.RetryParams{Attempts: p.Attempts, By: p.By, Actor: p.Actor,
			Reason: p.Reason}, hoppertype.StateQueued, false)
		return err
	})
	if err != nil {
		return nil, s.wrap(err, "retry failed jobs")
	}
	return out, nil
}

// JobSetMaxAttempts sets the attempt budget of a job that has not ended, holding its row.
func (s *Store) JobSetMaxAttempts(ctx context.Context, p *store.SetMaxAttemptsParams) (*hoppertype.JobRow, error) {
	var job *hoppertype.JobRow
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var state string
		var attempt int
		err := tx.QueryRow(ctx, s.sql(`SELECT state, attempt FROM {schema}.jobs WHERE id = $1 AND `+live+` FOR UPDATE`),
			p.ID, s.nowArg()).Scan(&state, &attempt)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("job %s: %w", p.ID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := store.CheckMaxAttempts(p.ID, hoppertype.JobState(state), attempt, p.MaxAttempts); err != nil {
			return err
		}
		job, err = scanJob(tx.QueryRow(ctx, s.sql(`UPDATE {schema}.jobs SET max_attempts = $2,
			updated_at = coalesce($3::timestamptz, now()) WHERE id = $1 RETURNING `+cols), p.ID, p.MaxAttempts, s.nowArg()))
		return err
	})
	if err != nil {
		return nil, s.wrap(err, "set the attempts of job %s", p.ID)
	}
	return job, nil
}
