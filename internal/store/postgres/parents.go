package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// parentResultsSQL reads a job ($1) and its parents in one round trip: the job's state and token
// (no row: no such job, or it expired at $2), then one row per parent, found through its
// dependency rows (one look-up of job_deps_child, then each parent by primary key), in the
// order the job named them; a job without parents gives one row with a NULL parent. A parent
// expired, or deleted, joins no row: only its dependency row is left. $3 > 0 bounds the
// results together (their total is the last column but one): over it, none is read. $4
// bounds the rows (NULL: all); the last column counts the parents.
const parentResultsSQL = `WITH c AS (SELECT state, token FROM {schema}.jobs WHERE id = $1 AND ` + live + `),
p AS (SELECT d.parent_id, d.parent_outcome, d.parent_index, j.id IS NOT NULL AS live, j.kind, j.workflow_step, j.state,
		j.last_error, j.finished_at, j.result
	FROM {schema}.job_deps d LEFT JOIN {schema}.jobs j ON j.id = d.parent_id
		AND (j.expires_at IS NULL OR j.expires_at > coalesce($2::timestamptz, now()))
	WHERE d.child_id = $1),
t AS (SELECT coalesce(sum(octet_length(result)), 0)::bigint AS total, count(*) AS n FROM p)
SELECT c.state, c.token, p.parent_id, p.parent_outcome, coalesce(p.live, false), p.kind, p.workflow_step, p.state, p.last_error,
	p.finished_at, CASE WHEN $3::int <= 0 OR t.total <= $3::int THEN p.result END, t.total, t.n
FROM c CROSS JOIN t LEFT JOIN p ON true
ORDER BY p.parent_index NULLS LAST, p.parent_id LIMIT $4::int`

// parentsNoResultsSQL is parentResultsSQL without the results (ParentsParams.NoResults): the
// child's dependency rows are counted, and the first $3 (NULL: all) put in order, from job_deps
// alone; only those parents are read.
const parentsNoResultsSQL = `WITH c AS (SELECT state, token FROM {schema}.jobs WHERE id = $1 AND ` + live + `),
p AS (SELECT d.parent_id, d.parent_outcome, d.parent_index, j.id IS NOT NULL AS live, j.kind, j.workflow_step, j.state,
		j.last_error, j.finished_at
	FROM (SELECT parent_id, parent_outcome, parent_index FROM {schema}.job_deps WHERE child_id = $1
		ORDER BY parent_index NULLS LAST, parent_id LIMIT $3::int) d
	LEFT JOIN {schema}.jobs j ON j.id = d.parent_id
		AND (j.expires_at IS NULL OR j.expires_at > coalesce($2::timestamptz, now()))),
t AS (SELECT count(*) AS n FROM {schema}.job_deps WHERE child_id = $1)
SELECT c.state, c.token, p.parent_id, p.parent_outcome, coalesce(p.live, false), p.kind, p.workflow_step, p.state, p.last_error,
	p.finished_at, NULL::bytea, 0::bigint, t.n
FROM c CROSS JOIN t LEFT JOIN p ON true
ORDER BY p.parent_index NULLS LAST, p.parent_id`

// JobParents returns the parents of a job (store.ParentStore).
func (s *Store) JobParents(ctx context.Context, p *store.ParentsParams) (*store.Parents, error) {
	var limit *int
	if p.Limit > 0 {
		limit = &p.Limit
	}
	query, args := parentResultsSQL, []any{p.ID, s.nowArg(), p.MaxResultBytes, limit}
	if p.NoResults {
		query, args = parentsNoResultsSQL, []any{p.ID, s.nowArg(), limit}
	}
	rs, err := s.pool.Query(ctx, s.sql(query), args...)
	if err != nil {
		return nil, s.wrap(err, "read the parents of job %s", p.ID)
	}
	defer rs.Close()
	out := &store.Parents{Parents: []*hoppertype.ParentResult{}}
	var state string
	var token, total, n int64
	found := false
	for rs.Next() {
		found = true
		var (
			id, outcome, kind, step, pstate, lastErr *string
			live                                     bool
			finished                                 *time.Time
			result                                   []byte
		)
		if err := rs.Scan(&state, &token, &id, &outcome, &live, &kind, &step, &pstate, &lastErr, &finished, &result, &total, &n); err != nil {
			return nil, s.wrap(err, "read the parents of job %s", p.ID)
		}
		if id == nil {
			continue // the job has no parents
		}
		r := &hoppertype.ParentResult{ID: *id, Outcome: hoppertype.ParentOutcome(str(outcome)), Expired: !live,
			Kind: str(kind), Step: str(step), State: hoppertype.JobState(str(pstate)), Error: str(lastErr), FinishedAt: utc(finished)}
		if len(result) > 0 {
			r.Result = result
		}
		out.Parents = append(out.Parents, r)
	}
	if err := rs.Err(); err != nil {
		return nil, s.wrap(err, "read the parents of job %s", p.ID)
	}
	switch {
	case !found && !p.Unfenced:
		return nil, store.NoSuchJob(p.ID)
	case !found:
		return nil, fmt.Errorf("job %s: %w", p.ID, store.ErrNotFound)
	case !p.Unfenced && (token != p.Token || hoppertype.JobState(state) != hoppertype.StateRunning):
		return nil, fmt.Errorf("job %s token %d: %w", p.ID, p.Token, store.ErrLeaseLost)
	}
	out.ResultBytes, out.Total = int(total), int(n)
	out.ResultsOmitted = p.MaxResultBytes > 0 && out.ResultBytes > p.MaxResultBytes
	return out, nil
}

// childrenSQL reads a page of job $1's live children ($2 is now) after child id $3: its
// dependency rows are keyed by parent, each child read by primary key. childrenCountSQL
// counts them.
const (
	childrenFrom = ` FROM {schema}.job_deps d JOIN {schema}.jobs j ON j.id = d.child_id
	WHERE d.parent_id = $1 AND (j.expires_at IS NULL OR j.expires_at > coalesce($2::timestamptz, now()))`
	childrenSQL      = `SELECT ` + jCols + childrenFrom + ` AND d.child_id > $3 ORDER BY d.child_id LIMIT $4`
	childrenCountSQL = `SELECT count(*)` + childrenFrom
)

// JobChildren returns a page of a job's live children (store.ParentStore), and their count,
// in one repeatable-read transaction.
func (s *Store) JobChildren(ctx context.Context, p *store.ChildrenParams) (*store.Children, error) {
	limit := store.PageLimit(p.Limit)
	after := ""
	if p.Cursor != "" {
		var err error
		if after, err = store.DecodeCursor(p.Cursor); err != nil {
			return nil, err
		}
	}
	out := &store.Children{}
	err := s.runTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, s.sql(childrenCountSQL), p.ID, s.nowArg()).Scan(&out.Total); err != nil {
			return fmt.Errorf("count: %w", err)
		}
		rs, err := tx.Query(ctx, s.sql(childrenSQL), p.ID, s.nowArg(), after, limit+1)
		if err != nil {
			return err
		}
		out.Jobs, err = scanJobs(rs)
		return err
	})
	if err != nil {
		return nil, s.wrap(err, "read the children of job %s", p.ID)
	}
	if len(out.Jobs) > limit {
		out.Jobs = out.Jobs[:limit]
		out.NextCursor = store.EncodeCursor(out.Jobs[limit-1].ID)
	}
	return out, nil
}
