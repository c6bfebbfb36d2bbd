package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// Workflows: store/workflows.go says how they are kept.

// workflowFrom joins workflows to their live steps (the store's clock is the first parameter)
// for store.WorkflowAggregates; callers add their WHERE and end with workflowGroup. CROSS JOIN
// makes SQLite read workflows first, in id order (a page reads its workflows and stops), each
// with its steps from the partial index jobs_workflow_id, rather than every workflow's steps and
// then a sort.
var (
	workflowFrom = store.WorkflowColumns + `, ` + store.WorkflowAggregates + ` FROM workflows w CROSS JOIN jobs j ON j.workflow_id = w.id
	AND (j.expires_at IS NULL OR j.expires_at > ?)`
	workflowGroup = ` GROUP BY w.id`
	// workflowByIDSQL reads one workflow (?1 now, ?2 its id); an insert reads back the
	// workflow it wrote with it, prepared once (cachedQueries).
	workflowByIDSQL = `SELECT ` + workflowFrom + ` WHERE w.id = ?` + workflowGroup
)

// queryer is a read connection or a transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// WorkflowInsert inserts the workflow's row and its steps, as JobInsertMany inserts a batch,
// in one write transaction.
func (s *Store) WorkflowInsert(ctx context.Context, p *store.WorkflowInsertParams) (*store.WorkflowInsertResult, error) {
	if err := store.CheckWorkflow(p); err != nil {
		return nil, fmt.Errorf("insert workflow: %w", err)
	}
	if err := store.CheckBatch(p.Steps); err != nil {
		return nil, fmt.Errorf("insert workflow: %w", err)
	}
	var res *store.WorkflowInsertResult
	err := s.write(ctx, []string{insertJobSQL, statsSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		var err error
		res, err = s.insertWorkflow(ctx, tx, stmts, p, s.clock.Now())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("insert workflow %s: %w", p.ID, err)
	}
	return res, nil
}

// insertWorkflow inserts a workflow's row and its steps in tx (stmts: insertJobSQL, statsSQL).
func (s *Store) insertWorkflow(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt, p *store.WorkflowInsertParams, now time.Time) (*store.WorkflowInsertResult, error) {
	if _, err := tx.ExecContext(ctx, `INSERT INTO workflows (id, name, steps, created_at, fire_key) VALUES (?1, ?2, ?3, ?4, ?5)`,
		p.ID, p.Name, len(p.Steps), micros(now), nullString(p.FireKey)); err != nil {
		return nil, fmt.Errorf("insert workflow row: %w", err)
	}
	out, err := s.insertJobs(ctx, tx, stmts, p.Steps, now)
	if err != nil {
		return nil, err
	}
	res := &store.WorkflowInsertResult{Jobs: make([]*hoppertype.JobRow, len(out))}
	for i, r := range out {
		res.Jobs[i] = r.Job
	}
	res.Workflow, err = readWorkflow(ctx, s.cached(tx), p.ID, now)
	return res, err
}

// WorkflowGet reads the workflow and its steps in one read transaction, so that its state and
// its steps agree.
func (s *Store) WorkflowGet(ctx context.Context, id string) (*store.WorkflowDetail, error) {
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return nil, wrap(err, "get workflow %s", id)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	now := s.clock.Now()
	w, err := readWorkflow(ctx, tx, id, now)
	if err != nil {
		return nil, wrap(err, "get workflow %s", id)
	}
	d := &store.WorkflowDetail{Workflow: w}
	rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE workflow_id = ?1 AND `+live+` ORDER BY id`,
		id, micros(now))
	if err != nil {
		return nil, wrap(err, "get workflow %s: steps", id)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, wrap(err, "get workflow %s: steps", id)
	}
	after, err := stepParents(ctx, tx, id)
	if err != nil {
		return nil, wrap(err, "get workflow %s: dependencies", id)
	}
	for _, j := range jobs {
		d.Steps = append(d.Steps, &hoppertype.StepRow{Job: j, After: after[j.ID]})
	}
	return d, nil
}

// WorkflowSteps reads the workflow and one page of its steps in one read transaction, so
// that its counts and the page agree. The page is found through the partial index
// jobs_workflow_id; the names each step runs after, for the page's steps alone.
func (s *Store) WorkflowSteps(ctx context.Context, p *store.WorkflowStepsParams) (*store.WorkflowStepsResult, error) {
	limit := store.PageLimit(p.Limit)
	now := s.clock.Now()
	query, args, err := stepsQuery(p, now, limit)
	if err != nil {
		return nil, err
	}
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return nil, wrap(err, "list the steps of workflow %s", p.ID)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	res := &store.WorkflowStepsResult{}
	if res.Workflow, err = readWorkflow(ctx, tx, p.ID, now); err != nil {
		return nil, wrap(err, "list the steps of workflow %s", p.ID)
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(err, "list the steps of workflow %s", p.ID)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, wrap(err, "list the steps of workflow %s", p.ID)
	}
	if len(jobs) > limit {
		jobs = jobs[:limit]
		res.NextCursor = store.EncodeCursor(jobs[limit-1].ID)
	}
	after, err := pageParents(ctx, tx, p.ID, jobs)
	if err != nil {
		return nil, wrap(err, "list the steps of workflow %s: dependencies", p.ID)
	}
	for _, j := range jobs {
		res.Steps = append(res.Steps, &hoppertype.StepRow{Job: j, After: after[j.ID]})
	}
	return res, nil
}

// stepsQuery is the read of a page of limit+1 steps of workflow p.ID, filtered, at now.
func stepsQuery(p *store.WorkflowStepsParams, now time.Time, limit int) (string, []any, error) {
	where, args := []string{"workflow_id = ?1", live}, []any{p.ID, micros(now)}
	param := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("?%d", len(args))
	}
	if len(p.States) > 0 {
		ins := make([]string, len(p.States))
		for i, st := range p.States {
			ins[i] = param(string(st))
		}
		where = append(where, "state IN ("+strings.Join(ins, ", ")+")")
	}
	if p.StepContains != "" {
		where = append(where, "instr(workflow_step, "+param(p.StepContains)+") > 0")
	}
	if p.Cursor != "" {
		after, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return "", nil, err
		}
		where = append(where, "id > "+param(after))
	}
	return `SELECT ` + jobColumns + ` FROM jobs WHERE ` + strings.Join(where, " AND ") + ` ORDER BY id LIMIT ` + param(limit+1), args, nil
}

// pageParentsSQL reads the (child id, parent step) pairs of the steps of workflow ?1 whose ids
// are in the JSON array ?2: the dependency rows of each step by job_deps_child, in its order
// (parent ids ascending), then each parent by primary key. CROSS JOIN keeps that order of the
// join: the index of jobs by workflow would have SQLite walk every step of the workflow.
const pageParentsSQL = `SELECT d.child_id, p.workflow_step FROM job_deps d
	CROSS JOIN jobs p ON p.id = d.parent_id AND p.workflow_id = ?1
	WHERE d.child_id IN (SELECT value FROM json_each(?2)) ORDER BY d.child_id, d.parent_id`

// pageParents returns, by step job id, the names of the steps each of jobs (steps of
// workflow id) runs after, oldest parent first: one look-up of job_deps_child per step.
func pageParents(ctx context.Context, q queryer, id string, jobs []*hoppertype.JobRow) (map[string][]string, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, pageParentsSQL, id, string(list))
	if err != nil {
		return nil, err
	}
	return scanStepsAfter(rows)
}

// scanStepsAfter reads (child id, parent step) rows into store.StepsAfter.
func scanStepsAfter(rows *sql.Rows) (map[string][]string, error) {
	defer rows.Close()
	var children, parents []string
	for rows.Next() {
		var c, p string
		if err := rows.Scan(&c, &p); err != nil {
			return nil, err
		}
		children, parents = append(children, c), append(parents, p)
	}
	return store.StepsAfter(children, parents), rows.Err()
}

// stepParentsSQL reads, for each step of workflow ?1, the names of the steps it runs after. The
// joins are in the order written (CROSS JOIN): the steps, each step's dependencies, each
// parent by its id. Left to choose, the planner walked the workflow's steps for each of its
// steps (jobs_workflow_id twice, nested): 10^10 rows for a workflow of 100,000 steps
// (TestStepParentsPlan).
const stepParentsSQL = `SELECT d.child_id, p.workflow_step FROM jobs c
	CROSS JOIN job_deps d ON d.child_id = c.id CROSS JOIN jobs p ON p.id = d.parent_id
	WHERE c.workflow_id = ?1 AND p.workflow_id = ?1 ORDER BY d.child_id, p.id`

// stepParents returns, by step job id, the names of the steps each step of workflow id runs
// after, oldest parent first.
func stepParents(ctx context.Context, q queryer, id string) (map[string][]string, error) {
	rows, err := q.QueryContext(ctx, stepParentsSQL, id)
	if err != nil {
		return nil, err
	}
	return scanStepsAfter(rows)
}

// readWorkflow reads one workflow with what its live steps say of it, or ErrNotFound.
func readWorkflow(ctx context.Context, q queryer, id string, now time.Time) (*hoppertype.WorkflowRow, error) {
	w, err := scanWorkflow(q.QueryRowContext(ctx, workflowByIDSQL, micros(now), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("workflow %s: %w", id, store.ErrNotFound)
	}
	return w, err
}

// scanWorkflow reads a row of workflowFrom's columns.
func scanWorkflow(sc scanner) (*hoppertype.WorkflowRow, error) {
	var w hoppertype.WorkflowRow
	var created int64
	var started, finished sql.NullInt64
	var state string
	counts := store.NewWorkflowCounts()
	dest := append(append([]any{&w.ID, &w.Name, &w.Steps, &created}, counts.Dest...), &started, &finished, &state)
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	w.State, w.StepStates, w.CreatedAt = hoppertype.WorkflowState(state), counts.Map(), fromMicros(created)
	w.StartedAt = nullTime(started)
	if w.State != hoppertype.WorkflowRunning {
		w.FinishedAt = nullTime(finished)
	}
	return &w, nil
}

// WorkflowList returns one page of workflows, filtered, in id (creation) order. With a state
// filter it reads the page's candidates first (workflowCandidates), then those.
func (s *Store) WorkflowList(ctx context.Context, p *store.WorkflowListParams) (*store.WorkflowListResult, error) {
	limit := store.PageLimit(p.Limit)
	now := micros(s.clock.Now())
	filter := &workflowFilter{name: p.Name, order: "DESC", cmp: "<"}
	if p.Ascending {
		filter.order, filter.cmp = "ASC", ">"
	}
	if p.Cursor != "" {
		after, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, err
		}
		filter.after = after
	}
	where, args := filter.where(), append([]any{now}, filter.args()...)
	if len(p.States) > 0 {
		cands, cargs := workflowCandidates(filter, p.States, now, limit+1)
		where, args = "w.id IN ("+cands+")", append([]any{now}, cargs...)
	}
	query := `SELECT ` + workflowFrom + ` WHERE ` + where + workflowGroup + ` ORDER BY w.id ` + filter.order + ` LIMIT ?`
	rows, err := s.reader.QueryContext(ctx, query, append(args, limit+1)...)
	if err != nil {
		return nil, wrap(err, "list workflows")
	}
	defer rows.Close()
	res := &store.WorkflowListResult{}
	for rows.Next() {
		w, err := scanWorkflow(rows)
		if err != nil {
			return nil, wrap(err, "list workflows")
		}
		res.Workflows = append(res.Workflows, w)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "list workflows")
	}
	if len(res.Workflows) > limit {
		res.Workflows = res.Workflows[:limit]
		res.NextCursor = store.EncodeCursor(res.Workflows[limit-1].ID)
	}
	return res, nil
}

// workflowFilter is a list's name and cursor filter of workflows w, in its order.
type workflowFilter struct {
	name, after string
	order, cmp  string // DESC and <, or ASC and >
}

// where is the filter's condition on w, its parameters args.
func (f *workflowFilter) where() string {
	cond := "1"
	if f.name != "" {
		cond += " AND w.name = ?"
	}
	if f.after != "" {
		cond += " AND w.id " + f.cmp + " ?"
	}
	return cond
}

func (f *workflowFilter) args() []any {
	var out []any
	if f.name != "" {
		out = append(out, f.name)
	}
	if f.after != "" {
		out = append(out, f.after)
	}
	return out
}

// workflowCandidates selects the ids of the first n workflows in each of the ended states
// asked for (from the index workflows_ended, each with a live step) and the first n open
// workflows whose derived state is asked for (from workflows_open, each read with its steps):
// the page is the first of them in order. now is the store's clock. Without running among
// states, the open workflows read are only those with no live step that has not ended
// (openStep each), so that the steps of the running ones are not read.
func workflowCandidates(f *workflowFilter, states []hoppertype.WorkflowState, now int64, n int) (string, []any) {
	var parts []string
	var args []any
	for _, st := range store.EndedStates(states) {
		parts = append(parts, `SELECT id FROM (SELECT w.id FROM workflows w WHERE w.state = ? AND `+f.where()+`
			AND EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = w.id AND (j.expires_at IS NULL OR j.expires_at > ?))
			ORDER BY w.id `+f.order+` LIMIT ?)`)
		args = append(append(append(args, st), f.args()...), now, n)
	}
	open := f.where()
	args = append(append(args, now), f.args()...)
	if !slices.Contains(states, hoppertype.WorkflowRunning) {
		open += ` AND NOT ` + openStep("w.id", "?")
		args = append(args, now)
	}
	in := strings.TrimSuffix(strings.Repeat("?,", len(states)), ",")
	parts = append(parts, `SELECT id FROM (SELECT w.id FROM workflows w CROSS JOIN jobs j ON j.workflow_id = w.id
		AND (j.expires_at IS NULL OR j.expires_at > ?) WHERE w.state IS NULL AND `+open+workflowGroup+`
		HAVING (`+store.WorkflowStateSQL+`) IN (`+in+`) ORDER BY w.id `+f.order+` LIMIT ?)`)
	for _, st := range states {
		args = append(args, string(st))
	}
	return strings.Join(parts, " UNION ALL "), append(args, n)
}

// WorkflowCancel cancels the workflow's unfinished steps in one write transaction: one
// update, then the release of the canceled steps' children (the workflow's own are canceled
// already, so only children outside it move).
func (s *Store) WorkflowCancel(ctx context.Context, p *store.WorkflowCancelParams) (*store.WorkflowCancelResult, error) {
	res := &store.WorkflowCancelResult{}
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := s.clock.Now()
		var err error
		if res.WereRunning, err = runningSteps(ctx, tx, p.ID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET `+cancelSetSQL+`,
			expires_at = CASE WHEN result_ttl_us > 0 THEN ?1 + result_ttl_us ELSE ?6 END
			WHERE workflow_id = ?5 AND state IN `+store.UnfinishedSQL+` RETURNING `+jobColumns,
			micros(now), string(p.Actor), nullString(p.Reason), "canceled: "+p.Reason, p.ID, nullMicros(p.ExpiresAt))
		if err != nil {
			return err
		}
		if res.Canceled, err = scanJobs(rows); err != nil {
			return err
		}
		if len(res.Canceled) > 0 {
			if err := releaseCanceled(ctx, tx, res.Canceled, p.Actor); err != nil {
				return err
			}
			// Every step has ended now: the cancel ends the workflow (WorkflowMarkEnded
			// will not count it again).
			if _, err := markEnded(ctx, tx, []string{p.ID}, now); err != nil {
				return err
			}
		}
		if res.Workflow, err = readWorkflow(ctx, tx, p.ID, now); err != nil {
			return err
		}
		if len(res.Canceled) == 0 {
			return fmt.Errorf("every step has ended (workflow %s): %w", res.Workflow.State, store.ErrInvalidTransition)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cancel workflow %s: %w", p.ID, err)
	}
	return res, nil
}

