package hopper

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/engine"
	"github.com/hopperjobs/hopper/internal/store"
)

// A schedule can start a workflow (Schedule.Workflow): its steps are checked once, when the
// schedule is added, as EnqueueWorkflow checks them, and kept as a template (store.WorkflowTemplate)
// that the leader's fire step turns into one workflow per fire time (engine.FireWorkflow).

// scheduleWorkflow checks the workflow of s and puts its template into sc.
func (c *Client) scheduleWorkflow(s Schedule, sc *store.Schedule) error {
	switch {
	case s.Kind != "" || s.Args != nil:
		return invalid("workflow", "a schedule enqueues a job (kind, args) or a workflow, not both")
	case s.Queue != "" || s.Priority != 0 || s.MaxAttempts != 0 || s.Timeout != 0 || len(s.Headers) > 0:
		return invalid("workflow", "a workflow schedule's steps have their own options: leave queue, priority, max_attempts, timeout and headers unset")
	case s.FixedDelay != 0:
		return invalid("fixed_delay", "a workflow schedule fires on cron or every, not a fixed delay")
	}
	wf := *s.Workflow
	order, err := planWorkflow(wf)
	if err != nil {
		return prefixField("workflow.", err)
	}
	t := &store.WorkflowTemplate{Name: wf.Name, Steps: make([]*store.TemplateStep, len(order))}
	names := make(map[string]string, len(wf.Steps)) // a template's parents are step names
	now := c.clock.Now()
	for n, i := range order {
		step := wf.Steps[i]
		for _, a := range step.After {
			names[a] = a
		}
		field := fmt.Sprintf("workflow.steps[%d].", i)
		if step.Args != nil {
			if o := InsertOptsFor(step.Args, step.Opts); !o.RunAt.IsZero() {
				return invalid(field+"run_at", "a scheduled workflow's steps start at each fire time: give a delay instead")
			}
		}
		// No trace context: each fire is a trace of its own, as a single job's.
		p, err := c.stepParams(context.Background(), step, names, now)
		if err != nil {
			return prefixField(field, err)
		}
		ts := &store.TemplateStep{Job: p, After: p.After}
		if !p.RunAt.IsZero() {
			ts.Delay = p.RunAt.Sub(now)
		}
		p.ID, p.After, p.RunAt, p.Step = "", nil, time.Time{}, step.Name
		t.Steps[n] = ts
	}
	sc.Workflow, sc.Args = t, json.RawMessage(`{}`) // the args column is NOT NULL
	return nil
}

// templateWorkflow is the Workflow a stored template stands for, as a ScheduleInfo shows it:
// each step's args as raw JSON of its kind, its options as stored (the defaults applied).
func templateWorkflow(t *store.WorkflowTemplate) *Workflow {
	wf := &Workflow{Name: t.Name, Steps: make([]WorkflowStep, len(t.Steps))}
	for i, st := range t.Steps {
		j := st.Job
		wf.Steps[i] = WorkflowStep{Name: j.Step, After: st.After, OnParentFailure: j.OnParentFailure,
			Args: RawArgs{KindName: j.Kind, JSON: json.RawMessage(j.Args)},
			Opts: &InsertOpts{Queue: j.Queue, Priority: j.Priority, MaxAttempts: j.MaxAttempts, MaxRescues: j.MaxRescues,
				Timeout: j.Timeout, Headers: j.Headers, RetryPolicy: j.RetryPolicy, ResultTTL: j.ResultTTL,
				GroupKey: j.GroupKey, FairnessKey: j.FairnessKey, Delay: st.Delay}}
	}
	return wf
}

// runWorkflowSchedule is a manual fire of a workflow schedule: its workflow, enqueued now. It
// returns the job of its first step (parents first); the workflow is that job's WorkflowID.
// Unlike a job schedule's manual fire it is not recorded on the schedule.
func (c *Client) runWorkflowSchedule(ctx context.Context, sc *store.Schedule, at time.Time, actor Actor, reason string) (*JobRow, error) {
	res, err := c.store.WorkflowInsert(ctx, engine.ManualFireWorkflow(sc, at, actor, reason))
	if err != nil {
		return nil, err
	}
	inserted := make([]*InsertResult, len(res.Jobs))
	for i, j := range res.Jobs {
		inserted[i] = &InsertResult{Job: j}
	}
	c.wakeInserted(inserted)
	c.obs.enqueued(ctx, inserted)
	return res.Jobs[0], nil
}
