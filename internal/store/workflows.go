package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Workflows (Client.EnqueueWorkflow, docs/workflows.md): a named set of jobs, its steps,
// inserted in one transaction, whose dependencies are the jobs' own (deps.go). A step's job
// carries the workflow's id and its step name (jobs.workflow_id, jobs.workflow_step, indexed
// where set, so a job outside a workflow pays nothing); the workflows table keeps the id, the
// name, the number of steps and the creation time. No step's ending writes anything more
// than its own row: while a workflow is open (workflows.state NULL) every read derives its
// state from its steps (WorkflowStateSQL). It is marked ended once, with the state its steps
// ended it in (EndedStateSQL), by the transaction that sees it ended: the leader's
// maintenance (WorkflowMarkEnded, a bounded walk of the open workflows) or a WorkflowCancel,
// which ends every step itself; both read its live steps, as the reads do. Marked, it reads
// as marked; a retry in place of one of its steps, or of a parent of a step it re-arms (Rearm,
// which may be in another workflow), opens it again (state NULL) in the retry's transaction.
// A workflow goes with its last
// step (the stores' delete triggers), and one whose steps have all expired is gone for
// readers, as an expired job is.

// WorkflowStore keeps workflows. Both stores implement it; implementations are safe for
// concurrent use and take times from the store's clock.
type WorkflowStore interface {
	// WorkflowInsert inserts the workflow and every step in one transaction, all or none
	// (CheckWorkflow refuses what cannot be stored). Steps come parents first: a step names
	// in After only steps before it, as in JobInsertMany. Jobs are the steps' jobs in the
	// order of Steps.
	WorkflowInsert(ctx context.Context, p *WorkflowInsertParams) (*WorkflowInsertResult, error)
	// WorkflowGet returns a workflow and its live steps in id (insert) order, each with the
	// step names it runs after, or ErrNotFound.
	WorkflowGet(ctx context.Context, id string) (*WorkflowDetail, error)
	// WorkflowSteps returns a workflow (as WorkflowGet does) and one page of its live steps in
	// id (insert) order, filtered by state and name, each with the step names it runs after,
	// in one read; ErrNotFound for no such workflow, ErrInvalidCursor for a cursor no store
	// issued. It reads the page's steps, not the others (the workflow's counts aside).
	WorkflowSteps(ctx context.Context, p *WorkflowStepsParams) (*WorkflowStepsResult, error)
	// WorkflowList returns a page of workflows in id order, newest first unless Ascending,
	// filtered by name and state.
	WorkflowList(ctx context.Context, p *WorkflowListParams) (*WorkflowListResult, error)
	// WorkflowCancel cancels every step of the workflow that has not ended, in one
	// transaction, as JobCancel cancels a job (its history records the actor and reason, a
	// running step's attempt ends canceled and its lease is void), and marks the workflow
	// ended in it. Steps that have ended are left as they are; the steps' children outside
	// the workflow follow their policies. It returns ErrNotFound for no such workflow,
	// ErrInvalidTransition when every step has ended.
	WorkflowCancel(ctx context.Context, p *WorkflowCancelParams) (*WorkflowCancelResult, error)
	// WorkflowMarkEnded checks the open (unmarked) workflows after p.After, oldest first, at
	// most p.Limit, and marks those whose steps have all ended, in one transaction: each is
	// marked once, whatever passes race it (PostgreSQL: a workflow another transaction holds
	// is skipped, left for a later pass). A workflow without any step left (its row outlived
	// them) is deleted, not marked.
	WorkflowMarkEnded(ctx context.Context, p *WorkflowMarkParams) (*WorkflowMarkResult, error)
}

// WorkflowMarkParams is one batch of WorkflowMarkEnded.
type WorkflowMarkParams struct {
	// After is where the walk of the open workflows goes on: the Next of the previous batch,
	// "" for the oldest.
	After string
	// Limit bounds the open workflows checked (default 500, at most 10,000).
	Limit int
}

// WorkflowMarkResult is what a batch of WorkflowMarkEnded marked.
type WorkflowMarkResult struct {
	// Ended are the workflows this batch marked, in id order: ID, Name, Steps, CreatedAt,
	// State (completed, failed or canceled) and FinishedAt (their last step's ending).
	Ended []*hoppertype.WorkflowRow
	// Next is the After of the next batch: the last workflow checked, or "" when the batch
	// reached the newest open workflow (the walk starts again from the oldest).
	Next string
}

