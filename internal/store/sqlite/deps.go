package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/jobstate"
	"github.com/hopperjobs/hopper/internal/store"
)

// Dependencies: store/deps.go says how they are kept. The statements here run in the write
// transaction of the insert or the ending they belong to.

// settle is the SQL of a statement that moves waiting children: it sets their unended parents
// to pending and, by their policy, cancels them (a failure they do not run through) or
// releases those left with no unended parent, to queued (run_at now) or scheduled (run_at
// later). Every SET expression reads the row as it was. The fields are SQL expressions.
type settleParts struct {
	with, from, where string // the statement's WITH clause, its FROM, and which rows
	pending, failed   string // a child's parents left unended, and whether one failed
	now               string
	released          string // the reason and actor of a release
	releasedBy        string
	canceled, skipped string // the reasons of a cancel and a skip
	canceledBy        string // the parent whose failure cancels it, and that parent's actor
	cancelActor       string
	expiry            string // the expiry of a child canceled without a result TTL
}

func settleSQL(x settleParts) string {
	next := `(CASE WHEN ` + x.failed + ` AND on_parent_failure <> 'run' THEN 'canceled' WHEN ` + x.pending +
		` > 0 THEN 'waiting' WHEN run_at > ` + x.now + ` THEN 'scheduled' ELSE 'queued' END)`
	return x.with + `UPDATE jobs SET parents_pending = ` + x.pending + `, state = ` + next + `,
	version = version + (` + next + ` <> 'waiting'), updated_at = ` + x.now + `,
	run_at = CASE WHEN ` + next + ` = 'queued' THEN ` + x.now + ` ELSE run_at END,
	finished_at = CASE WHEN ` + next + ` = 'canceled' THEN ` + x.now + ` END,
	parent_skipped = (` + next + ` = 'canceled' AND on_parent_failure = 'skip'),
	canceled_by = CASE WHEN ` + next + ` = 'canceled' AND on_parent_failure = 'cancel' THEN ` + x.canceledBy + ` END,
	expires_at = CASE WHEN ` + next + ` <> 'canceled' THEN expires_at
		WHEN result_ttl_us > 0 THEN ` + x.now + ` + result_ttl_us ELSE ` + x.expiry + ` END,
	last_actor = CASE ` + next + ` WHEN 'waiting' THEN last_actor WHEN 'canceled' THEN ` + x.cancelActor +
		` ELSE ` + x.releasedBy + ` END,
	last_reason = CASE ` + next + ` WHEN 'waiting' THEN last_reason
		WHEN 'canceled' THEN CASE WHEN on_parent_failure = 'skip' THEN ` + x.skipped + ` ELSE ` + x.canceled + ` END
		ELSE ` + x.released + ` END` + x.from + `
	WHERE ` + x.where + ` AND state = 'waiting'
	RETURNING id, queue, kind, state, parent_skipped, has_children, expires_at, last_actor`
}

var (
	// startSQL sets a new child's (?1) unended parents (?9) and settles it if none is left
	// or one failed (?2): ?3 is now, ?4 the actor, ?5–?7 the reasons of a release, a cancel
	// and a skip, ?8 the expiry of a child canceled without a result TTL, ?10 the parent
	// whose failure cancels it.
	startSQL = settleSQL(settleParts{where: "id = ?1", pending: "?9", failed: "?2", now: "?3",
		released: "?5", releasedBy: "?4", canceled: "?6", skipped: "?7", canceledBy: "?10", cancelActor: "?4",
		expiry: "?8"})
	// releaseSQL counts down the waiting children of a round of endings at ?2, and settles
	// those it leaves with no unended parent or with a failure: ?1 is a JSON array with one
	// item per child, store.ChildCount's [child id, dependencies counted, whether one failed,
	// the failed parent's id, outcome, expiry and actor, the last parent's id, outcome and
	// actor] (childCounts). Go groups the counted dependencies by child (countSQL returns them):
	// an aggregate in this statement, joined back to the endings for the parents' fields,
	// cost SQLite a sort and two automatic indexes a round.
	releaseSQL = settleSQL(settleParts{
		with: `WITH c AS MATERIALIZED (SELECT value ->> 0 AS child_id, value ->> 1 AS n, value ->> 2 AS failing,
			value ->> 3 AS f_id, value ->> 4 AS f_outcome, value ->> 5 AS f_expires, value ->> 6 AS f_actor,
			value ->> 7 AS l_id, value ->> 8 AS l_outcome, value ->> 9 AS l_actor FROM json_each(?1))
		`,
		from:    "\n\tFROM c",
		where:   "jobs.id = c.child_id",
		pending: "parents_pending - c.n", failed: "c.failing", now: "?2",
		released:   `'` + jobstate.ParentsEnded + ` (last: ' || c.l_id || ' ' || c.l_outcome || ')'`,
		releasedBy: "c.l_actor",
		canceled:   `'parent ' || c.f_id || ' ' || c.f_outcome`, skipped: `'skipped: parent ' || c.f_id || ' ' || c.f_outcome`,
		canceledBy: "c.f_id", cancelActor: "c.f_actor", expiry: "c.f_expires"})
)

