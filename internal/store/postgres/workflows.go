package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// Workflows: store/workflows.go says how they are kept.

// workflowSQL reads one workflow ($2) with what its live steps say of it ($1 is now).
var workflowSQL = `SELECT ` + workflowFrom + ` WHERE w.id = $2 AND s.state IS NOT NULL`

// workflowFrom is a workflow's columns and store.WorkflowAggregates over its live steps, $1
// being the store's clock; callers add their WHERE, which keeps only s.state IS NOT NULL (a
// workflow with live steps). The aggregate is LATERAL, so that a page reads workflows in id
// order, each with its steps (from workflow_steps, then each job by its key), and stops when it
// is full.
var workflowFrom = store.WorkflowColumns + `, s.* FROM ` + workflowSteps

// stepJobs is the steps of workflows (workflow_steps ws, read by ws.workflow_id in step order)
// each joined to its job j by key: the reads of a workflow's steps (migration 0039).
const stepJobs = `{schema}.workflow_steps ws JOIN {schema}.jobs j ON j.id = ws.job_id`

// workflowSteps is workflows w, each with store.WorkflowAggregates over its live steps as s.
var workflowSteps = `{schema}.workflows w CROSS JOIN LATERAL (
	SELECT ` + store.WorkflowAggregates + ` FROM ` + stepJobs + `
	WHERE ws.workflow_id = w.id AND (j.expires_at IS NULL OR j.expires_at > coalesce($1::timestamptz, now()))) s`

// stepsSQL reads a workflow's ($1) live steps ($2 is now) in id (insert) order.
const stepsSQL = `SELECT ` + jCols + ` FROM ` + stepJobs + `
	WHERE ws.workflow_id = $1 AND ` + jLive + ` ORDER BY ws.job_id`

// stepParentsSQL reads, for each step of workflow $1, the names of the steps it runs after.
const stepParentsSQL = `SELECT d.child_id, p.workflow_step FROM {schema}.workflow_steps c
	JOIN {schema}.job_deps d ON d.child_id = c.job_id
	JOIN {schema}.jobs p ON p.id = d.parent_id AND p.workflow_id = c.workflow_id
	WHERE c.workflow_id = $1 ORDER BY d.child_id, p.id`

// cancelStepsSQL cancels workflow $5's unfinished steps, locked first in id order (the order
// an ending locks a parent, then its children, so that a cancel racing endings does not
// deadlock with them), as cancelSQL cancels one job; $6 is the expiry of a step without a
// result TTL of its own. Each row comes back with whether it was running. The steps' endings
// fire jobs_release: their children in the workflow are canceled by this same statement
// already, so only children outside it move.
const cancelStepsSQL = `WITH clk AS (SELECT coalesce($1::timestamptz, now()) AS now),
l AS MATERIALIZED (SELECT id, state FROM {schema}.jobs WHERE workflow_id = $5 AND state IN ` + store.UnfinishedSQL + `
	ORDER BY id FOR NO KEY UPDATE)
UPDATE {schema}.jobs j SET ` + cancelSetSQL + `,
	expires_at = CASE WHEN j.result_ttl_us > 0 THEN clk.now + j.result_ttl_us * interval '1 microsecond'
		ELSE $6::timestamptz END
FROM l, clk WHERE j.id = l.id AND j.state IN ` + store.UnfinishedSQL + `
RETURNING ` + jCols + `, l.state = 'running'`

// WorkflowInsert inserts the workflow's row and its steps, as JobInsertMany inserts a batch,
// in one transaction.
func (s *Store) WorkflowInsert(ctx context.Context, p *store.WorkflowInsertParams) (*store.WorkflowInsertResult, error) {
	if err := store.CheckWorkflow(p); err != nil {
		return nil, fmt.Errorf("insert workflow: %w", err)
	}
	var res *store.WorkflowInsertResult
	err := s.runTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var err error
		res, err = s.insertWorkflow(ctx, tx, p)
		return err
	})
	if err != nil {
		return nil, s.wrap(err, "insert workflow %s", p.ID)
	}
	return res, nil
}