// MarkLimit is a WorkflowMarkParams.Limit with its default and bound applied.
func MarkLimit(n int) int {
	if n <= 0 {
		return 500
	}
	return min(n, 10000)
}

// WorkflowInsertParams is a workflow to insert. Each step's WorkflowID is ID and its Step its
// name in the workflow.
type WorkflowInsertParams struct {
	ID    string
	Name  string
	Steps []*InsertParams
	// FireKey, when set, is the fire time a schedule enqueues this workflow for (FireKey):
	// the store keeps it on the workflow, unique, and a schedule's fire step inserts nothing
	// for a key a stored workflow has.
	FireKey string
}

// WorkflowInsertResult is an inserted workflow and its steps' jobs, in the order of Steps.
type WorkflowInsertResult struct {
	Workflow *hoppertype.WorkflowRow
	Jobs     []*hoppertype.JobRow
}

// WorkflowDetail is a workflow and its steps.
type WorkflowDetail struct {
	Workflow *hoppertype.WorkflowRow
	Steps    []*hoppertype.StepRow
}

// WorkflowStepsParams asks for one page of a workflow's steps. Zero fields don't filter.
type WorkflowStepsParams struct {
	ID string
	// States keeps the steps in these states.
	States []hoppertype.JobState
	// StepContains keeps the steps whose name contains it (case sensitive).
	StepContains string
	// Cursor is the NextCursor of the previous page; empty for the first page.
	Cursor string
	// Limit is the page size (default 100, at most 10,000).
	Limit int
}

// WorkflowStepsResult is a workflow and one page of its steps; NextCursor is empty on the
// last page.
type WorkflowStepsResult struct {
	Workflow   *hoppertype.WorkflowRow
	Steps      []*hoppertype.StepRow
	NextCursor string
}

// MaxPageLimit is the largest page a list read returns.
const MaxPageLimit = 10000

// PageLimit is a page size as the list reads take it: default 100, at most MaxPageLimit.
func PageLimit(limit int) int {
	if limit <= 0 {
		return 100
	}
	return min(limit, MaxPageLimit)
}

// WorkflowListParams filters and pages WorkflowList. Zero fields don't filter.
type WorkflowListParams struct {
	// Name keeps the workflows of this name.
	Name string
	// States keeps the workflows in these states. Marked workflows are read from an index of
	// their stored state; the open ones (running, or ended and not marked yet) are read with
	// their steps, oldest or newest first, until the page is full.
	States []hoppertype.WorkflowState
	// Cursor is the NextCursor of the previous page; empty for the first page.
	Cursor string
	// Limit is the page size (default 100, at most 10,000).
	Limit int
	// Ascending lists oldest first; the default is newest first.
	Ascending bool
}

// WorkflowListResult is one page of workflows; NextCursor is empty on the last page.
type WorkflowListResult struct {
	Workflows  []*hoppertype.WorkflowRow
	NextCursor string
}

// WorkflowCancelParams cancels a workflow's unfinished steps.
type WorkflowCancelParams struct {
	ID     string
	Actor  hoppertype.Actor
	Reason string
	// ExpiresAt is when a canceled step without a result TTL of its own may be removed (a
	// step with one keeps it for that long from now); zero leaves it unset.
	ExpiresAt time.Time
}

// WorkflowCancelResult is a canceled workflow: the workflow as it stands after, the steps the
// cancel ended (as it left them), and the ids of those that were running.
type WorkflowCancelResult struct {
	Workflow    *hoppertype.WorkflowRow
	Canceled    []*hoppertype.JobRow
	WereRunning []string
}

// CheckWorkflow refuses a workflow a store cannot keep (ErrInvalid): no steps, a step of
// another workflow or without a name, two steps of one name, or a step with an idempotency
// or merge key (its job could be another's, outside the workflow). Callers validate first.
func CheckWorkflow(p *WorkflowInsertParams) error {
	if p.ID == "" || len(p.Steps) == 0 {
		return fmt.Errorf("workflow %q: %w: no id or no steps", p.ID, ErrInvalid)
	}
	seen := make(map[string]bool, len(p.Steps))
	for i, s := range p.Steps {
		switch {
		case s.WorkflowID != p.ID || s.Step == "":
			return fmt.Errorf("workflow %s: step %d: %w: not named as a step of it", p.ID, i, ErrInvalid)
		case seen[s.Step]:
			return fmt.Errorf("workflow %s: step %d: %w: step name %q repeated", p.ID, i, ErrInvalid, s.Step)
		case s.IdempotencyKey != "" || s.MergeKey != "":
			return fmt.Errorf("workflow %s: step %d: %w: an idempotency or merge key", p.ID, i, ErrInvalid)
		}
		seen[s.Step] = true
	}
	return CheckParentOrder(p.Steps)
}