// runningSteps returns the ids of the workflow's running steps.
func runningSteps(ctx context.Context, tx *sql.Tx, id string) ([]string, error) {
	return queryStrings(ctx, tx, `SELECT id FROM jobs WHERE workflow_id = ?1 AND state = 'running'`, id)
}

// stepLive is a step j that has not expired at ?2, as the reads of workflows see it
// (workflowFrom): the marking reads the steps they read, so that the state it stores is the
// state they derived.
const stepLive = `(j.expires_at IS NULL OR j.expires_at > ?2)`

// openStep is the condition that workflow w has a live step (at now) that has not ended. Its
// steps are read along jobs_workflow_id newest first, and the first such step ends the walk: a
// step's parents are inserted before it, so its last steps are the last to end (a running
// workflow's newest step is open, or one close to it; an ended one is walked once, then marked
// and not read again). Migration 0036 says why it is not an index of open steps.
func openStep(w, now string) string {
	return `(SELECT 1 FROM jobs o INDEXED BY jobs_workflow_id WHERE o.workflow_id = ` + w + ` AND o.state IN ` + store.UnfinishedSQL + `
		AND (o.expires_at IS NULL OR o.expires_at > ` + now + `) ORDER BY o.id DESC LIMIT 1) IS NOT NULL`
}