// insertWorkflow inserts a workflow's row and its steps in tx.
func (s *Store) insertWorkflow(ctx context.Context, tx pgx.Tx, p *store.WorkflowInsertParams) (*store.WorkflowInsertResult, error) {
	var fireKey *string
	if p.FireKey != "" {
		fireKey = &p.FireKey
	}
	if _, err := tx.Exec(ctx, s.sql(`INSERT INTO {schema}.workflows (id, name, steps, created_at, fire_key)
		VALUES ($1, $2, $3, coalesce($4::timestamptz, now()), $5)`), p.ID, p.Name, len(p.Steps), s.nowArg(), fireKey); err != nil {
		return nil, fmt.Errorf("insert workflow row: %w", err)
	}
	out, err := s.insertMany(ctx, pgxDB{tx}, p.Steps, nil)
	if err != nil {
		return nil, err
	}
	res := &store.WorkflowInsertResult{Jobs: make([]*hoppertype.JobRow, len(out))}
	for i, r := range out {
		res.Jobs[i] = r.Job
	}
	res.Workflow, err = s.readWorkflow(ctx, tx, p.ID)
	return res, err
}

// runTx runs fn in a transaction, committed when fn returns nil.
func (s *Store) runTx(ctx context.Context, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// WorkflowGet reads the workflow and its steps in one repeatable-read transaction, so that
// its state and its steps agree.
func (s *Store) WorkflowGet(ctx context.Context, id string) (*store.WorkflowDetail, error) {
	d := &store.WorkflowDetail{}
	err := s.runTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if d.Workflow, err = s.readWorkflow(ctx, tx, id); err != nil {
			return err
		}
		rs, err := tx.Query(ctx, s.sql(stepsSQL), id, s.nowArg())
		if err != nil {
			return err
		}
		jobs, err := scanJobs(rs)
		if err != nil {
			return fmt.Errorf("steps: %w", err)
		}
		after, err := s.stepParents(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("dependencies: %w", err)
		}
		for _, j := range jobs {
			d.Steps = append(d.Steps, &hoppertype.StepRow{Job: j, After: after[j.ID]})
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap(err, "get workflow %s", id)
	}
	return d, nil
}

// pageParentsSQL reads, for each step of workflow $1 whose id is in $2, the names of the
// steps it runs after: one look-up of job_deps_child per step.
const pageParentsSQL = `SELECT d.child_id, p.workflow_step FROM {schema}.job_deps d
	JOIN {schema}.jobs p ON p.id = d.parent_id AND p.workflow_id = $1
	WHERE d.child_id = ANY($2::text[]) ORDER BY d.child_id, p.id`

// WorkflowSteps reads the workflow and one page of its steps in one repeatable-read
// transaction, so that its counts and the page agree. The page is found through
// workflow_steps' key; the names each step runs after, for the page's steps alone.
func (s *Store) WorkflowSteps(ctx context.Context, p *store.WorkflowStepsParams) (*store.WorkflowStepsResult, error) {
	limit := store.PageLimit(p.Limit)
	query, args, err := stepsQuery(p, s.nowArg(), limit)
	if err != nil {
		return nil, err
	}
	res := &store.WorkflowStepsResult{}
	err = s.runTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if res.Workflow, err = s.readWorkflow(ctx, tx, p.ID); err != nil {
			return err
		}
		rs, err := tx.Query(ctx, s.sql(query), args...)
		if err != nil {
			return err
		}
		jobs, err := scanJobs(rs)
		if err != nil {
			return fmt.Errorf("steps: %w", err)
		}
		if len(jobs) > limit {
			jobs = jobs[:limit]
			res.NextCursor = store.EncodeCursor(jobs[limit-1].ID)
		}
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		rs, err = tx.Query(ctx, s.sql(pageParentsSQL), p.ID, ids)
		if err != nil {
			return fmt.Errorf("dependencies: %w", err)
		}
		after, err := scanStepsAfter(rs)
		if err != nil {
			return fmt.Errorf("dependencies: %w", err)
		}
		for _, j := range jobs {
			res.Steps = append(res.Steps, &hoppertype.StepRow{Job: j, After: after[j.ID]})
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap(err, "list the steps of workflow %s", p.ID)
	}
	return res, nil
}

// stepsQuery is the read of a page of limit+1 steps of workflow p.ID, filtered, at now ($2;
// nil: the database's clock), in id order from the cursor along workflow_steps' key.
func stepsQuery(p *store.WorkflowStepsParams, now any, limit int) (string, []any, error) {
	query, args := `SELECT `+jCols+` FROM `+stepJobs+`
	WHERE ws.workflow_id = $1 AND `+jLive, []any{p.ID, now}
	param := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if len(p.States) > 0 {
		states := make([]string, len(p.States))
		for i, st := range p.States {
			states[i] = string(st)
		}
		query += ` AND j.state = ANY(` + param(states) + `::text[])`
	}
	if p.StepContains != "" {
		query += ` AND strpos(ws.step, ` + param(p.StepContains) + `) > 0`
	}
	if p.Cursor != "" {
		after, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return "", nil, err
		}
		query += ` AND ws.job_id > ` + param(after)
	}
	query += ` ORDER BY ws.job_id LIMIT ` + param(limit+1)
	return query, args, nil
}

