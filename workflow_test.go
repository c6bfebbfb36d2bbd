package hopper

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// emailStep is a step that sends an e-mail to its own name.
func emailStep(name string, after ...string) WorkflowStep {
	return WorkflowStep{Name: name, Args: sendEmail{To: name}, After: after}
}

// A workflow's steps, given in any order, run each after the steps it names; the workflow
// reads as running, then completed, with its steps and what each runs after (contract 19).
func TestEnqueueWorkflowRunsStepsAfterTheirParents(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	ran := make(chan string, 10)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		ran <- job.Args.To
		return nil
	})
	b := setup(t, ws, nil)
	ctx := t.Context()
	res, err := b.client.EnqueueWorkflow(ctx, Workflow{Name: "publish-album", Steps: []WorkflowStep{
		emailStep("publish", "small", "large"), // before its parents: the client orders them
		emailStep("small", "fetch"),
		emailStep("large", "fetch"),
		emailStep("fetch"),
	}})
	require.NoError(t, err)
	require.Len(t, res.Jobs, 4)
	for i, name := range []string{"publish", "small", "large", "fetch"} {
		require.Equal(t, name, res.Jobs[i].Step, "jobs come in the order of the steps")
		require.Equal(t, res.Workflow.ID, res.Jobs[i].WorkflowID)
		require.Same(t, res.Jobs[i], res.Job(name))
	}
	require.Nil(t, res.Job("nope"))
	require.Equal(t, "publish-album", res.Workflow.Name)
	require.Equal(t, WorkflowRunning, res.Workflow.State)
	b.waitFor(t, res.Job("publish").ID, StateCompleted)
	order := []string{recv(t, ran), recv(t, ran), recv(t, ran), recv(t, ran)}
	require.Equal(t, "fetch", order[0])
	require.ElementsMatch(t, []string{"small", "large"}, order[1:3])
	require.Equal(t, "publish", order[3])

	d, err := b.client.Workflow(ctx, res.Workflow.ID)
	require.NoError(t, err)
	require.Equal(t, WorkflowCompleted, d.Workflow.State)
	require.Equal(t, map[JobState]int{StateCompleted: 4}, d.Workflow.StepStates)
	var names []string
	for _, s := range d.Steps {
		names = append(names, s.Job.Step)
	}
	require.Equal(t, []string{"fetch", "small", "large", "publish"}, names, "parents first, as enqueued")
	require.Equal(t, []string{"small", "large"}, d.Steps[3].After)
	require.Empty(t, d.Steps[0].After)

	list, err := b.client.ListWorkflows(ctx, &WorkflowListParams{Name: "publish-album", States: []WorkflowState{WorkflowCompleted}})
	require.NoError(t, err)
	require.Len(t, list.Workflows, 1)
	require.Equal(t, res.Workflow.ID, list.Workflows[0].ID)
	plain, err := b.client.Enqueue(ctx, sendEmail{To: "alone"}, nil)
	require.NoError(t, err)
	require.Empty(t, plain.Job.WorkflowID)
	require.Empty(t, plain.Job.Step)
}

