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
// bounds the results together (their total is the last column but one): over it, none is
// read. ?4 bounds the rows (-1: all); the last column counts them all.
const parentResultsSQL = `WITH p AS (
	SELECT d.parent_id, d.parent_outcome, d.parent_index, j.id IS NOT NULL AS live, j.kind, j.workflow_step, j.state,
		j.last_error, j.finished_at, j.result
	FROM job_deps d LEFT JOIN jobs j ON j.id = d.parent_id AND (j.expires_at IS NULL OR j.expires_at > ?2)
	WHERE d.child_id = ?1),
t AS (SELECT coalesce(sum(length(CAST(result AS BLOB))), 0) AS total, count(*) AS n FROM p)
SELECT parent_id, parent_outcome, live, kind, workflow_step, state, last_error, finished_at,
	CASE WHEN ?3 <= 0 OR t.total <= ?3 THEN result END, t.total, t.n
FROM p, t ORDER BY parent_index IS NULL, parent_index, parent_id LIMIT ?4`

// parentsNoResultsSQL is parentResultsSQL without the results (ParentsParams.NoResults, ?3
// unused): the child's dependency rows are counted, and the first ?4 put in order, from
// job_deps alone; only those parents are read.
const parentsNoResultsSQL = `SELECT firsts.parent_id, firsts.parent_outcome, j.id IS NOT NULL, j.kind, j.workflow_step, j.state,
	j.last_error, j.finished_at, NULL, 0, (SELECT count(*) FROM job_deps c WHERE c.child_id = ?1)
FROM (SELECT parent_id, parent_outcome, parent_index FROM job_deps WHERE child_id = ?1
	ORDER BY parent_index IS NULL, parent_index, parent_id LIMIT ?4) firsts
LEFT JOIN jobs j ON j.id = firsts.parent_id AND (j.expires_at IS NULL OR j.expires_at > ?2)
ORDER BY firsts.parent_index IS NULL, firsts.parent_index, firsts.parent_id`

// JobParents returns the parents of a job (store.ParentStore), read on a reader.
func (s *Store) JobParents(ctx context.Context, p *store.ParentsParams) (*store.Parents, error) {
	now := micros(s.clock.Now())
	if err := s.parentsChild(ctx, p, now); err != nil {
		return nil, err
	}
	limit := -1
	if p.Limit > 0 {
		limit = p.Limit
	}
	query := parentResultsSQL
	if p.NoResults {
		query = parentsNoResultsSQL
	}
	rows, err := s.reader.QueryContext(ctx, query, p.ID, now, p.MaxResultBytes, limit)
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
		if err := rows.Scan(&r.ID, &outcome, &live, &kind, &step, &state, &le, &finished, &result, &out.ResultBytes, &out.Total); err != nil {
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

// childrenSQL reads a page of job ?1's live children (at ?2) after child id ?3; childrenCountSQL
// counts them.
const (
	childrenFrom = ` FROM job_deps d JOIN jobs j ON j.id = d.child_id
	WHERE d.parent_id = ?1 AND (j.expires_at IS NULL OR j.expires_at > ?2)`
	childrenSQL      = `SELECT ` + jobColumns + childrenFrom + ` AND d.child_id > ?3 ORDER BY d.child_id LIMIT ?4`
	childrenCountSQL = `SELECT count(*)` + childrenFrom
)

// JobChildren returns a page of a job's live children (store.ParentStore): the job's
// dependency rows are keyed by parent, so the page and the count read those rows alone, and
// each child by primary key.
func (s *Store) JobChildren(ctx context.Context, p *store.ChildrenParams) (*store.Children, error) {
	limit := store.PageLimit(p.Limit)
	after := ""
	if p.Cursor != "" {
		var err error
		if after, err = store.DecodeCursor(p.Cursor); err != nil {
			return nil, err
		}
	}
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return nil, wrap(err, "read the children of job %s", p.ID)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	now := micros(s.clock.Now())
	out := &store.Children{}
	if err := tx.QueryRowContext(ctx, childrenCountSQL, p.ID, now).Scan(&out.Total); err != nil {
		return nil, wrap(err, "count the children of job %s", p.ID)
	}
	rows, err := tx.QueryContext(ctx, childrenSQL, p.ID, now, after, limit+1)
	if err != nil {
		return nil, wrap(err, "read the children of job %s", p.ID)
	}
	if out.Jobs, err = scanJobs(rows); err != nil {
		return nil, wrap(err, "read the children of job %s", p.ID)
	}
	if len(out.Jobs) > limit {
		out.Jobs = out.Jobs[:limit]
		out.NextCursor = store.EncodeCursor(out.Jobs[limit-1].ID)
	}
	return out, nil
}