// scanStepsAfter reads (child id, parent step) rows into store.StepsAfter.
func scanStepsAfter(rs pgx.Rows) (map[string][]string, error) {
	defer rs.Close()
	var children, parents []string
	for rs.Next() {
		var c, p string
		if err := rs.Scan(&c, &p); err != nil {
			return nil, err
		}
		children, parents = append(children, c), append(parents, p)
	}
	return store.StepsAfter(children, parents), rs.Err()
}

// stepParents returns, by step job id, the names of the steps each step of workflow id runs
// after, oldest parent first.
func (s *Store) stepParents(ctx context.Context, tx pgx.Tx, id string) (map[string][]string, error) {
	rs, err := tx.Query(ctx, s.sql(stepParentsSQL), id)
	if err != nil {
		return nil, err
	}
	return scanStepsAfter(rs)
}

// readWorkflow reads one workflow in tx, or ErrNotFound.
func (s *Store) readWorkflow(ctx context.Context, tx pgx.Tx, id string) (*hoppertype.WorkflowRow, error) {
	w, err := scanWorkflow(tx.QueryRow(ctx, s.sql(workflowSQL), s.nowArg(), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("workflow %s: %w", id, store.ErrNotFound)
	}
	return w, err
}

// scanWorkflow reads a row of workflowFrom's columns.
func scanWorkflow(sc scanner) (*hoppertype.WorkflowRow, error) {
	var w hoppertype.WorkflowRow
	var created time.Time
	var started, finished *time.Time
	var state string
	counts := store.NewWorkflowCounts()
	dest := append(append([]any{&w.ID, &w.Name, &w.Steps, &created}, counts.Dest...), &started, &finished, &state)
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	w.State, w.StepStates, w.CreatedAt = hoppertype.WorkflowState(state), counts.Map(), created.UTC()
	w.StartedAt = utc(started)
	if w.State != hoppertype.WorkflowRunning {
		w.FinishedAt = utc(finished)
	}
	return &w, nil
}

// WorkflowList returns one page of workflows, filtered, in id (creation) order. Filters are
// parameters (states an array), so the statements stay few. With a state filter it reads the
// page's candidates first (workflowCandidates), then those.
func (s *Store) WorkflowList(ctx context.Context, p *store.WorkflowListParams) (*store.WorkflowListResult, error) {
	limit := store.PageLimit(p.Limit)
	q := &workflowQuery{args: []any{s.nowArg()}, order: "DESC", cmp: "<"}
	if p.Ascending {
		q.order, q.cmp = "ASC", ">"
	}
	if p.Name != "" {
		q.name = q.param(p.Name)
	}
	if p.Cursor != "" {
		after, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, err
		}
		q.after = q.param(after)
	}
	query := `SELECT ` + workflowFrom + ` WHERE s.state IS NOT NULL AND ` + q.where()
	if len(p.States) > 0 {
		query += ` AND w.id IN (` + q.candidates(p.States, limit+1) + `)`
	}
	query += ` ORDER BY w.id ` + q.order + ` LIMIT ` + q.param(limit+1)
	rs, err := s.pool.Query(ctx, s.sql(query), q.args...)
	if err != nil {
		return nil, s.wrap(err, "list workflows")
	}
	defer rs.Close()
	res := &store.WorkflowListResult{}
	for rs.Next() {
		w, err := scanWorkflow(rs)
		if err != nil {
			return nil, s.wrap(err, "list workflows")
		}
		res.Workflows = append(res.Workflows, w)
	}
	if err := rs.Err(); err != nil {
		return nil, s.wrap(err, "list workflows")
	}
	if len(res.Workflows) > limit {
		res.Workflows = res.Workflows[:limit]
		res.NextCursor = store.EncodeCursor(res.Workflows[limit-1].ID)
	}
	return res, nil
}

// workflowQuery builds a list of workflows: its parameters ($1 is the clock), its name and cursor
// filter (their placeholders) and its order.
type workflowQuery struct {
	args        []any
	name, after string
	order, cmp  string // DESC and <, or ASC and >
}

