package hopperclient_test

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/stretchr/testify/require"
)

// A workflow through a server: enqueued whole, read, listed and canceled as through a
// hopper.Client, its bad fields named as the Go API names them.
func TestWorkflows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	res, err := b.client.EnqueueWorkflow(ctx, hopper.Workflow{Name: "newsletter", Steps: []hopper.WorkflowStep{
		{Name: "send", Args: Email{To: "b@example.com"}, After: []string{"digest"}, OnParentFailure: hopper.ParentRun},
		{Name: "digest", Args: Digest{}},
	}})
	require.NoError(t, err)
	require.Equal(t, "newsletter", res.Workflow.Name)
	require.Equal(t, hopper.WorkflowRunning, res.Workflow.State)
	require.Equal(t, "send", res.Jobs[0].Step)
	require.Equal(t, hopper.StateWaiting, res.Jobs[0].State)
	require.Equal(t, "digests", res.Job("digest").Queue, "the args type's defaults apply")
	require.Equal(t, res.Workflow.ID, res.Job("digest").WorkflowID)

	d, err := b.client.Workflow(ctx, res.Workflow.ID)
	require.NoError(t, err)
	require.Len(t, d.Steps, 2)
	require.Equal(t, "digest", d.Steps[0].Job.Step)
	require.Equal(t, []string{"digest"}, d.Steps[1].After)
	require.Equal(t, map[hopper.JobState]int{hopper.StateQueued: 1, hopper.StateWaiting: 1}, d.Workflow.StepStates)

	list, err := b.client.ListWorkflows(ctx, &hopper.WorkflowListParams{Name: "newsletter"})
	require.NoError(t, err)
	require.Len(t, list.Workflows, 1)
	require.Equal(t, res.Workflow.ID, list.Workflows[0].ID)

	canceled, err := b.client.CancelWorkflow(ctx, res.Workflow.ID, "list closed")
	require.NoError(t, err)
	require.Equal(t, hopper.WorkflowCanceled, canceled.Workflow.State)
	require.Len(t, canceled.Canceled, 2)
	events, err := b.client.Events(ctx, res.Job("send").ID)
	require.NoError(t, err)
	require.Equal(t, "list closed", events[len(events)-1].Reason)
	_, err = b.client.CancelWorkflow(ctx, res.Workflow.ID, "")
	require.ErrorIs(t, err, hopper.ErrInvalidTransition)
	_, err = b.client.Workflow(ctx, "0190f0e4-0000-7000-8000-000000000000")
	require.ErrorIs(t, err, hopper.ErrNotFound)

	bad := []hopper.WorkflowStep{{Name: "a", Args: Email{}}, {Name: "b", Args: Email{}, After: []string{"c"}}}
	_, err = b.client.EnqueueWorkflow(ctx, hopper.Workflow{Name: "w", Steps: bad})
	requireField(t, err, "steps[1].after[0]")
	bad[1] = hopper.WorkflowStep{Name: "b", Args: Email{}, Opts: &hopper.InsertOpts{Queue: "no spaces"}}
	_, err = b.client.EnqueueWorkflow(ctx, hopper.Workflow{Name: "w", Steps: bad})
	requireField(t, err, "steps[1].queue")
	bad[1] = hopper.WorkflowStep{Name: "b", Args: Email{}, Opts: &hopper.InsertOpts{After: []string{res.Job("send").ID}}}
	_, err = b.client.EnqueueWorkflow(ctx, hopper.Workflow{Name: "w", Steps: bad})
	requireField(t, err, "steps[1].after")
	_, err = b.client.ListWorkflows(ctx, &hopper.WorkflowListParams{States: []hopper.WorkflowState{"done"}})
	requireField(t, err, "states")
}

// A batch through a server is its workflow: its jobs, and a callback after them all with
// policy run; a refusal names the batch's field.
func TestEnqueueBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	res, err := b.client.EnqueueBatch(ctx, hopper.JobBatch{Name: "mailing",
		Jobs:     []hopper.BatchJob{{Args: Email{To: "a@example.com"}}, {Args: Email{To: "b@example.com"}}},
		Callback: hopper.BatchJob{Args: Digest{}}})
	require.NoError(t, err)
	require.Len(t, res.Jobs, 3)
	d, err := b.client.Workflow(ctx, res.Workflow.ID)
	require.NoError(t, err)
	require.Equal(t, []string{hopper.BatchJobStep(0), hopper.BatchJobStep(1)}, d.Steps[2].After)
	require.Equal(t, hopper.StateWaiting, res.Job(hopper.BatchCallbackStep).State)

	_, err = b.client.EnqueueBatch(ctx, hopper.JobBatch{Name: "mailing",
		Jobs:     []hopper.BatchJob{{Args: Email{}}, {Args: Email{}, Opts: &hopper.InsertOpts{Queue: "no spaces"}}},
		Callback: hopper.BatchJob{Args: Digest{}}})
	requireField(t, err, "jobs[1].queue")
	_, err = b.client.EnqueueBatch(ctx, hopper.JobBatch{Name: "mailing", Jobs: []hopper.BatchJob{{Args: Email{}}},
		Callback: hopper.BatchJob{Args: Digest{}, Opts: &hopper.InsertOpts{Queue: "no spaces"}}})
	requireField(t, err, "callback.queue")
}

// A schedule that starts a workflow goes through the server and comes back with its steps
// (their args types' defaults applied), and a bad step is named as the Go API names it.
func TestWorkflowSchedule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	wf := &hopper.Workflow{Name: "nightly", Steps: []hopper.WorkflowStep{
		{Name: "send", Args: Email{To: "ops@example.com"}, After: []string{"digest"}, OnParentFailure: hopper.ParentRun},
		{Name: "digest", Args: Digest{}, Opts: &hopper.InsertOpts{Delay: time.Minute}},
	}}
	info, err := b.client.AddSchedule(ctx, hopper.Schedule{Name: "nightly", Cron: "0 3 * * *", TZ: "Europe/Paris", Workflow: wf})
	require.NoError(t, err)
	require.NotNil(t, info.Workflow)
	require.Equal(t, "nightly", info.Workflow.Name)
	require.Equal(t, "digest", info.Workflow.Steps[0].Name, "parents first")
	require.Equal(t, "digests", info.Workflow.Steps[0].Opts.Queue)
	require.Equal(t, time.Minute, info.Workflow.Steps[0].Opts.Delay)
	require.Equal(t, []string{"digest"}, info.Workflow.Steps[1].After)
	require.Equal(t, hopper.ParentRun, info.Workflow.Steps[1].OnParentFailure)
	require.Empty(t, info.Kind)
	list, err := b.client.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, info.Workflow, list[0].Workflow)

	job, err := b.client.RunSchedule(ctx, "nightly")
	require.NoError(t, err)
	d, err := b.client.Workflow(ctx, job.WorkflowID)
	require.NoError(t, err)
	require.Len(t, d.Steps, 2)

	wf.Steps[1].Opts = &hopper.InsertOpts{Queue: "no spaces"}
	_, err = b.client.AddSchedule(ctx, hopper.Schedule{Name: "bad", Cron: "0 3 * * *", Workflow: wf})
	requireField(t, err, "workflow.steps[1].queue")
	_, err = b.client.AddSchedule(ctx, hopper.Schedule{Name: "bad", FixedDelay: time.Minute, Workflow: wf})
	requireField(t, err, "fixed_delay")
}
