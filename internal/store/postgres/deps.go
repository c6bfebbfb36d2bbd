package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// Dependencies: store/deps.go says how they are kept. In PostgreSQL the release is
// release_children (migration 0032), which the history's statement trigger calls for the jobs
// with children a statement ended, so that every statement that ends one releases its children
// in its own transaction, locking them in id order; the insert of a child is here.

// flagSQL marks a child's parents as having children, and reads how each stands. A parent
// named ($1) that a compaction replaced stands for the job it was compacted into, followed
// through later compactions (docs/workflows.md); the first column is the name, the second the
// job. It locks the jobs in id order (one lock order for every insert), FOR NO KEY UPDATE, the
// lock an ending's UPDATE takes: it waits for an ending in flight and then reads the parent as
// that ending left it; either the ending committed first (the parent is terminal here and the
// child counts it as ended) or it runs after this insert commits and sees the flag (the
// trigger releases). A parent already flagged is not written again (a fan-out of N children
// costs one write of it).
const flagSQL = `WITH RECURSIVE named AS (
	SELECT n COLLATE "C", n COLLATE "C" AS id, 0 AS depth FROM unnest($1::text[]) AS n
	UNION ALL
	SELECT named.n, c.new_job_id, named.depth + 1 FROM named
	JOIN {schema}.job_compactions c ON c.replaced_job_id = named.id
),
r AS (SELECT DISTINCT ON (n) n, id FROM named ORDER BY n, depth DESC),
l AS MATERIALIZED (SELECT id, state, parent_skipped, expires_at, has_children FROM {schema}.jobs
	WHERE id = ANY(ARRAY(SELECT id FROM r)) ORDER BY id FOR NO KEY UPDATE),
f AS (UPDATE {schema}.jobs j SET has_children = true FROM l WHERE j.id = l.id AND NOT l.has_children)
SELECT r.n, l.id, l.state, l.parent_skipped, l.expires_at FROM r JOIN l ON l.id = r.id`

// compactedSQL names which of the jobs $1 a compaction replaced.
const compactedSQL = `SELECT replaced_job_id FROM {schema}.job_compactions WHERE replaced_job_id = ANY($1::text[])`

// depRowsSQL records a child's ($1) parents ($2), in the order it named them, with the
// outcomes of those that ended ($3).
const depRowsSQL = `INSERT INTO {schema}.job_deps (parent_id, child_id, parent_outcome, parent_index)
SELECT p, $1, o, n - 1 FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(p, o, n) ON CONFLICT DO NOTHING`