// param adds a parameter and returns its placeholder.
func (q *workflowQuery) param(v any) string {
	q.args = append(q.args, v)
	return fmt.Sprintf("$%d", len(q.args))
}

// where is the name and cursor filter on workflows w.
func (q *workflowQuery) where() string {
	cond := "true"
	if q.name != "" {
		cond += " AND w.name = " + q.name
	}
	if q.after != "" {
		cond += " AND w.id " + q.cmp + " " + q.after
	}
	return cond
}

// candidates selects the ids of the first n workflows in each of the ended states asked for
// (from the index workflows_ended, each with a live step) and the first n open workflows
// whose derived state is asked for (from workflows_open, each read with its steps): the page
// is the first of them in order. Without running among states, the open workflows read are
// only those with no live step that has not ended.
func (q *workflowQuery) candidates(states []hoppertype.WorkflowState, n int) string {
	limit := q.param(n)
	var parts []string
	for _, st := range store.EndedStates(states) {
		parts = append(parts, `(SELECT w.id FROM {schema}.workflows w WHERE w.state = `+q.param(st)+` AND `+q.where()+`
			AND EXISTS (SELECT 1 FROM `+stepJobs+` WHERE ws.workflow_id = w.id
				AND (j.expires_at IS NULL OR j.expires_at > coalesce($1::timestamptz, now())))
			ORDER BY w.id `+q.order+` LIMIT `+limit+`)`)
	}
	all := make([]string, len(states))
	for i, st := range states {
		all[i] = string(st)
	}
	open := q.where()
	if !slices.Contains(states, hoppertype.WorkflowRunning) {
		// Only the open workflows with no live step that has not ended (one look-up of
		// jobs_workflow_open each) are aggregated: not every step of the running ones.
		open += ` AND NOT EXISTS (SELECT 1 FROM {schema}.jobs o WHERE o.workflow_id = w.id AND o.state IN ` + store.UnfinishedSQL + `
			AND (o.expires_at IS NULL OR o.expires_at > coalesce($1::timestamptz, now())))`
	}
	parts = append(parts, `(SELECT w.id FROM `+workflowSteps+`
		WHERE w.state IS NULL AND s.state = ANY(`+q.param(all)+`::text[]) AND `+open+`
		ORDER BY w.id `+q.order+` LIMIT `+limit+`)`)
	return strings.Join(parts, " UNION ALL ")
}

// WorkflowCancel cancels the workflow's unfinished steps in one statement (cancelStepsSQL),
// then reads the workflow, in one transaction.
func (s *Store) WorkflowCancel(ctx context.Context, p *store.WorkflowCancelParams) (*store.WorkflowCancelResult, error) {
	res := &store.WorkflowCancelResult{}
	err := s.runTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		rs, err := tx.Query(ctx, s.sql(cancelStepsSQL), s.nowArg(), string(p.Actor), nullStr(p.Reason),
			"canceled: "+p.Reason, p.ID, nullTime(p.ExpiresAt))
		if err != nil {
			return err
		}
		if err := scanCanceled(rs, res); err != nil {
			return err
		}
		if len(res.Canceled) > 0 {
			// Every step has ended now: the cancel ends the workflow (WorkflowMarkEnded will
			// not count it again).
			if _, err := s.markEnded(ctx, tx, []string{p.ID}); err != nil {
				return err
			}
		}
		if res.Workflow, err = s.readWorkflow(ctx, tx, p.ID); err != nil {
			return err
		}
		if len(res.Canceled) == 0 {
			return fmt.Errorf("every step has ended (workflow %s): %w", res.Workflow.State, store.ErrInvalidTransition)
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap(err, "cancel workflow %s", p.ID)
	}
	return res, nil
}

// scanCanceled reads cancelStepsSQL's rows: a job and whether it was running.
func scanCanceled(rs rows, r *store.WorkflowCancelResult) error {
	defer rs.Close()
	js := newJobScan()
	for rs.Next() {
		var running bool
		j, err := js.scan(withExtra{rs, []any{&running}})
		if err != nil {
			return err
		}
		r.Canceled = append(r.Canceled, j)
		if running {
			r.WereRunning = append(r.WereRunning, j.ID)
		}
	}
	return rs.Err()
}

// withExtra scans a row into a job's targets and, after them, extra.
type withExtra struct {
	sc    scanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.extra...)...) }

