package hopper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
)

// Workflows: a named set of jobs, its steps, enqueued in one transaction, each step waiting
// for the steps it names in After (docs/workflows.md). The dependencies are those of
// InsertOpts.After; a workflow adds step names, one id for the whole, and calls that act on
// the whole (Workflow, ListWorkflows, CancelWorkflow).

// MaxWorkflowSteps bounds the steps of one workflow.
const MaxWorkflowSteps = 10_000

// Workflow is a workflow to enqueue (Client.EnqueueWorkflow).
type Workflow struct {
	// Name says what the workflow is ("publish-album"); listings filter by it, and several
	// workflows may share it. 1–128 letters, digits, '_', '-', '.' and ':'. Required.
	Name string
	// Steps are the workflow's jobs, 1 to MaxWorkflowSteps, in any order: each runs after the
	// steps its After names.
	Steps []WorkflowStep
}

// WorkflowStep is one job of a workflow.
type WorkflowStep struct {
	// Name names the step in its workflow, unique there; the same characters as
	// Workflow.Name. Required.
	Name string
	// Args is the job's payload; its Kind says which worker runs it.
	Args JobArgs
	// Opts are the job's options, as for Enqueue (nil: defaults). Not After (the step's own
	// After names its parents), IdempotencyKey or MergeKey (a step's job is its workflow's
	// own, never another's).
	Opts *InsertOpts
	// After names the steps this one runs after: it waits (StateWaiting) until they have all
	// ended. A name that is no step, or a cycle, is a *ValidationError naming
	// steps[i].after[k].
	After []string
	// OnParentFailure is what a parent's failure or cancel does to this step (ParentCancel,
	// the default, ParentRun or ParentSkip); it wins over Opts.OnParentFailure.
	OnParentFailure ParentPolicy
}

// Workflow states (WorkflowRow.State), derived from the states of the steps.
type WorkflowState = hoppertype.WorkflowState

// The workflow states; see docs/workflows.md.
const (
	// WorkflowRunning: some step has not ended.
	WorkflowRunning = hoppertype.WorkflowRunning
	// WorkflowCompleted: every step completed.
	WorkflowCompleted = hoppertype.WorkflowCompleted
	// WorkflowFailed: every step has ended and one failed (whatever else was canceled).
	WorkflowFailed = hoppertype.WorkflowFailed
	// WorkflowCanceled: every step has ended, none failed, one was canceled.
	WorkflowCanceled = hoppertype.WorkflowCanceled
)

// WorkflowStates lists the workflow states in a stable order (running, completed, failed,
// canceled).
var WorkflowStates = hoppertype.WorkflowStates

type (
	// WorkflowRow is a workflow as stored, with the state its steps give it.
	WorkflowRow = hoppertype.WorkflowRow
	// StepRow is a step of a workflow: its job and the names of the steps it runs after.
	StepRow = hoppertype.StepRow
)

// WorkflowResult is an enqueued workflow: the workflow and its steps' jobs, in the order of
// Workflow.Steps.
type WorkflowResult struct {
	Workflow *WorkflowRow
	Jobs     []*JobRow
}

// Job returns the job of the step named step, or nil.
func (r *WorkflowResult) Job(step string) *JobRow {
	for _, j := range r.Jobs {
		if j.Step == step {
			return j
		}
	}
	return nil
}

// WorkflowDetail is a workflow with its steps, in the order they were enqueued (parents
// first).
type WorkflowDetail struct {
	Workflow *WorkflowRow
	Steps    []*StepRow
}

// WorkflowListParams filters and pages ListWorkflows. Zero fields don't filter.
type WorkflowListParams struct {
	// Name keeps the workflows of this name.
	Name string
	// States keeps the workflows in these states. No index serves it: a rare state takes a
	// read of many workflows.
	States []WorkflowState
	// Cursor continues from a previous page's NextCursor.
	Cursor string
	// Limit is the page size (default 100, at most 10,000).
	Limit int
	// Ascending lists oldest first; the default is newest first.
	Ascending bool
}

// WorkflowListResult is one page of workflows; NextCursor is empty on the last page.
type WorkflowListResult struct {
	Workflows  []*WorkflowRow
	NextCursor string
}

// WorkflowCancelResult is a canceled workflow, as the cancel left it, and the steps it
// canceled.
type WorkflowCancelResult struct {
	Workflow *WorkflowRow
	Canceled []*JobRow
}

