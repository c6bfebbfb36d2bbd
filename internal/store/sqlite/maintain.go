package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/jobstate"
	"github.com/hopperjobs/hopper/internal/store"
)

// cancelSetSQL is the SET of a cancel (JobCancel, WorkflowCancel) but for expires_at: ?1 is
// now, ?2 the actor, ?3 the reason, ?4 the error a running attempt ends with.
const cancelSetSQL = `state = 'canceled', version = version + 1, finished_at = ?1, updated_at = ?1,
	worker_id = CASE WHEN state = 'running' THEN worker_id END, lease_expires_at = NULL,
	last_actor = ?2, last_reason = ?3,
	last_outcome = CASE WHEN state = 'running' THEN 'canceled' ELSE last_outcome END,
	last_error = CASE WHEN state = 'running' THEN ?4 ELSE last_error END,
	last_stack = NULL`

// JobCancel cancels a non-terminal job.
func (s *Store) JobCancel(ctx context.Context, p *store.CancelParams) (*hoppertype.JobRow, error) {
	var job *hoppertype.JobRow
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := micros(s.clock.Now())
		var err error
		job, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET `+cancelSetSQL+`, expires_at = ?6
			WHERE id = ?5 AND state IN `+store.UnfinishedSQL+`
			RETURNING `+jobColumns, now, string(p.Actor), nullString(p.Reason), "canceled: "+p.Reason, p.ID,
			nullMicros(p.ExpiresAt)))
		if err == nil {
			return releaseCanceled(ctx, tx, []*hoppertype.JobRow{job}, p.Actor)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var state string
		err = tx.QueryRowContext(ctx, `SELECT state FROM jobs WHERE id = ?1 AND `+live, p.ID, now).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("job %s: %w", p.ID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return jobstate.Check(hoppertype.JobState(state), hoppertype.StateCanceled)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel job %s: %w", p.ID, err)
	}
	return job, nil
}

// JobPromoteScheduled queues scheduled jobs whose run_at has come.
func (s *Store) JobPromoteScheduled(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	res := &store.PromoteResult{}
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := micros(s.clock.Now())
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET
			state = 'queued', version = version + 1, updated_at = ?1, last_actor = 'leader', last_reason = 'run_at reached'
			WHERE id IN (SELECT id FROM jobs WHERE state = 'scheduled' AND run_at <= ?1 ORDER BY run_at LIMIT ?2)
			RETURNING id, queue`, now, limitOr(p.Limit, 1000))
		if err != nil {
			return err
		}
		ids, queues, err := idsAndQueues(rows)
		if err != nil {
			return err
		}
		res.Promoted, res.Queues = len(ids), queues
		var next sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT min(run_at) FROM jobs WHERE state = 'scheduled'`).Scan(&next); err != nil {
			return err
		}
		res.NextRunAt = nullTime(next)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("promote scheduled jobs: %w", err)
	}
	return res, nil
}

// idsAndQueues reads (id, queue) rows into the ids and the distinct queues.
func idsAndQueues(rows *sql.Rows) ([]string, []string, error) {
	defer rows.Close()
	var ids, queues []string
	seen := map[string]bool{}
	for rows.Next() {
		var id, q string
		if err := rows.Scan(&id, &q); err != nil {
			return nil, nil, err
		}
		ids = append(ids, id)
		if !seen[q] {
			seen[q] = true
			queues = append(queues, q)
		}
	}
	return ids, queues, rows.Err()
}

func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// releaseCanceled releases the children of the jobs just canceled, those that have any.
func releaseCanceled(ctx context.Context, tx *sql.Tx, jobs []*hoppertype.JobRow, actor hoppertype.Actor) error {
	var ended []*store.Ending
	for _, j := range jobs {
		if j.HasChildren {
			ended = append(ended, &store.Ending{ID: j.ID, Outcome: store.ParentCanceled, ExpiresAt: j.ExpiresAt, Actor: actor})
		}
	}
	if len(ended) == 0 {
		return nil
	}
	_, err := release(ctx, tx, ended, jobs[0].UpdatedAt)
	return err
}