// markEndedSQL marks ended those of the open workflows $1 whose live steps (at $2, as the
// reads see them: workflowSteps) have all ended (a look-up of jobs_workflow_open each,
// materialized first so that only those are aggregated), with the state their steps ended
// them in and their last step's ending: the state it stores is the state the reads derived.
// w.id = ANY($1) reads the rows to update by index: without it the join read every open
// workflow.
var markEndedSQL = `WITH clk AS (SELECT coalesce($2::timestamptz, now()) AS now),
done AS MATERIALIZED (
	SELECT d.id FROM unnest($1::text[]) AS d(id)
	WHERE NOT EXISTS (SELECT 1 FROM {schema}.jobs j, clk WHERE j.workflow_id = d.id AND j.state IN ` + store.UnfinishedSQL + `
		AND (j.expires_at IS NULL OR j.expires_at > clk.now))
), ended AS (
	SELECT d.id, a.state, a.ended_at FROM done d CROSS JOIN LATERAL (
		SELECT ` + store.EndedStateSQL + ` AS state, max(j.finished_at) AS ended_at, count(*) AS n
		FROM ` + stepJobs + `, clk
		WHERE ws.workflow_id = d.id AND (j.expires_at IS NULL OR j.expires_at > clk.now)) a
	WHERE a.n > 0
)
UPDATE {schema}.workflows w SET state = e.state, ended_at = e.ended_at
FROM ended e WHERE w.id = ANY($1::text[]) AND w.id = e.id AND w.state IS NULL
RETURNING w.id, w.name, w.steps, w.created_at, w.state, w.ended_at`

// markEnded marks ended those of the open workflows ids, which tx holds, whose live steps have
// all ended (markEndedSQL), in id order.
func (s *Store) markEnded(ctx context.Context, tx pgx.Tx, ids []string) ([]*hoppertype.WorkflowRow, error) {
	rs, err := tx.Query(ctx, s.sql(markEndedSQL), ids, s.nowArg())
	if err != nil {
		return nil, fmt.Errorf("mark workflows ended: %w", err)
	}
	defer rs.Close()
	var out []*hoppertype.WorkflowRow
	for rs.Next() {
		var w hoppertype.WorkflowRow
		var created time.Time
		var ended *time.Time
		var state string
		if err := rs.Scan(&w.ID, &w.Name, &w.Steps, &created, &state, &ended); err != nil {
			return nil, fmt.Errorf("mark workflows ended: %w", err)
		}
		w.CreatedAt, w.State, w.FinishedAt = created.UTC(), hoppertype.WorkflowState(state), utc(ended)
		out = append(out, &w)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("mark workflows ended: %w", err)
	}
	slices.SortFunc(out, func(a, b *hoppertype.WorkflowRow) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// lockOpenSQL locks the next open workflows after $1, oldest first, at most $2, skipping
// those another transaction holds (a cancel, a retry, another pass).
const lockOpenSQL = `SELECT id FROM {schema}.workflows WHERE state IS NULL AND id > $1 ORDER BY id LIMIT $2
	FOR UPDATE SKIP LOCKED`

// WorkflowMarkEnded checks a batch of open workflows in one transaction: it locks them
// (lockOpenSQL), then marks those ended (markEndedSQL), whose steps it reads in a statement
// after the lock so that it sees every ending or retry committed before it. A retry in place
// or a cancel writes the workflow's row after its steps, so one running meanwhile either
// holds the row (skipped here) or waits for this transaction and then reopens or marks it.
func (s *Store) WorkflowMarkEnded(ctx context.Context, p *store.WorkflowMarkParams) (*store.WorkflowMarkResult, error) {
	limit := store.MarkLimit(p.Limit)
	var res *store.WorkflowMarkResult
	err := s.runTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		res = &store.WorkflowMarkResult{}
		rs, err := tx.Query(ctx, s.sql(lockOpenSQL), p.After, limit)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rs, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if len(ids) == limit {
			res.Next = ids[len(ids)-1]
		}
		if res.Ended, err = s.markEnded(ctx, tx, ids); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, s.sql(`DELETE FROM {schema}.workflows w WHERE w.id = ANY($1::text[]) AND w.state IS NULL
			AND NOT EXISTS (SELECT 1 FROM {schema}.workflow_steps s WHERE s.workflow_id = w.id)`), ids)
		return err
	})
	if err != nil {
		return nil, s.wrap(err, "mark ended workflows")
	}
	return res, nil
}