// EnqueueWorkflow stores a workflow: every step's job, with one workflow id, in one
// transaction, all or none. A step without parents is queued (or scheduled) at once; the
// others wait for theirs, which release them as jobs enqueued with InsertOpts.After are
// released. Bad input is a *ValidationError naming the field (name, steps, steps[3].name,
// steps[3].after[0] for an unknown step or a cycle, steps[3].queue…) and stores nothing.
func (c *Client) EnqueueWorkflow(ctx context.Context, wf Workflow) (*WorkflowResult, error) {
	order, err := planWorkflow(wf)
	if err != nil {
		return nil, err
	}
	p := &store.WorkflowInsertParams{ID: uuid.Must(uuid.NewV7()).String(), Name: wf.Name,
		Steps: make([]*store.InsertParams, len(order))}
	ids := make(map[string]string, len(wf.Steps)) // step name → job id
	now := c.clock.Now()
	for n, i := range order {
		sp, err := c.stepParams(ctx, wf.Steps[i], ids, now)
		if err != nil {
			return nil, prefixField(fmt.Sprintf("steps[%d].", i), err)
		}
		sp.WorkflowID, sp.Step = p.ID, wf.Steps[i].Name
		ids[sp.Step], p.Steps[n] = sp.ID, sp
	}
	res, err := c.store.WorkflowInsert(ctx, p)
	if err != nil {
		var pe *store.ParentError
		if errors.As(err, &pe) {
			return nil, invalid(fmt.Sprintf("steps[%d].%s", order[pe.Item], pe.Field()), "%s", pe.Reason())
		}
		return nil, err
	}
	out := &WorkflowResult{Workflow: res.Workflow, Jobs: make([]*JobRow, len(order))}
	inserted := make([]*InsertResult, len(order))
	for n, j := range res.Jobs {
		out.Jobs[order[n]], inserted[n] = j, &InsertResult{Job: j}
	}
	c.wakeInserted(inserted)
	c.obs.workflow(ctx, WorkflowEnqueued, res.Workflow)
	c.obs.enqueued(ctx, inserted)
	return out, nil
}

// stepParams builds the insert of a step whose parents' job ids are in ids (the steps go in
// parents first).
func (c *Client) stepParams(ctx context.Context, s WorkflowStep, ids map[string]string, now time.Time) (*store.InsertParams, error) {
	if s.Args == nil {
		return nil, invalid("args", "is nil")
	}
	o := InsertOptsFor(s.Args, s.Opts)
	switch {
	case len(o.After) > 0:
		return nil, invalid("after", "InsertOpts.After is not for a step: its After names the steps it runs after")
	case o.IdempotencyKey != "":
		return nil, invalid("idempotency_key", "a step's job is its workflow's own: no idempotency key")
	case o.MergeKey != "":
		return nil, invalid("merge_key", "a step's job is its workflow's own: no merge key")
	}
	after, err := stepIDs(ids, s.After, "after")
	if err != nil {
		return nil, err
	}
	o.After = append(o.After, after...)
	if s.OnParentFailure != "" {
		o.OnParentFailure = s.OnParentFailure
	}
	return c.insertParams(ctx, s.Args, &o, now)
}

// stepIDs returns the job ids of the steps names, by ids (step name → job id: the steps
// already built, of a workflow or of a spawn); a name not there is a *ValidationError naming
// field[k].
func stepIDs(ids map[string]string, names []string, field string) ([]string, error) {
	out := make([]string, len(names))
	for k, name := range names {
		id, ok := ids[name]
		if !ok {
			return nil, invalid(fmt.Sprintf("%s[%d]", field, k), "no step %q comes before it", name)
		}
		out[k] = id
	}
	return out, nil
}

// planWorkflow checks a workflow's name and the names its steps give and take, and returns the
// order to insert its steps in: each after its parents, otherwise as given (a depth-first
// walk, which finds cycles too).
func planWorkflow(wf Workflow) ([]int, error) {
	if err := field.Name("name", wf.Name); err != nil {
		return nil, err
	}
	if len(wf.Steps) == 0 || len(wf.Steps) > MaxWorkflowSteps {
		return nil, invalid("steps", "%d steps, want 1–%d", len(wf.Steps), MaxWorkflowSteps)
	}
	index := make(map[string]int, len(wf.Steps))
	for i, s := range wf.Steps {
		name := fmt.Sprintf("steps[%d].name", i)
		if err := field.Name(name, s.Name); err != nil {
			return nil, err
		}
		if j, ok := index[s.Name]; ok {
			return nil, invalid(name, "%q is also the name of steps[%d]", s.Name, j)
		}
		index[s.Name] = i
	}
	for i, s := range wf.Steps {
		for k, a := range s.After {
			if _, ok := index[a]; !ok {
				return nil, invalid(fmt.Sprintf("steps[%d].after[%d]", i, k), "no step is named %q", a)
			}
		}
	}
	w := &walk{wf: wf, index: index, state: make([]int8, len(wf.Steps))}
	for i := range wf.Steps {
		if err := w.visit(i); err != nil {
			return nil, err
		}
	}
	return w.order, nil
}

