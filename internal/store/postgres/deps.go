package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// Dependencies: store/deps.go says how they are kept. In PostgreSQL the release is the
// trigger jobs_release (migration 0030), so that every statement that ends a job with
// children releases them in its own transaction; the insert of a child is here.

// flagSQL marks a child's parents as having children, and reads how each stands. It locks
// them in id order (one lock order for every insert), FOR NO KEY UPDATE, the lock an ending's
// UPDATE takes: it waits for an ending in flight and then reads the parent as that ending left
// it; either the ending committed first (the parent is terminal here and the child counts it
// as ended) or it runs after this insert commits and sees the flag (the trigger releases). A
// parent already flagged is not written again (a fan-out of N children costs one write of it).
const flagSQL = `WITH l AS MATERIALIZED (SELECT id, state, parent_skipped, expires_at, has_children FROM {schema}.jobs
	WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE),
f AS (UPDATE {schema}.jobs j SET has_children = true FROM l WHERE j.id = l.id AND NOT l.has_children)
SELECT id, state, parent_skipped, expires_at FROM l`

// depRowsSQL records a child's ($1) parents ($2), in the order it named them, with the
// outcomes of those that ended ($3).
const depRowsSQL = `INSERT INTO {schema}.job_deps (parent_id, child_id, parent_outcome, parent_index)
SELECT p, $1, o, n - 1 FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(p, o, n) ON CONFLICT DO NOTHING`

// startSQL sets a new child's ($1) unended parents ($9) and settles it at once when none is
// left or one failed ($2), as jobs_release would: dep_next decides for both. $3 is now, $4
// the actor, $5–$7 the reasons of a release, a cancel and a skip, $8 the expiry of a child
// canceled without a result TTL of its own.
const startSQL = `UPDATE {schema}.jobs j SET parents_pending = $9::int,
	state = {schema}.dep_next($2, j.on_parent_failure, $9, j.run_at, clk.now),
	version = j.version + CASE WHEN {schema}.dep_next($2, j.on_parent_failure, $9, j.run_at, clk.now) = 'waiting' THEN 0 ELSE 1 END,
	run_at = CASE WHEN {schema}.dep_next($2, j.on_parent_failure, $9, j.run_at, clk.now) = 'queued' THEN clk.now ELSE j.run_at END,
	finished_at = CASE WHEN {schema}.dep_next($2, j.on_parent_failure, $9, j.run_at, clk.now) = 'canceled' THEN clk.now END,
	parent_skipped = $2::boolean AND j.on_parent_failure = 'skip',
	expires_at = CASE WHEN NOT $2 OR j.on_parent_failure = 'run' THEN j.expires_at
		WHEN j.result_ttl_us > 0 THEN clk.now + j.result_ttl_us * interval '1 microsecond' ELSE $8::timestamptz END,
	updated_at = clk.now,
	last_actor = CASE WHEN {schema}.dep_next($2, j.on_parent_failure, $9, j.run_at, clk.now) = 'waiting' THEN j.last_actor ELSE $4 END,
	last_reason = CASE {schema}.dep_next($2, j.on_parent_failure, $9, j.run_at, clk.now)
		WHEN 'waiting' THEN j.last_reason
		WHEN 'canceled' THEN CASE WHEN j.on_parent_failure = 'skip' THEN $7 ELSE $6 END
		ELSE $5 END
FROM (SELECT coalesce($3::timestamptz, now()) AS now) clk
WHERE j.id = $1 AND j.state = 'waiting'
RETURNING ` + jCols

// linkChildren records the parents of the batch's new children, inside tx, and settles each
// child whose parents have all ended or one failed; the results get the children as they
// stand.
func (s *Store) linkChildren(ctx context.Context, tx db, plan *insertPlan) error {
	for i, p := range plan.params {
		res := plan.results[i]
		if len(p.After) == 0 || res.Existing || res.Job.ID != p.ID {
			continue
		}
		job, err := s.linkChild(ctx, tx, i, p)
		if err != nil {
			return err
		}
		res.Job = job
	}
	return nil
}

func (s *Store) linkChild(ctx context.Context, tx db, item int, p *store.InsertParams) (*hoppertype.JobRow, error) {
	ids := store.UniqueParents(p.After)
	rs, err := tx.query(ctx, s.sql(flagSQL), ids)
	if err != nil {
		return nil, fmt.Errorf("flag parents of job %s: %w", p.ID, err)
	}
	found := map[string]*store.Parent{}
	for rs.Next() {
		par := &store.Parent{}
		var state string
		var expires *time.Time
		if err := rs.Scan(&par.ID, &state, &par.Skipped, &expires); err != nil {
			rs.Close()
			return nil, fmt.Errorf("flag parents of job %s: %w", p.ID, err)
		}
		par.State, par.ExpiresAt = hoppertype.JobState(state), utc(expires)
		found[par.ID] = par
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("flag parents of job %s: %w", p.ID, err)
	}
	parents := make([]*store.Parent, len(ids))
	outcomes := make([]*string, len(ids))
	for n, id := range ids {
		if parents[n] = found[id]; parents[n] == nil {
			return nil, store.UnknownParent(item, indexOf(p.After, id), id)
		}
		if parents[n].State.Terminal() {
			outcomes[n] = nullStr(string(store.OutcomeOf(parents[n].State, parents[n].Skipped)))
		}
	}
	if err := exec(ctx, tx, s.sql(depRowsSQL), p.ID, ids, outcomes); err != nil {
		return nil, fmt.Errorf("record parents of job %s: %w", p.ID, err)
	}
	return s.startChild(ctx, tx, p, parents)
}

// startChild runs startSQL for the new child p.
func (s *Store) startChild(ctx context.Context, tx db, p *store.InsertParams, parents []*store.Parent) (*hoppertype.JobRow, error) {
	pending, e := store.ChildStart(parents)
	if e == nil {
		last := parents[len(parents)-1]
		e = &store.Ending{ID: last.ID, Outcome: store.OutcomeOf(last.State, last.Skipped)}
	}
	released, canceled, skipped := e.Reasons()
	rs, err := tx.query(ctx, s.sql(startSQL), p.ID, e.Outcome.Failed(), s.nowArg(), string(p.Actor),
		released, canceled, skipped, nullTime(e.ExpiresAt), pending)
	if err != nil {
		return nil, fmt.Errorf("settle job %s: %w", p.ID, err)
	}
	jobs, err := scanJobs(rs)
	if err != nil {
		return nil, fmt.Errorf("settle job %s: %w", p.ID, err)
	}
	if len(jobs) != 1 {
		return nil, fmt.Errorf("settle job %s: %d rows", p.ID, len(jobs))
	}
	return jobs[0], nil
}

// exec runs a statement that returns no rows through d.
func exec(ctx context.Context, d db, query string, args ...any) error {
	rs, err := d.query(ctx, query, args...)
	if err != nil {
		return err
	}
	rs.Close()
	return rs.Err()
}

func indexOf(ids []string, id string) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}