const (
	// countSQL records the outcome ?2 of a round's endings of that outcome (?1, a JSON array
	// of ids) on their dependency rows, and returns them as (child id, parent id, counted
	// now). The rows it counts now had no outcome: the dependencies the round counts down. A
	// parent retried in place ends again, and its rows counted before must not count twice:
	// the statement records its latest outcome on them, and counted_now tells them apart (an
	// UPDATE's RETURNING sees the new row; every SET expression reads the old one: migration
	// 0038). One look-up of each parent; the outcome is a parameter, not a field of each
	// item, so SQLite parses the array once, not each item's fields once per row.
	countSQL = `UPDATE job_deps SET parent_outcome = ?2, counted_now = parent_outcome IS NULL
		WHERE parent_id IN (SELECT value FROM json_each(?1)) AND parent_outcome IS NOT ?2
		RETURNING child_id, parent_id, counted_now`
	// flagSQL marks a parent as having children and reads how it stands; a job a compaction
	// replaced is left alone (compactedSQL names the job to wait for instead).
	flagSQL = `UPDATE jobs SET has_children = 1 WHERE id = ?1
		AND NOT EXISTS (SELECT 1 FROM job_compactions WHERE replaced_job_id = ?1)
		RETURNING state, parent_skipped, expires_at`
	// flagManySQL is flagSQL for the jobs of a JSON array of ids (?1), in one statement.
	flagManySQL = `UPDATE jobs SET has_children = 1 WHERE id IN (SELECT value FROM json_each(?1))
		AND NOT EXISTS (SELECT 1 FROM job_compactions WHERE replaced_job_id = jobs.id)
		RETURNING id, state, parent_skipped, expires_at`
	compactedSQL = `SELECT new_job_id FROM job_compactions WHERE replaced_job_id = ?1`
	// depRowsSQL writes a child's (?1) dependency rows from a JSON array (?2) of
	// [parent id, outcome or null], each parent's place in it its parent_index.
	depRowsSQL = `INSERT OR IGNORE INTO job_deps (parent_id, child_id, parent_outcome, parent_index)
		SELECT value ->> 0, ?1, value ->> 1, key FROM json_each(?2)`
)

// jobByIDSQL reads a job.
var jobByIDSQL = `SELECT ` + jobColumns + ` FROM jobs WHERE id = ?`

// cachedQueries are the statements a write transaction runs once per job of a batch, which
// Open prepares for cachedTx: the dependencies' (an ending's, a child's insert), and the
// read-back of an inserted workflow.
var cachedQueries = []string{finishParentSQL, finishFailedParentSQL, releaseSQL, countSQL, startSQL, flagManySQL,
	depRowsSQL, jobByIDSQL, insertChildSQL, workflowByIDSQL}

// settle runs startSQL for a new child id of ending e with n parents unended.
func settle(ctx context.Context, tx querier, id string, e *store.Ending, n int, now time.Time) ([]*store.Settled, error) {
	released, canceled, skipped := e.Reasons()
	rows, err := tx.QueryContext(ctx, startSQL, id, e.Outcome.Failed(), micros(now), string(e.Actor),
		released, canceled, skipped, nullMicros(e.ExpiresAt), n, e.ID)
	if err != nil {
		return nil, err
	}
	return scanSettled(rows)
}

// scanSettled reads the children a settleSQL statement moved.
func scanSettled(rows *sql.Rows) ([]*store.Settled, error) {
	defer rows.Close()
	var out []*store.Settled
	for rows.Next() {
		var c store.Settled
		var expires sql.NullInt64
		var actor sql.NullString
		if err := rows.Scan(&c.ID, &c.Queue, &c.Kind, &c.State, &c.Skipped, &c.HasChildren, &expires, &actor); err != nil {
			return nil, err
		}
		c.ExpiresAt, c.Actor = nullTime(expires), hoppertype.Actor(actor.String)
		out = append(out, &c)
	}
	return out, rows.Err()
}

