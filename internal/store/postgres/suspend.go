package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/jobstate"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

var _ store.SuspendStore = (*Store)(nil)

const resumeSQL = `UPDATE {schema}.jobs SET
	state = 'queued', version = version + 1, run_at = coalesce($1::timestamptz, now()),
	updated_at = coalesce($1::timestamptz, now()), deadline_at = NULL, resume_data = $2,
	last_actor = $3, last_reason = $4
WHERE id = $5 AND state = 'suspended'
  AND (deadline_at IS NULL OR deadline_at > coalesce($1::timestamptz, now()))
RETURNING ` + cols

// JobResume moves a suspended job to queued with its resume data; the update trigger records
// the transition and wakes the queue's workers.
func (s *Store) JobResume(ctx context.Context, p *store.ResumeParams) (*hoppertype.JobRow, error) {
	job, err := scanJob(s.pool.QueryRow(ctx, s.sql(resumeSQL), s.nowArg(), nullBytes(p.Data), string(p.Actor),
		nullStr(p.Reason), p.ID))
	if err == nil {
		return job, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, s.wrap(err, "resume job %s", p.ID)
	}
	var state string
	err = s.pool.QueryRow(ctx, s.sql(`SELECT state FROM {schema}.jobs WHERE id = $1 AND `+live), p.ID, s.nowArg()).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("resume job %s: %w", p.ID, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.wrap(err, "resume job %s", p.ID)
	}
	if state == string(hoppertype.StateSuspended) {
		return nil, fmt.Errorf("resume job %s: its suspension deadline has passed: %w", p.ID, store.ErrInvalidTransition)
	}
	return nil, fmt.Errorf("resume job %s: %w", p.ID,
		&jobstate.TransitionError{From: hoppertype.JobState(state), To: hoppertype.StateQueued})
}

// overdueSQL fails suspended jobs whose deadline has passed, counting them as failed in the
// minute stats; rows another transaction holds (a resume in flight) are skipped.
var overdueSQL = `WITH picked AS MATERIALIZED (
	SELECT id FROM {schema}.jobs
	WHERE state = 'suspended' AND deadline_at <= coalesce($1::timestamptz, now())
	ORDER BY deadline_at LIMIT $2
	FOR UPDATE SKIP LOCKED
), failed AS (
	UPDATE {schema}.jobs j SET
	state = 'failed', version = j.version + 1, finished_at = coalesce($1::timestamptz, now()),
	updated_at = coalesce($1::timestamptz, now()), last_actor = 'leader',
	last_reason = 'suspension deadline passed', last_error = 'still suspended at its deadline',
	expires_at = $3
	FROM picked WHERE j.id = picked.id
	RETURNING j.id, j.kind, j.queue, j.state
), ` + statsFailedSQL("failed") + `
SELECT id FROM failed`

// JobFailOverdue fails suspended jobs whose deadline has passed.
func (s *Store) JobFailOverdue(ctx context.Context, p *store.OverdueParams) ([]string, error) {
	var ids []string
	if err := s.runSteps(ctx, s.overdueStep(p, &ids)); err != nil {
		return nil, err
	}
	return ids, nil
}

func (s *Store) overdueStep(p *store.OverdueParams, ids *[]string) step {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	return step{what: "fail overdue suspended jobs", sql: overdueSQL,
		args: []any{s.nowArg(), limit, nullTime(p.ExpiresAt)},
		read: func(rs pgx.Rows) error {
			out, err := pgx.CollectRows(rs, pgx.RowTo[string])
			*ids = out
			return err
		}}
}
