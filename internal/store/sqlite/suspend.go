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

var _ store.SuspendStore = (*Store)(nil)

// JobResume moves a suspended job to queued with its resume data.
func (s *Store) JobResume(ctx context.Context, p *store.ResumeParams) (*hoppertype.JobRow, error) {
	var job *hoppertype.JobRow
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := micros(s.clock.Now())
		var err error
		job, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET
			state = 'queued', version = version + 1, run_at = ?1, updated_at = ?1, deadline_at = NULL,
			resume_data = ?2, last_actor = ?3, last_reason = ?4
			WHERE id = ?5 AND state = 'suspended' AND (deadline_at IS NULL OR deadline_at > ?1)
			RETURNING `+jobColumns, now, nullBytes(p.Data), string(p.Actor), nullString(p.Reason), p.ID))
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
		if state == string(hoppertype.StateSuspended) {
			return fmt.Errorf("its suspension deadline has passed: %w", store.ErrInvalidTransition)
		}
		return &jobstate.TransitionError{From: hoppertype.JobState(state), To: hoppertype.StateQueued}
	})
	if err != nil {
		return nil, fmt.Errorf("resume job %s: %w", p.ID, err)
	}
	return job, nil
}

// JobFailOverdue fails suspended jobs whose deadline has passed, counting them as failed in
// the minute stats.
func (s *Store) JobFailOverdue(ctx context.Context, p *store.OverdueParams) ([]string, error) {
	var ids []string
	err := s.write(ctx, []string{statsSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		now := s.clock.Now()
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET
			state = 'failed', version = version + 1, finished_at = ?1, updated_at = ?1,
			last_actor = 'leader', last_reason = 'suspension deadline passed',
			last_error = 'still suspended at its deadline', expires_at = ?3
			WHERE id IN (SELECT id FROM jobs WHERE state = 'suspended' AND state IN ('failed', 'canceled', 'suspended') AND deadline_at <= ?1
			             ORDER BY deadline_at LIMIT ?2)
			RETURNING id, queue, kind`, micros(now), limitOr(p.Limit, 1000), nullMicros(p.ExpiresAt))
		if err != nil {
			return err
		}
		defer rows.Close()
		stats := store.NewStatsBatch(now)
		for rows.Next() {
			var id, queue, kind string
			if err := rows.Scan(&id, &queue, &kind); err != nil {
				return err
			}
			ids = append(ids, id)
			stats.Failed(queue, kind)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		if err := releaseFailed(ctx, tx, ids, hoppertype.ActorLeader, now); err != nil {
			return err
		}
		return writeStats(ctx, stmts[0], stats)
	})
	if err != nil {
		return nil, fmt.Errorf("fail overdue suspended jobs: %w", err)
	}
	return ids, nil
}