// release releases the children of the ended jobs, and the cascade after them, in tx
// (store.Release): a round costs one statement per outcome among its endings (countSQL; one
// outcome in the common round) and one for its children (releaseSQL), whatever the number of
// endings and children.
func release(ctx context.Context, tx querier, ended []*store.Ending, now time.Time) ([]*store.Settled, error) {
	if len(ended) == 0 {
		return nil, nil
	}
	return store.Release(ctx, store.ReleaseFunc(func(ctx context.Context, round []*store.Ending) ([]*store.Settled, error) {
		deps, err := countDeps(ctx, tx, round)
		if err != nil {
			return nil, fmt.Errorf("count dependencies: %w", err)
		}
		counts := store.CountChildren(round, deps)
		if len(counts) == 0 {
			return nil, nil
		}
		list, err := childCounts(counts)
		if err != nil {
			return nil, err
		}
		rows, err := tx.QueryContext(ctx, releaseSQL, list, micros(now))
		if err != nil {
			return nil, fmt.Errorf("settle %d children: %w", len(counts), err)
		}
		return scanSettled(rows)
	}), ended)
}

// countDeps records the round's outcomes on their dependency rows (countSQL), one outcome at
// a time, and returns the rows it counted down as (child id, parent id).
func countDeps(ctx context.Context, tx querier, round []*store.Ending) ([][2]string, error) {
	var outcomes []store.ParentOutcome
	ids := map[store.ParentOutcome][]string{}
	for _, e := range round {
		if ids[e.Outcome] == nil {
			outcomes = append(outcomes, e.Outcome)
		}
		ids[e.Outcome] = append(ids[e.Outcome], e.ID)
	}
	var deps [][2]string
	for _, o := range outcomes {
		list, err := json.Marshal(ids[o])
		if err != nil {
			return nil, err
		}
		rows, err := tx.QueryContext(ctx, countSQL, string(list), string(o))
		if err != nil {
			return nil, err
		}
		counted, err := scanDeps(rows)
		if err != nil {
			return nil, err
		}
		deps = append(deps, counted...)
	}
	return deps, nil
}

// scanDeps reads the rows countSQL counted now. A row lost to an error would leave its child
// waiting for good, so the iteration's error is the caller's (rows.Err), not only the close's.
func scanDeps(rows *sql.Rows) ([][2]string, error) {
	defer rows.Close()
	var deps [][2]string
	for rows.Next() {
		var d [2]string
		var now bool
		if err := rows.Scan(&d[0], &d[1], &now); err != nil {
			return nil, err
		}
		if now {
			deps = append(deps, d)
		}
	}
	return deps, rows.Err()
}

// childCounts is releaseSQL's JSON array of the children's counts.
func childCounts(counts []*store.ChildCount) (string, error) {
	items := make([][]any, len(counts))
	for i, c := range counts {
		item := []any{c.ChildID, c.N, 0, nil, nil, nil, nil, c.Last.ID, string(c.Last.Outcome), string(c.Last.Actor)}
		if f := c.Failed; f != nil {
			item[2], item[3], item[4], item[5], item[6] = 1, f.ID, string(f.Outcome), nullMicros(f.ExpiresAt), string(f.Actor)
		}
		items[i] = item
	}
	b, err := json.Marshal(items)
	return string(b), err
}

// insertChild inserts item i, p, a new child of the jobs after names (p.After with the
// call's aliases resolved, store.Aliases), in q's transaction: it flags its parents and reads how they stand
// first, so that a child with a parent unended and none failed is inserted as it stays,
// waiting with its count of unended parents, and returned as built; only one whose parents
// have all ended, or one of which failed, is settled after its insert (startSQL) and read
// back. It writes the dependency rows: a bounded number of statements whatever the number of
// parents (flagManySQL, depRowsSQL). The single writer keeps its parents as read until the
// transaction commits.
func insertChild(ctx context.Context, q *cachedTx, item int, p *store.InsertParams, after []string, flagged store.FlaggedParents, now time.Time) (*hoppertype.JobRow, error) {
	parents, err := childParents(ctx, q, item, after, flagged)
	if err != nil {
		return nil, err
	}
	pending, failed := store.ChildStart(parents)
	waits := failed == nil && pending > 0 // what startSQL would leave as it is
	row := newRow(p, now)
	counted := 0
	if waits {
		counted = pending
	}
	if _, err := q.ExecContext(ctx, insertChildSQL, append(insertArgs(row, p, now), counted)...); err != nil {
		return nil, fmt.Errorf("insert job %s: %w", row.ID, err)
	}
	if err := recordKey(ctx, q.tx, p, row.ID, now); err != nil {
		return nil, err
	}
	if err := depRows(ctx, q, row.ID, parents); err != nil {
		return nil, err
	}
	if waits {
		return row, nil
	}
	e := failed
	if e == nil {
		last := parents[len(parents)-1]
		e = &store.Ending{ID: last.ID, Outcome: store.OutcomeOf(last.State, last.Skipped)}
	}
	e.Actor = p.Actor
	if _, err := settle(ctx, q, row.ID, e, pending, now); err != nil {
		return nil, fmt.Errorf("settle job %s: %w", row.ID, err)
	}
	return scanJob(q.QueryRowContext(ctx, jobByIDSQL, row.ID))
}