// walk is planWorkflow's depth-first walk: state 1 while a step's parents are being visited
// (it is on path), 2 once it is in order.
type walk struct {
	wf    Workflow
	index map[string]int
	state []int8
	path  []int
	order []int
}

func (w *walk) visit(i int) error {
	if w.state[i] == 2 {
		return nil
	}
	w.state[i] = 1
	w.path = append(w.path, i)
	for k, a := range w.wf.Steps[i].After {
		j := w.index[a]
		switch w.state[j] {
		case 1:
			return invalid(fmt.Sprintf("steps[%d].after[%d]", i, k), "%q makes a cycle: %s", a, w.cycle(j, i))
		case 0:
			if err := w.visit(j); err != nil {
				return err
			}
		}
	}
	w.path = w.path[:len(w.path)-1]
	w.state[i] = 2
	w.order = append(w.order, i)
	return nil
}

// cycle names the steps of the cycle the walk found, step to having a parent, from, that is
// on the walk's path: to runs after from, which runs after … to.
func (w *walk) cycle(from, to int) string {
	names := []string{w.wf.Steps[to].Name}
	for n := slices.Index(w.path, from); n < len(w.path); n++ {
		names = append(names, w.wf.Steps[w.path[n]].Name)
	}
	return strings.Join(names, " after ")
}

// Workflow returns a workflow with its steps, or an error wrapping ErrNotFound (also once
// every step has expired, its result TTL past).
func (c *Client) Workflow(ctx context.Context, id string) (*WorkflowDetail, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	d, err := c.store.WorkflowGet(ctx, id)
	if err != nil {
		return nil, err
	}
	return &WorkflowDetail{Workflow: d.Workflow, Steps: d.Steps}, nil
}

// ListWorkflows returns one page of workflows in creation order (newest first unless
// Ascending). Paging with NextCursor visits every matching workflow once.
func (c *Client) ListWorkflows(ctx context.Context, p *WorkflowListParams) (*WorkflowListResult, error) {
	if p == nil {
		p = &WorkflowListParams{}
	}
	if err := checkPageLimit(p.Limit); err != nil {
		return nil, err
	}
	if p.Name != "" {
		if err := field.Name("name", p.Name); err != nil {
			return nil, err
		}
	}
	for _, s := range p.States {
		if !s.Valid() {
			return nil, invalid("states", "unknown workflow state %q (want one of %v)", s, hoppertype.WorkflowStates)
		}
	}
	if err := checkLimited("cursor", p.Cursor, maxNameLen); err != nil {
		return nil, err
	}
	res, err := c.store.WorkflowList(ctx, &store.WorkflowListParams{Name: p.Name, States: p.States,
		Cursor: p.Cursor, Limit: p.Limit, Ascending: p.Ascending})
	if errors.Is(err, store.ErrInvalidCursor) {
		return nil, invalid("cursor", "%q is not a cursor a ListWorkflows call returned", p.Cursor)
	}
	if err != nil {
		return nil, err
	}
	return &WorkflowListResult{Workflows: res.Workflows, NextCursor: res.NextCursor}, nil
}

// CancelWorkflow cancels every step of a workflow that has not ended, in one transaction,
// recorded as done by the API with reason (empty: "workflow canceled"): waiting, scheduled,
// queued, suspended and running steps end canceled (a running step's handler is told, as by
// Cancel), steps that ended stay as they were, and no step of the workflow is released
// afterwards. A job outside the workflow that waits for one of its steps follows its
// OnParentFailure policy. It returns an error wrapping ErrNotFound for no such workflow, and
// ErrInvalidTransition when every step has ended.
func (c *Client) CancelWorkflow(ctx context.Context, id, reason string) (*WorkflowCancelResult, error) {
	return c.CancelWorkflowBy(ctx, id, ActorAPI, reason)
}

// CancelWorkflowBy is CancelWorkflow with the actor recorded in the steps' history (the CLI
// and the server record an operator). A canceled step is kept for its result TTL
// (Config.ResultTTL unless it has its own).
func (c *Client) CancelWorkflowBy(ctx context.Context, id string, actor Actor, reason string) (*WorkflowCancelResult, error) {
	if reason == "" {
		reason = "workflow canceled"
	}
	if err := checkChange(id, actor, reason); err != nil {
		return nil, err
	}
	res, err := c.store.WorkflowCancel(ctx, &store.WorkflowCancelParams{ID: id, Actor: actor, Reason: reason,
		ExpiresAt: c.engine.ExpiresAt(nil, nil, StateCanceled)})
	if err != nil {
		return nil, err
	}
	for _, jobID := range res.WereRunning {
		c.engine.CancelRunning(jobID)
	}
	c.obs.workflow(ctx, WorkflowCancel, res.Workflow)
	return &WorkflowCancelResult{Workflow: res.Workflow, Canceled: res.Canceled}, nil
}