// Bad workflows are refused before anything is stored, with the field named: cycles, unknown
// and repeated step names, options a step cannot take.
func TestEnqueueWorkflowIsValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	steps := func(s ...WorkflowStep) []WorkflowStep { return s }
	cases := []struct {
		name   string
		wf     Workflow
		field  string
		reason string
	}{
		{"no name", Workflow{Steps: steps(emailStep("a"))}, "name", ""},
		{"bad name", Workflow{Name: "a b", Steps: steps(emailStep("a"))}, "name", ""},
		{"no steps", Workflow{Name: "w"}, "steps", ""},
		{"unnamed step", Workflow{Name: "w", Steps: steps(emailStep("a"), emailStep(""))}, "steps[1].name", ""},
		{"repeated name", Workflow{Name: "w", Steps: steps(emailStep("a"), emailStep("b"), emailStep("a"))},
			"steps[2].name", "also the name of steps[0]"},
		{"unknown step", Workflow{Name: "w", Steps: steps(emailStep("a"), emailStep("b", "a", "c"))},
			"steps[1].after[1]", `no step is named "c"`},
		{"after itself", Workflow{Name: "w", Steps: steps(emailStep("a", "a"))}, "steps[0].after[0]", "cycle: a after a"},
		{"cycle", Workflow{Name: "w", Steps: steps(emailStep("x"), emailStep("a", "c"), emailStep("b", "a"),
			emailStep("c", "x", "b"))}, "steps[2].after[0]", `"a" makes a cycle: b after a after c after b`},
		{"nil args", Workflow{Name: "w", Steps: steps(emailStep("a"), WorkflowStep{Name: "b"})}, "steps[1].args", ""},
		{"bad queue", Workflow{Name: "w", Steps: steps(emailStep("a"),
			WorkflowStep{Name: "b", Args: sendEmail{}, Opts: &InsertOpts{Queue: "no spaces"}})}, "steps[1].queue", ""},
		{"bad policy", Workflow{Name: "w", Steps: steps(emailStep("a"),
			WorkflowStep{Name: "b", Args: sendEmail{}, After: []string{"a"}, OnParentFailure: "retry"})},
			"steps[1].on_parent_failure", ""},
		{"job ids in opts", Workflow{Name: "w", Steps: steps(emailStep("a"),
			WorkflowStep{Name: "b", Args: sendEmail{}, Opts: &InsertOpts{After: []string{"a"}}})}, "steps[1].after", ""},
		{"idempotency key", Workflow{Name: "w", Steps: steps(
			WorkflowStep{Name: "a", Args: sendEmail{}, Opts: &InsertOpts{IdempotencyKey: "k"}})}, "steps[0].idempotency_key", ""},
		{"merge key", Workflow{Name: "w", Steps: steps(
			WorkflowStep{Name: "a", Args: sendEmail{}, Opts: &InsertOpts{MergeKey: "k"}})}, "steps[0].merge_key", ""},
	}
	for _, tc := range cases {
		_, err := b.client.EnqueueWorkflow(ctx, tc.wf)
		require.ErrorIs(t, err, ErrInvalid, tc.name)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, tc.name)
		require.Equal(t, tc.field, ve.Field, tc.name)
		require.Contains(t, ve.Reason, tc.reason, tc.name)
	}
	jobs, err := b.client.List(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, jobs.Jobs, "no step of a refused workflow is stored")
	wfs, err := b.client.ListWorkflows(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, wfs.Workflows)

	for name, p := range map[string]*WorkflowListParams{
		"limit": {Limit: -1}, "states": {States: []WorkflowState{"done"}}, "name": {Name: "a b"}, "cursor": {Cursor: "nope"},
	} {
		_, err := b.client.ListWorkflows(ctx, p)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, name)
		require.Equal(t, name, ve.Field)
	}
	_, err = b.client.Workflow(ctx, "")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = b.client.Workflow(ctx, "0190f0e4-0000-7000-8000-000000000000")
	require.ErrorIs(t, err, ErrNotFound)
}

// Canceling a workflow stops its running step's handler, cancels the steps that wait, leaves
// the ended ones, and nothing of it runs afterwards.
func TestCancelWorkflowStopsItsSteps(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started := make(chan string, 10)
	stopped := make(chan error, 10)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		started <- job.Args.To
		if job.Args.To != "slow" {
			return nil
		}
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return ctx.Err()
	})
	b := setup(t, ws, nil)
	ctx := t.Context()
	res, err := b.client.EnqueueWorkflow(ctx, Workflow{Name: "nightly", Steps: []WorkflowStep{
		emailStep("quick"), emailStep("slow", "quick"), emailStep("last", "slow"),
	}})
	require.NoError(t, err)
	require.Equal(t, "quick", recv(t, started))
	require.Equal(t, "slow", recv(t, started))
	b.waitFor(t, res.Job("slow").ID, StateRunning)

	canceled, err := b.client.CancelWorkflow(ctx, res.Workflow.ID, "")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{res.Job("slow").ID, res.Job("last").ID}, []string{canceled.Canceled[0].ID, canceled.Canceled[1].ID})
	require.Equal(t, WorkflowCanceled, canceled.Workflow.State)
	require.True(t, errors.Is(recv(t, stopped), ErrJobCanceled), "the running step's handler is told")
	require.Equal(t, StateCompleted, b.waitFor(t, res.Job("quick").ID, StateCompleted).State)
	last := b.waitFor(t, res.Job("last").ID, StateCanceled)
	require.Equal(t, StateCanceled, last.State)
	events, err := b.client.Events(ctx, last.ID)
	require.NoError(t, err)
	require.Equal(t, "workflow canceled", events[len(events)-1].Reason)
	require.Equal(t, ActorAPI, events[len(events)-1].Actor)

	_, err = b.client.CancelWorkflow(ctx, res.Workflow.ID, "again")
	require.ErrorIs(t, err, ErrInvalidTransition)
	_, err = b.client.CancelWorkflow(ctx, "0190f0e4-0000-7000-8000-000000000000", "")
	require.ErrorIs(t, err, ErrNotFound)
	require.Empty(t, started, "no step ran after the cancel")
}