// childParents flags the jobs a child, item, names in after and reads how they stand: each
// job once, in the order the child named them. A name the call has not flagged yet costs one
// statement for all of them; one that is not a job now (compacted into another, followed, or
// unknown: UnknownParent) one look-up more.
func childParents(ctx context.Context, tx querier, item int, after []string, flagged store.FlaggedParents) ([]*store.Parent, error) {
	named := store.UniqueParents(after)
	if fresh := flagged.Missing(named); len(fresh) > 0 {
		found, err := flagParents(ctx, tx, fresh)
		if err != nil {
			return nil, err
		}
		flagged.Add(found)
	}
	parents := make([]*store.Parent, 0, len(named))
	seen := make(map[string]bool, len(named))
	for _, id := range named {
		par := flagged[id]
		if par == nil {
			var err error
			if par, err = flagParent(ctx, tx, id); err != nil {
				return nil, err
			}
			if par == nil {
				return nil, store.UnknownParent(item, indexOf(after, id), id)
			}
			flagged[id] = par
		}
		if seen[par.ID] {
			continue // two names of one job: compacted into it, or an alias of the call
		}
		seen[par.ID] = true
		parents = append(parents, par)
	}
	return parents, nil
}

// depRows writes child's dependency rows on parents, each parent's place among them its
// parent_index, with the outcome of those that have ended.
func depRows(ctx context.Context, tx querier, child string, parents []*store.Parent) error {
	deps := make([]any, len(parents)) // [parent id, outcome or null]
	for i, par := range parents {
		var outcome any
		if par.State.Terminal() {
			outcome = string(store.OutcomeOf(par.State, par.Skipped))
		}
		deps[i] = []any{par.ID, outcome}
	}
	rows, err := json.Marshal(deps)
	if err != nil {
		return fmt.Errorf("record the parents of job %s: %w", child, err)
	}
	if _, err := tx.ExecContext(ctx, depRowsSQL, child, string(rows)); err != nil {
		return fmt.Errorf("record the parents of job %s: %w", child, err)
	}
	return nil
}

// flagParents flags the jobs ids (distinct) that a child waits for, in one statement, and
// returns how those it found stand, by id; a name it did not find (compacted away, or no job)
// is left to flagParent.
func flagParents(ctx context.Context, tx querier, ids []string) (map[string]*store.Parent, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("flag parents: %w", err)
	}
	rows, err := tx.QueryContext(ctx, flagManySQL, string(list))
	if err != nil {
		return nil, fmt.Errorf("flag parents: %w", err)
	}
	defer rows.Close()
	out := make(map[string]*store.Parent, len(ids))
	for rows.Next() {
		par := &store.Parent{}
		var expires sql.NullInt64
		if err := rows.Scan(&par.ID, &par.State, &par.Skipped, &expires); err != nil {
			return nil, fmt.Errorf("flag parents: %w", err)
		}
		par.ExpiresAt = nullTime(expires)
		out[par.ID] = par
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("flag parents: %w", err)
	}
	return out, nil
}

// flagParent flags the job a child named id waits for and reads how it stands: the job id
// itself or, when a compaction replaced it, the job it was compacted into (followed through
// later compactions: docs/workflows.md). It returns nil when there is no such job.
func flagParent(ctx context.Context, tx querier, id string) (*store.Parent, error) {
	for {
		par := &store.Parent{ID: id}
		var expires sql.NullInt64
		err := tx.QueryRowContext(ctx, flagSQL, id).Scan(&par.State, &par.Skipped, &expires)
		if err == nil {
			par.ExpiresAt = nullTime(expires)
			return par, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("flag parent %s: %w", id, err)
		}
		err = tx.QueryRowContext(ctx, compactedSQL, id).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("follow the compaction of parent %s: %w", par.ID, err)
		}
	}
}

func indexOf(ids []string, id string) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}

