package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// JobGet returns one job.
func (s *Store) JobGet(ctx context.Context, id string) (*hoppertype.JobRow, error) {
	job, err := scanJob(s.pool.QueryRow(ctx, s.sql(`SELECT `+cols+` FROM {schema}.jobs WHERE id = $1 AND `+live), id, s.nowArg()))
	if errors.Is(err, pgx.ErrNoRows) {
		s.removeExpired(ctx, id)
		return nil, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.wrap(err, "get job %s", id)
	}
	return job, nil
}

// removeExpiredSQL deletes one expired job, unless its idempotency key is live (as the sweep
// does). Rows another transaction holds are left to the sweep.
const removeExpiredSQL = `DELETE FROM {schema}.jobs j USING (
	SELECT id FROM {schema}.jobs WHERE id = $1 AND expires_at <= coalesce($2::timestamptz, now())
	  AND NOT EXISTS (SELECT 1 FROM {schema}.idempotency_keys k
	                  WHERE k.job_id = $1 AND k.expires_at > coalesce($2::timestamptz, now()))
	FOR UPDATE SKIP LOCKED
) picked WHERE j.id = picked.id`

// removeExpired deletes the job a read did not find if it is there but expired (contract 12:
// removed lazily on read, swept periodically), so that once a reader was told it is gone, a
// clock stepped back cannot bring it back. An unknown id costs one index probe and writes
// nothing. It is best effort: if it fails, the sweep deletes the job later.
func (s *Store) removeExpired(ctx context.Context, id string) {
	_, _ = s.pool.Exec(ctx, s.sql(removeExpiredSQL), id, s.nowArg())
}

// JobList returns one page of jobs, filtered, in id (creation) order.
func (s *Store) JobList(ctx context.Context, p *store.ListParams) (*store.ListResult, error) {
	query, args, err := listQuery(p, s.nowArg())
	if err != nil {
		return nil, err
	}
	rs, err := s.pool.Query(ctx, s.sql(query), args...)
	if err != nil {
		return nil, s.wrap(err, "list jobs")
	}
	jobs, err := scanJobs(rs)
	if err != nil {
		return nil, s.wrap(err, "list jobs")
	}
	limit := store.PageLimit(p.Limit)
	res := &store.ListResult{Jobs: jobs}
	if len(jobs) > limit {
		res.Jobs = jobs[:limit]
		res.NextCursor = store.EncodeCursor(jobs[limit-1].ID)
	}
	return res, nil
}

// listQuery builds JobList's statement. Only fixed column names and operators enter the SQL;
// every value is a parameter, and list filters are arrays, so the number of distinct
// statements (each prepared once per connection) stays small. now is the store's nowArg:
// expired jobs are gone for readers, swept or not (contract 12).
func listQuery(p *store.ListParams, now any) (string, []any, error) {
	where := []string{"(expires_at IS NULL OR expires_at > coalesce($1::timestamptz, now()))"}
	args := []any{now}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if len(p.States) > 0 {
		states := make([]string, len(p.States))
		for i, st := range p.States {
			states[i] = string(st)
		}
		add("state = ANY($%d::text[])", states)
	}
	if len(p.Queues) > 0 {
		add("queue = ANY($%d::text[])", p.Queues)
	}
	if len(p.Kinds) > 0 {
		add("kind = ANY($%d::text[])", p.Kinds)
	}
	if len(p.ErrorCodes) > 0 {
		add("last_error_code = ANY($%d::text[])", p.ErrorCodes)
	}
	if len(p.FairnessKeys) > 0 {
		add("fairness_key = ANY($%d::text[])", p.FairnessKeys)
	}
	if !p.CreatedAfter.IsZero() {
		add("created_at >= $%d", p.CreatedAfter)
	}
	if !p.CreatedBefore.IsZero() {
		add("created_at < $%d", p.CreatedBefore)
	}
	if !p.FinishedAfter.IsZero() {
		add("finished_at >= $%d", p.FinishedAfter)
	}
	if !p.FinishedBefore.IsZero() {
		add("finished_at < $%d", p.FinishedBefore)
	}
	if p.ArgsContains != "" {
		add("position($%d::bytea IN args) > 0", []byte(p.ArgsContains))
	}
	if p.ExcludeReplayed {
		where = append(where, notReplayed)
	}
	order, cmp := "DESC", "<"
	if p.Ascending {
		order, cmp = "ASC", ">"
	}
	if p.Cursor != "" {
		after, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return "", nil, err
		}
		add("id "+cmp+" $%d", after)
	}
	query := `SELECT ` + cols + ` FROM {schema}.jobs WHERE ` + strings.Join(where, " AND ")
	args = append(args, store.PageLimit(p.Limit)+1)
	query += fmt.Sprintf(" ORDER BY id %s LIMIT $%d", order, len(args))
	return query, args, nil
}

// live is the condition of a job that has not expired, with the store's nowArg as $2.
const live = `(expires_at IS NULL OR expires_at > coalesce($2::timestamptz, now()))`

// jLive is live for the job j of a join.
const jLive = `(j.expires_at IS NULL OR j.expires_at > coalesce($2::timestamptz, now()))`
