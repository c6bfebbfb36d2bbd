package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/jobstate"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// cancelSetSQL is the SET of a cancel (JobCancel, WorkflowCancel) but for expires_at, on rows
// of jobs j with clk.now the time: $2 is the actor, $3 the reason, $4 the error a running
// attempt ends with. Canceling a running job fires the trigger's cancel notification, which
// reaches the node running it.
const cancelSetSQL = `state = 'canceled', version = j.version + 1, finished_at = clk.now, updated_at = clk.now,
	worker_id = CASE WHEN j.state = 'running' THEN j.worker_id END, lease_expires_at = NULL,
	last_actor = $2, last_reason = $3,
	last_outcome = CASE WHEN j.state = 'running' THEN 'canceled' ELSE j.last_outcome END,
	last_error = CASE WHEN j.state = 'running' THEN $4 ELSE j.last_error END,
	last_stack = NULL`

// cancelSQL cancels a non-terminal job.
const cancelSQL = `UPDATE {schema}.jobs j SET ` + cancelSetSQL + `, expires_at = $6
FROM (SELECT coalesce($1::timestamptz, now()) AS now) clk
WHERE j.id = $5 AND j.state IN ` + store.UnfinishedSQL + `
RETURNING ` + jCols

// JobCancel cancels a non-terminal job.
func (s *Store) JobCancel(ctx context.Context, p *store.CancelParams) (*hoppertype.JobRow, error) {
	job, err := scanJob(s.pool.QueryRow(ctx, s.sql(cancelSQL), s.nowArg(), string(p.Actor),
		nullStr(p.Reason), "canceled: "+p.Reason, p.ID, nullTime(p.ExpiresAt)))
	if err == nil {
		return job, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, s.wrap(err, "cancel job %s", p.ID)
	}
	var state string
	err = s.pool.QueryRow(ctx, s.sql(`SELECT state FROM {schema}.jobs WHERE id = $1 AND `+live), p.ID, s.nowArg()).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("cancel job %s: %w", p.ID, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.wrap(err, "cancel job %s", p.ID)
	}
	if err := jobstate.Check(hoppertype.JobState(state), hoppertype.StateCanceled); err != nil {
		return nil, fmt.Errorf("cancel job %s: %w", p.ID, err)
	}
	// It was canceled (or finished) between the two statements: a race the caller may retry.
	return nil, fmt.Errorf("cancel job %s: moved to %s meanwhile: %w", p.ID, state, store.ErrInvalidTransition)
}

// promoteSQL queues due scheduled jobs and, in the same round trip, finds the earliest run_at
// still scheduled (the last row, with a NULL id). The statement's snapshot still sees the
// promoted rows as scheduled, hence the NOT IN.
const promoteSQL = `WITH picked AS MATERIALIZED (
	SELECT id FROM {schema}.jobs
	WHERE state = 'scheduled' AND run_at <= coalesce($1::timestamptz, now())
	ORDER BY run_at LIMIT $2
	FOR UPDATE SKIP LOCKED
), promoted AS (
	UPDATE {schema}.jobs j SET
		state = 'queued', version = j.version + 1, updated_at = coalesce($1::timestamptz, now()),
		last_actor = 'leader', last_reason = 'run_at reached'
	FROM picked WHERE j.id = picked.id
	RETURNING j.id, j.queue
)
SELECT id, queue, NULL::timestamptz FROM promoted
UNION ALL
SELECT NULL, NULL, (SELECT s.run_at FROM {schema}.jobs s
	WHERE s.state = 'scheduled' AND s.id NOT IN (SELECT id FROM promoted)
	ORDER BY s.run_at LIMIT 1)`

// JobPromoteScheduled queues scheduled jobs whose run_at has come.
func (s *Store) JobPromoteScheduled(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	rs, err := s.pool.Query(ctx, s.sql(promoteSQL), s.nowArg(), limitOr(p.Limit, 1000))
	if err != nil {
		return nil, s.wrap(err, "promote scheduled jobs")
	}
	defer rs.Close()
	res := &store.PromoteResult{}
	seen := map[string]bool{}
	for rs.Next() {
		var id, queue *string
		var next *time.Time
		if err := rs.Scan(&id, &queue, &next); err != nil {
			return nil, s.wrap(err, "promote scheduled jobs")
		}
		if id == nil {
			res.NextRunAt = utc(next)
			continue
		}
		res.Promoted++
		if !seen[*queue] {
			seen[*queue] = true
			res.Queues = append(res.Queues, *queue)
		}
	}
	if err := rs.Err(); err != nil {
		return nil, s.wrap(err, "promote scheduled jobs")
	}
	return res, nil
}