// markEndedSQL marks ended those of the open workflows of ids ?1 (a JSON array) whose live
// steps (at ?2) have all ended (openStep), with the state their steps ended them in and their
// last step's ending. Each row is found by its id: the update
// reads only the rows named, never a range of ids (which, behind an old open workflow, could
// span any number of marked ones).
var markEndedSQL = `UPDATE workflows SET
	state = (SELECT ` + store.EndedStateSQL + ` FROM jobs j WHERE j.workflow_id = workflows.id AND ` + stepLive + `),
	ended_at = (SELECT max(j.finished_at) FROM jobs j WHERE j.workflow_id = workflows.id AND ` + stepLive + `)
WHERE id IN (SELECT value FROM json_each(?1)) AND state IS NULL
	AND NOT ` + openStep("workflows.id", "?2") + `
	AND EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = workflows.id AND ` + stepLive + `)
RETURNING id, name, steps, created_at, state, ended_at`

// markOpenSQL reads the next open workflows after ?1, oldest first, at most ?2, from
// workflows_open.
const markOpenSQL = `SELECT id FROM workflows WHERE state IS NULL AND id > ?1 ORDER BY id LIMIT ?2`

// deleteSteplessSQL deletes those of the open workflows of ids ?1 (a JSON array) that have no
// step left.
const deleteSteplessSQL = `DELETE FROM workflows WHERE id IN (SELECT value FROM json_each(?1)) AND state IS NULL
	AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = workflows.id)`