// releaseFailed releases the children of the jobs ids that a rescue or a deadline just failed
// (those without children cost one look-up of the batch, and only when some job failed).
func releaseFailed(ctx context.Context, tx querier, ids []string, actor hoppertype.Actor, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, expires_at FROM jobs WHERE has_children = 1 AND id IN (`+
		placeholders(1, len(ids))+`)`, args...)
	if err != nil {
		return err
	}
	var ended []*store.Ending
	for rows.Next() {
		e := &store.Ending{Outcome: store.ParentFailed, Actor: actor}
		var expires sql.NullInt64
		if err := rows.Scan(&e.ID, &expires); err != nil {
			rows.Close()
			return err
		}
		e.ExpiresAt = nullTime(expires)
		ended = append(ended, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	_, err = release(ctx, tx, ended, now)
	return err
}

// rearmer re-arms children in a retry's write transaction (store.Rearm).
type rearmer struct {
	tx    *sql.Tx
	actor hoppertype.Actor
	now   time.Time
}

const (
	// canceledChildrenSQL lists the jobs the failure of ?1 canceled.
	canceledChildrenSQL = `SELECT c.id FROM job_deps d JOIN jobs c ON c.id = d.child_id
		WHERE d.parent_id = ?1 AND c.state = 'canceled' AND c.canceled_by = ?1 ORDER BY c.id`
	// parentsSQL reads the parents of child ?1 as they stand; a parent swept since it ended
	// stands as its dependency row recorded it.
	parentsSQL = `SELECT d.parent_id, p.state, coalesce(p.parent_skipped, 0), p.expires_at, d.parent_outcome
		FROM job_deps d LEFT JOIN jobs p ON p.id = d.parent_id WHERE d.child_id = ?1`
	rearmSQL = `UPDATE jobs SET state = 'waiting', version = version + 1, parents_pending = ?2,
		canceled_by = NULL, parent_skipped = 0, finished_at = NULL, expires_at = NULL, updated_at = ?3,
		last_actor = ?4, last_reason = ?5 WHERE id = ?1 AND state = 'canceled' RETURNING workflow_id`
	// uncountSQL makes the dependencies of re-armed child ?1 on parents that have not ended
	// count again.
	uncountSQL = `UPDATE job_deps SET parent_outcome = NULL WHERE child_id = ?1 AND parent_id IN
		(SELECT id FROM jobs WHERE id IN (SELECT parent_id FROM job_deps WHERE child_id = ?1)
		 AND state NOT IN ('completed', 'failed', 'canceled'))`
)

func (r *rearmer) CanceledChildren(ctx context.Context, ids []string) ([]*store.Canceled, error) {
	var out []*store.Canceled
	for _, id := range ids {
		kids, err := queryStrings(ctx, r.tx, canceledChildrenSQL, id)
		if err != nil {
			return nil, err
		}
		for _, kid := range kids {
			c := &store.Canceled{ID: kid, CanceledBy: id}
			if c.Parents, err = parentsOf(ctx, r.tx, kid); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// parentsOf reads the parents of child as they stand.
func parentsOf(ctx context.Context, tx *sql.Tx, child string) ([]*store.Parent, error) {
	rows, err := tx.QueryContext(ctx, parentsSQL, child)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Parent
	for rows.Next() {
		p := &store.Parent{}
		var state, outcome sql.NullString
		var expires sql.NullInt64
		if err := rows.Scan(&p.ID, &state, &p.Skipped, &expires, &outcome); err != nil {
			return nil, err
		}
		p.State, p.ExpiresAt = hoppertype.JobState(state.String), nullTime(expires)
		if !state.Valid { // swept: it had ended
			p.State, p.Skipped = store.ParentOutcome(outcome.String).State()
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (r *rearmer) RearmChildren(ctx context.Context, rs []*store.Rearmed) ([]string, error) {
	var workflows []string
	for _, c := range rs {
		if c.StaysFor != "" {
			if _, err := r.tx.ExecContext(ctx, `UPDATE jobs SET canceled_by = ?2 WHERE id = ?1`, c.ID, c.StaysFor); err != nil {
				return nil, err
			}
			continue
		}
		var workflow sql.NullString
		err := r.tx.QueryRowContext(ctx, rearmSQL, c.ID, c.Pending, micros(r.now), string(r.actor), c.Reason).Scan(&workflow)
		if errors.Is(err, sql.ErrNoRows) {
			continue // no longer canceled
		}
		if err != nil {
			return nil, err
		}
		if workflow.Valid {
			workflows = append(workflows, workflow.String)
		}
		if _, err := r.tx.ExecContext(ctx, uncountSQL, c.ID); err != nil {
			return nil, err
		}
	}
	return workflows, nil
}

// queryStrings runs a query of one text column.
func queryStrings(ctx context.Context, q queryer, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
