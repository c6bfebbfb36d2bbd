package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// parentResultsSQL reads a job ($1) and its parents in one round trip: the job's state and token
// (no row: no such job, or it expired at $2), then one row per parent, found through its
// dependency rows (one look-up of job_deps_child, then each parent by primary key), in the
// order the job named them; a job without parents gives one row with a NULL parent. A parent
// expired, or deleted, joins no row: only its dependency row is left. $3 > 0 bounds the
// results together (their total is the last column): over it, none is read.
const parentResultsSQL = `WITH c AS (SELECT state, token FROM {schema}.jobs WHERE id = $1 AND ` + live + `),
p AS (SELECT d.parent_id, d.parent_outcome, d.parent_index, j.id IS NOT NULL AS live, j.kind, j.workflow_step, j.state,
		j.last_error, j.finished_at, j.result
	FROM {schema}.job_deps d LEFT JOIN {schema}.jobs j ON j.id = d.parent_id
		AND (j.expires_at IS NULL OR j.expires_at > coalesce($2::timestamptz, now()))
	WHERE d.child_id = $1),
t AS (SELECT coalesce(sum(octet_length(result)), 0)::bigint AS total FROM p)
SELECT c.state, c.token, p.parent_id, p.parent_outcome, coalesce(p.live, false), p.kind, p.workflow_step, p.state, p.last_error,
	p.finished_at, CASE WHEN $3::int <= 0 OR t.total <= $3::int THEN p.result END, t.total
FROM c CROSS JOIN t LEFT JOIN p ON true
ORDER BY p.parent_index NULLS LAST, p.parent_id`

// JobParents returns the parents of a job (store.ParentStore).
func (s *Store) JobParents(ctx context.Context, p *store.ParentsParams) (*store.Parents, error) {
	rs, err := s.pool.Query(ctx, s.sql(parentResultsSQL), p.ID, s.nowArg(), p.MaxResultBytes)
	if err != nil {
		return nil, s.wrap(err, "read the parents of job %s", p.ID)
	}
	defer rs.Close()
	out := &store.Parents{Parents: []*hoppertype.ParentResult{}}
	var state string
	var token, total int64
	found := false
	for rs.Next() {
		found = true
		var (
			id, outcome, kind, step, pstate, lastErr *string
			live                                     bool
			finished                                 *time.Time
			result                                   []byte
		)
		if err := rs.Scan(&state, &token, &id, &outcome, &live, &kind, &step, &pstate, &lastErr, &finished, &result, &total); err != nil {
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
	out.ResultBytes = int(total)
	out.ResultsOmitted = p.MaxResultBytes > 0 && out.ResultBytes > p.MaxResultBytes
	return out, nil
}