// startSQL sets a new child's ($1) unended parents ($9) and settles it at once when none is
// left or one failed ($2), as release_children would: dep_next decides for both. $3 is now, $4
// the actor, $5–$7 the reasons of a release, a cancel and a skip, $8 the expiry of a child
// canceled without a result TTL of its own, $10 the parent whose failure cancels it.
const startSQL = `UPDATE {schema}.jobs j SET parents_pending = $9::int,
	state = {schema}.dep_next($2, j.on_parent_failure, $9, j.run_at, clk.now),
	version = j.version + CASE WHEN {schema}.dep_next($2, j.on_parent_failure, $9, j.run_at, clk.now) = 'waiting' THEN 0 ELSE 1 END,
	run_at = CASE WHEN {schema}.dep_next($2, j.on_parent_failure, $9, j.run_at, clk.now) = 'queued' THEN clk.now ELSE j.run_at END,
	finished_at = CASE WHEN {schema}.dep_next($2, j.on_parent_failure, $9, j.run_at, clk.now) = 'canceled' THEN clk.now END,
	parent_skipped = $2::boolean AND j.on_parent_failure = 'skip',
	canceled_by = CASE WHEN $2::boolean AND j.on_parent_failure = 'cancel' THEN $10::text END,
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
// stand. A child that names an item of the batch the store returned another job for (its key
// named a job already there, or it merged) waits for that job (store.Aliases).
func (s *Store) linkChildren(ctx context.Context, tx db, plan *insertPlan) error {
	aliases, flagged := store.Aliases{}, store.FlaggedParents{}
	for i, p := range plan.params {
		aliases.Note(p, plan.results[i])
	}
	for i, p := range plan.params {
		res := plan.results[i]
		if len(p.After) == 0 || res.Existing || res.Job.ID != p.ID {
			continue
		}
		job, err := s.linkChild(ctx, tx, i, p, aliases.Resolve(p.After), flagged)
		if err != nil {
			return err
		}
		res.Job = job
	}
	return nil
}

// linkChild links the new child p to its parents after (p.After, the call's aliases resolved);
// flagged are the parents the call has flagged, each once.
func (s *Store) linkChild(ctx context.Context, tx db, item int, p *store.InsertParams, after []string, flagged store.FlaggedParents) (*hoppertype.JobRow, error) {
	names := store.UniqueParents(after)
	if fresh := flagged.Missing(names); len(fresh) > 0 {
		found, err := s.flagParents(ctx, tx, fresh)
		if err != nil {
			return nil, fmt.Errorf("flag parents of job %s: %w", p.ID, err)
		}
		flagged.Add(found)
	}
	found := flagged
	var parents []*store.Parent
	var ids []string
	var outcomes []*string
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		par := found[name]
		if par == nil {
			return nil, store.UnknownParent(item, indexOf(after, name), name)
		}
		if seen[par.ID] {
			continue // two names of one job: compacted into it, or an alias of the call
		}
		seen[par.ID] = true
		var outcome *string
		if par.State.Terminal() {
			outcome = nullStr(string(store.OutcomeOf(par.State, par.Skipped)))
		}
		parents, ids, outcomes = append(parents, par), append(ids, par.ID), append(outcomes, outcome)
	}
	if err := exec(ctx, tx, s.sql(depRowsSQL), p.ID, ids, outcomes); err != nil {
		return nil, fmt.Errorf("record parents of job %s: %w", p.ID, err)
	}
	return s.startChild(ctx, tx, p, parents)
}

// flagParents runs flagSQL for the parents names and returns the job each stands for (none
// for a name of no job). A parent canceled while this statement waited for its lock may have
// been compacted: its lineage, committed after the statement began, is read again, and the
// names flagged again until no parent found canceled turns out to be compacted.
func (s *Store) flagParents(ctx context.Context, tx db, names []string) (map[string]*store.Parent, error) {
	for {
		found, err := s.flagOnce(ctx, tx, names)
		if err != nil {
			return nil, err
		}
		var canceled []string
		for _, par := range found {
			if par.State == hoppertype.StateCanceled && !par.Skipped {
				canceled = append(canceled, par.ID)
			}
		}
		if len(canceled) == 0 {
			return found, nil
		}
		rs, err := tx.query(ctx, s.sql(compactedSQL), canceled)
		if err != nil {
			return nil, err
		}
		n := 0
		for rs.Next() {
			n++
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, err
		}
		if n == 0 {
			return found, nil
		}
	}
}

// flagOnce runs flagSQL once: the job each name stands for.
func (s *Store) flagOnce(ctx context.Context, tx db, names []string) (map[string]*store.Parent, error) {
	rs, err := tx.query(ctx, s.sql(flagSQL), names)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	found := make(map[string]*store.Parent, len(names))
	for rs.Next() {
		par := &store.Parent{}
		var name, state string
		var expires *time.Time
		if err := rs.Scan(&name, &par.ID, &state, &par.Skipped, &expires); err != nil {
			return nil, err
		}
		par.State, par.ExpiresAt = hoppertype.JobState(state), utc(expires)
		found[name] = par
	}
	return found, rs.Err()
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
		released, canceled, skipped, nullTime(e.ExpiresAt), pending, e.ID)
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

// rearmer re-arms children in a retry's transaction (store.Rearm). Before it reads how a
// child's parents stand, it locks them FOR SHARE (in id order), which waits for an ending of
// one in flight and holds off the next: so a parent that ends while its child is re-armed
// either counts in the re-arm (it ended first) or finds the child waiting (it ends after).
type rearmer struct {
	s     *Store
	tx    db
	actor hoppertype.Actor
}

const (
	// canceledChildrenSQL lists the jobs the failures of $1 canceled.
	canceledChildrenSQL = `SELECT c.id FROM {schema}.job_deps d JOIN {schema}.jobs c ON c.id = d.child_id
	WHERE d.parent_id = ANY($1::text[]) AND c.state = 'canceled' AND c.canceled_by = d.parent_id`
	// lockParentsSQL locks the parents of the children $1 in id order.
	lockParentsSQL = `SELECT id FROM {schema}.jobs WHERE id = ANY(ARRAY(
		SELECT parent_id FROM {schema}.job_deps WHERE child_id = ANY($1::text[]))) ORDER BY id FOR SHARE`
	// lockCanceledSQL then locks, in id order, the children $1 still canceled by one of $2,
	// and returns them with what canceled them.
	lockCanceledSQL = `SELECT id, canceled_by FROM {schema}.jobs WHERE id = ANY($1::text[]) AND state = 'canceled'
		AND canceled_by = ANY($2::text[]) ORDER BY id FOR NO KEY UPDATE`
	// parentsSQL reads the parents of the children $1 as they stand; a parent swept since it
	// ended stands as its dependency row recorded it.
	parentsSQL = `SELECT d.child_id, d.parent_id, p.state, coalesce(p.parent_skipped, false), p.expires_at,
		d.parent_outcome
	FROM {schema}.job_deps d LEFT JOIN {schema}.jobs p ON p.id = d.parent_id WHERE d.child_id = ANY($1::text[])`
	// rearmSQL writes a re-arm: the children $1 with no stay ($4 NULL) back to waiting for $2
	// parents (reason $3, actor $5), with their dependencies on parents that have not ended
	// counted again; the others canceled by $4 from now on. It returns the workflow ids of the
	// children back to waiting, once each.
	rearmSQL = `WITH r AS (SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) AS r(id, pending, reason, stays)),
	clk AS (SELECT coalesce($6::timestamptz, now()) AS now),
	stay AS (UPDATE {schema}.jobs j SET canceled_by = r.stays FROM r WHERE j.id = r.id AND r.stays IS NOT NULL),
	arm AS (UPDATE {schema}.jobs j SET state = 'waiting', version = j.version + 1, parents_pending = r.pending,
		canceled_by = NULL, parent_skipped = false, finished_at = NULL, expires_at = NULL, updated_at = clk.now,
		last_actor = $5, last_reason = r.reason
	FROM r, clk WHERE j.id = r.id AND r.stays IS NULL AND j.state = 'canceled' RETURNING j.id, j.workflow_id),
	uncount AS (UPDATE {schema}.job_deps d SET parent_outcome = NULL FROM {schema}.jobs p
	WHERE d.child_id IN (SELECT id FROM arm) AND p.id = d.parent_id
		AND p.state NOT IN ('completed', 'failed', 'canceled'))
	SELECT DISTINCT workflow_id FROM arm WHERE workflow_id IS NOT NULL`
)

func (r *rearmer) CanceledChildren(ctx context.Context, ids []string) ([]*store.Canceled, error) {
	kids, err := r.strings(ctx, canceledChildrenSQL, ids)
	if err != nil || len(kids) == 0 {
		return nil, err
	}
	if _, err := r.strings(ctx, lockParentsSQL, kids); err != nil {
		return nil, err
	}
	rs, err := r.tx.query(ctx, r.s.sql(lockCanceledSQL), kids, ids)
	if err != nil {
		return nil, err
	}
	byID := map[string]*store.Canceled{}
	var out []*store.Canceled
	for rs.Next() {
		c := &store.Canceled{}
		if err := rs.Scan(&c.ID, &c.CanceledBy); err != nil {
			rs.Close()
			return nil, err
		}
		byID[c.ID] = c
		out = append(out, c)
	}
	rs.Close()
	if err := rs.Err(); err != nil || len(out) == 0 {
		return nil, err
	}
	return out, r.readParents(ctx, byID)
}

// readParents fills in the parents of the children byID.
func (r *rearmer) readParents(ctx context.Context, byID map[string]*store.Canceled) error {
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	rs, err := r.tx.query(ctx, r.s.sql(parentsSQL), ids)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var child string
		var state, outcome *string
		var expires *time.Time
		p := &store.Parent{}
		if err := rs.Scan(&child, &p.ID, &state, &p.Skipped, &expires, &outcome); err != nil {
			return err
		}
		p.ExpiresAt = utc(expires)
		switch {
		case state != nil:
			p.State = hoppertype.JobState(*state)
		case outcome != nil: // swept: it had ended
			p.State, p.Skipped = store.ParentOutcome(*outcome).State()
		}
		byID[child].Parents = append(byID[child].Parents, p)
	}
	return rs.Err()
}

func (r *rearmer) RearmChildren(ctx context.Context, rs []*store.Rearmed) ([]string, error) {
	ids, reasons := make([]string, len(rs)), make([]string, len(rs))
	pending, stays := make([]int32, len(rs)), make([]*string, len(rs))
	for i, c := range rs {
		ids[i], reasons[i], pending[i] = c.ID, c.Reason, int32(c.Pending)
		if c.StaysFor != "" {
			stays[i] = nullStr(c.StaysFor)
		}
	}
	return r.strings(ctx, rearmSQL, ids, pending, reasons, stays, string(r.actor), r.s.nowArg())
}

// strings runs a query of one text column with args.
func (r *rearmer) strings(ctx context.Context, query string, args ...any) ([]string, error) {
	rs, err := r.tx.query(ctx, r.s.sql(query), args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rs.Err()
}