// markEnded marks ended those of the open workflows ids whose live steps at now have all
// ended (markEndedSQL), in id order.
func markEnded(ctx context.Context, tx *sql.Tx, ids []string, now time.Time) ([]*hoppertype.WorkflowRow, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("mark workflows ended: %w", err)
	}
	rows, err := tx.QueryContext(ctx, markEndedSQL, string(list), micros(now))
	if err != nil {
		return nil, fmt.Errorf("mark workflows ended: %w", err)
	}
	defer rows.Close()
	var out []*hoppertype.WorkflowRow
	for rows.Next() {
		var w hoppertype.WorkflowRow
		var created int64
		var state string
		var ended sql.NullInt64
		if err := rows.Scan(&w.ID, &w.Name, &w.Steps, &created, &state, &ended); err != nil {
			return nil, fmt.Errorf("mark workflows ended: %w", err)
		}
		w.CreatedAt, w.State, w.FinishedAt = fromMicros(created), hoppertype.WorkflowState(state), nullTime(ended)
		out = append(out, &w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mark workflows ended: %w", err)
	}
	slices.SortFunc(out, func(a, b *hoppertype.WorkflowRow) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// WorkflowMarkEnded checks a batch of open workflows in one write transaction of the single
// writer: their ids from workflows_open (markOpenSQL), read once, then one update of those
// rows (markEndedSQL) and the deletion of those without steps (deleteSteplessSQL).
func (s *Store) WorkflowMarkEnded(ctx context.Context, p *store.WorkflowMarkParams) (*store.WorkflowMarkResult, error) {
	limit := store.MarkLimit(p.Limit)
	var res *store.WorkflowMarkResult
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		res = &store.WorkflowMarkResult{}
		ids, err := queryStrings(ctx, tx, markOpenSQL, p.After, limit)
		if err != nil || len(ids) == 0 {
			return err
		}
		if len(ids) == limit {
			res.Next = ids[len(ids)-1]
		}
		if res.Ended, err = markEnded(ctx, tx, ids, s.clock.Now()); err != nil {
			return err
		}
		list, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, deleteSteplessSQL, string(list))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mark ended workflows: %w", err)
	}
	return res, nil
}
