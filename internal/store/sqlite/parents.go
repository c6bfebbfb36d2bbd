package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// parentResultsSQL reads a child's (?1) parents through its dependency rows: one look-up of the
// job_deps_child index, then each parent by primary key, in the order the child named them.
// A parent expired at ?2, or deleted, joins no row: only its dependency row is left. ?3 > 0
// bounds the results together (their total is the last column): over it, none is read.
const parentResultsSQL = `WITH p AS (
	SELECT d.parent_id, d.parent_outcome, d.parent_index, j.id IS NOT NULL AS live, j.kind, j.workflow_step, j.state,
		j.last_error, j.finished_at, j.result
	FROM job_deps d LEFT JOIN jobs j ON j.id = d.parent_id AND (j.expires_at IS NULL OR j.expires_at > ?2)
	WHERE d.child_id = ?1),
t AS (SELECT coalesce(sum(length(CAST(result AS BLOB))), 0) AS total FROM p)
SELECT parent_id, parent_outcome, live, kind, workflow_step, state, last_error, finished_at,
	CASE WHEN ?3 <= 0 OR t.total <= ?3 THEN result END, t.total
FROM p, t ORDER BY parent_index IS NULL, parent_index, parent_id`

// JobParents returns the parents of a job (store.ParentStore), read on a reader.
func (s *Store) JobParents(ctx context.Context, p *store.ParentsParams) (*store.Parents, error) {
	now := micros(s.clock.Now())
	if err := s.parentsChild(ctx, p, now); err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, parentResultsSQL, p.ID, now, p.MaxResultBytes)
	if err != nil {
		return nil, wrap(err, "read the parents of job %s", p.ID)
	}
	defer rows.Close()
	out := &store.Parents{Parents: []*hoppertype.ParentResult{}}
	for rows.Next() {
		var (
			r                              hoppertype.ParentResult
			outcome, kind, step, state, le sql.NullString
			live                           bool
			finished                       sql.NullInt64
			result                         []byte
		)
		if err := rows.Scan(&r.ID, &outcome, &live, &kind, &step, &state, &le, &finished, &result, &out.ResultBytes); err != nil {
			return nil, wrap(err, "read the parents of job %s", p.ID)
		}
		r.Outcome, r.Expired = hoppertype.ParentOutcome(outcome.String), !live
		r.Kind, r.Step, r.State, r.Error, r.FinishedAt = kind.String, step.String, hoppertype.JobState(state.String), le.String, nullTime(finished)
		if len(result) > 0 {
			r.Result = result
		}
		out.Parents = append(out.Parents, &r)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "read the parents of job %s", p.ID)
	}
	out.ResultsOmitted = p.MaxResultBytes > 0 && out.ResultBytes > p.MaxResultBytes
	return out, nil
}

// parentsChild checks the job whose parents are read: it exists and has not expired at now
// and, with a token, runs under it.
func (s *Store) parentsChild(ctx context.Context, p *store.ParentsParams, now int64) error {
	var state string
	var token int64
	err := s.reader.QueryRowContext(ctx, `SELECT state, token FROM jobs WHERE id = ?1
		AND (expires_at IS NULL OR expires_at > ?2)`, p.ID, now).Scan(&state, &token)
	switch {
	case errors.Is(err, sql.ErrNoRows) && !p.Unfenced:
		return store.NoSuchJob(p.ID)
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("job %s: %w", p.ID, store.ErrNotFound)
	case err != nil:
		return wrap(err, "read job %s", p.ID)
	case !p.Unfenced && (token != p.Token || hoppertype.JobState(state) != hoppertype.StateRunning):
		return fmt.Errorf("job %s token %d: %w", p.ID, p.Token, store.ErrLeaseLost)
	}
	return nil
}