// UnfinishedSQL is the SQL list of the states a job has not ended in (for an IN).
const UnfinishedSQL = `('waiting', 'scheduled', 'queued', 'running', 'suspended')`

// WorkflowColumns are the workflow's own columns (alias w) a read of workflows returns, before
// WorkflowAggregates.
const WorkflowColumns = `w.id, w.name, w.steps, w.created_at`

// WorkflowAggregates are the columns a read of a workflow (alias w) computes over its live
// steps (alias j): the number of steps in each state of hoppertype.AllStates, in that order
// (WorkflowCounts), the first step's start, the last step's ending (its stored ended_at once
// marked), and its state, named state (NULL when no step is live: the workflow is gone). The
// same SQL serves both stores.
var WorkflowAggregates = func() string {
	var cols []string
	for _, st := range hoppertype.AllStates {
		cols = append(cols, count(`j.state = '`+string(st)+`'`))
	}
	return strings.Join(append(cols, "min(j.started_at)",
		"CASE WHEN w.state IS NOT NULL THEN w.ended_at ELSE max(j.finished_at) END", WorkflowStateSQL+" AS state"), ", ")
}()

// WorkflowStateSQL is a workflow's state (hoppertype.WorkflowState) over its live steps (alias
// j, aggregated by workflow w): NULL without live steps; the stored state once it is marked;
// else derived: running while a step has not ended, then as EndedStateSQL. Reads return it
// and the list's filter of the open workflows compares it.
var WorkflowStateSQL = `CASE WHEN count(j.id) = 0 THEN NULL WHEN w.state IS NOT NULL THEN w.state
	WHEN ` + count(`j.state IN `+UnfinishedSQL) + ` > 0 THEN 'running' ELSE ` + EndedStateSQL + ` END`

// EndedStateSQL is the state a workflow whose steps (alias j, aggregated) have all ended ended
// in: failed if one failed, canceled if one was canceled, else completed. It is the only place
// the rule is written: the marking stores it and WorkflowStateSQL derives it.
var EndedStateSQL = `CASE WHEN ` + count(`j.state = 'failed'`) + ` > 0 THEN 'failed'
	WHEN ` + count(`j.state = 'canceled'`) + ` > 0 THEN 'canceled' ELSE 'completed' END`

// EndedStates are the ended states (not running) among a list's filter, once each: each is
// read from the index of the marked workflows. The open workflows are read for every filter,
// as one may have ended and not be marked yet.
func EndedStates(states []hoppertype.WorkflowState) []string {
	var out []string
	seen := map[hoppertype.WorkflowState]bool{}
	for _, st := range states {
		if st != hoppertype.WorkflowRunning && !seen[st] {
			seen[st] = true
			out = append(out, string(st))
		}
	}
	return out
}

func count(cond string) string { return `sum(CASE WHEN ` + cond + ` THEN 1 ELSE 0 END)` }

// WorkflowCounts are the per-state counts of a workflow read, as WorkflowAggregates returns
// them: scan them into Dest.
type WorkflowCounts struct {
	n    []int64
	Dest []any
}

// NewWorkflowCounts returns scan targets for the counts of WorkflowAggregates.
func NewWorkflowCounts() *WorkflowCounts {
	c := &WorkflowCounts{n: make([]int64, len(hoppertype.AllStates))}
	for i := range c.n {
		c.Dest = append(c.Dest, &c.n[i])
	}
	return c
}

// Map returns the counts scanned last, by state, leaving out states without steps.
func (c *WorkflowCounts) Map() map[hoppertype.JobState]int {
	out := map[hoppertype.JobState]int{}
	for i, st := range hoppertype.AllStates {
		if c.n[i] > 0 {
			out[st] = int(c.n[i])
		}
	}
	return out
}

// StepsAfter groups the (child, parent step) pairs of a workflow's dependencies by child: the
// step names each step runs after, in the order given.
func StepsAfter(children, parents []string) map[string][]string {
	out := map[string][]string{}
	for i, c := range children {
		out[c] = append(out[c], parents[i])
	}
	return out
}
