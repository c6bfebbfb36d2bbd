package hopper

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// batchTally is the callback of the batch tests.
type batchTally struct{}

func (batchTally) Kind() string { return "batch-tally" }

// A batch's callback runs once every job has ended, also when some failed or were canceled,
// and reads how many of each with BatchCounts, with their results in the batch's order.
func TestEnqueueBatchRunsItsCallbackOnceAllJobsEnded(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		if job.Args.To == "bounce" {
			return NoRetry(errors.New("mailbox full"))
		}
		return SetResult(ctx, "sent to "+job.Args.To)
	})
	got := make(chan *BatchOutcome, 1)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[batchTally]) error {
		o, err := BatchCounts(ctx)
		if err != nil {
			return err
		}
		got <- o
		return nil
	})
	// A child released by a cancel (not by an attempt of this process) is found by the next
	// poll on SQLite: poll often, on the fake clock recvStepping moves.
	b := setup(t, ws, func(c *Config) { c.PollInterval = 100 * time.Millisecond })
	ctx := t.Context()
	held := &InsertOpts{Delay: 24 * time.Hour} // scheduled: canceled below before it runs
	res, err := b.client.EnqueueBatch(ctx, JobBatch{Name: "newsletter", Callback: BatchJob{Args: batchTally{}},
		Jobs: []BatchJob{{Args: sendEmail{To: "ann"}}, {Args: sendEmail{To: "bounce"}}, {Args: sendEmail{To: "bob"}},
			{Args: sendEmail{To: "later"}, Opts: held}}})
	require.NoError(t, err)
	require.Len(t, res.Jobs, 5)
	for i := range 4 {
		require.Equal(t, BatchJobStep(i), res.Jobs[i].Step)
	}
	cb := res.Job(BatchCallbackStep)
	require.NotNil(t, cb)
	require.Equal(t, StateWaiting, cb.State)
	require.Equal(t, "newsletter", res.Workflow.Name)

	b.waitFor(t, res.Jobs[0].ID, StateCompleted)
	b.waitFor(t, res.Jobs[1].ID, StateFailed)
	b.waitFor(t, res.Jobs[2].ID, StateCompleted)
	_, err = b.client.Cancel(ctx, res.Jobs[3].ID)
	require.NoError(t, err)
	o := recvStepping(t, b.clock, got)
	require.Equal(t, 4, o.Jobs)
	require.Equal(t, 2, o.Completed)
	require.Equal(t, 1, o.Failed)
	require.Equal(t, 1, o.Canceled)
	require.Len(t, o.Results, 4)
	var first string
	require.NoError(t, o.Results[0].Decode(&first))
	require.Equal(t, "sent to ann", first)
	require.Equal(t, ParentFailed, o.Results[1].Outcome)
	require.Contains(t, o.Results[1].Error, "mailbox full")
	require.Equal(t, BatchJobStep(3), o.Results[3].Step)
	b.waitFor(t, cb.ID, StateCompleted)

	wf, err := b.client.Workflow(ctx, res.Workflow.ID)
	require.NoError(t, err)
	require.Equal(t, WorkflowFailed, wf.Workflow.State, "a batch is a workflow: a failed job fails it")
}

// Bad batches are refused with the batch's own field names, and store nothing.
func TestEnqueueBatchIsValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	one := []BatchJob{{Args: sendEmail{}}}
	cb := BatchJob{Args: batchTally{}}
	cases := []struct {
		name  string
		batch JobBatch
		field string
	}{
		{"no name", JobBatch{Jobs: one, Callback: cb}, "name"},
		{"no jobs", JobBatch{Name: "b", Callback: cb}, "jobs"},
		{"too many jobs", JobBatch{Name: "b", Jobs: make([]BatchJob, MaxBatchJobs+1), Callback: cb}, "jobs"},
		{"nil args", JobBatch{Name: "b", Jobs: []BatchJob{{Args: sendEmail{}}, {}}, Callback: cb}, "jobs[1].args"},
		{"bad queue", JobBatch{Name: "b", Jobs: []BatchJob{{Args: sendEmail{}, Opts: &InsertOpts{Queue: "a b"}}}, Callback: cb},
			"jobs[0].queue"},
		{"ids in after", JobBatch{Name: "b", Jobs: []BatchJob{{Args: sendEmail{}, Opts: &InsertOpts{After: []string{"x"}}}},
			Callback: cb}, "jobs[0].after"},
		{"no callback", JobBatch{Name: "b", Jobs: one}, "callback.args"},
		{"callback key", JobBatch{Name: "b", Jobs: one, Callback: BatchJob{Args: batchTally{}, Opts: &InsertOpts{IdempotencyKey: "k"}}},
			"callback.idempotency_key"},
		{"callback policy", JobBatch{Name: "b", Jobs: one, Callback: BatchJob{Args: batchTally{}, Opts: &InsertOpts{OnParentFailure: ParentSkip}}},
			"callback.on_parent_failure"},
	}
	for _, tc := range cases {
		_, err := b.client.EnqueueBatch(ctx, tc.batch)
		require.ErrorIs(t, err, ErrInvalid, tc.name)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, tc.name)
		require.Equal(t, tc.field, ve.Field, tc.name)
	}
	wfs, err := b.client.ListWorkflows(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, wfs.Workflows, "no refused batch is stored")

	// The most jobs a batch takes is the server's workflow step limit, less its callback.
	require.Equal(t, b.client.InputLimits().MaxWorkflowSteps-1, MaxBatchJobs)
	_, err = b.client.EnqueueBatch(ctx, JobBatch{Name: "ok", Jobs: one, Callback: BatchJob{Args: batchTally{},
		Opts: &InsertOpts{OnParentFailure: ParentRun}}})
	require.NoError(t, err, "the callback may say run, which it is")
}

// CountBatch counts each outcome once; a parent that has not ended is in no count.
func TestCountBatch(t *testing.T) {
	t.Parallel()
	o := CountBatch([]ParentResult{{Outcome: ParentCompleted}, {Outcome: ParentFailed}, {Outcome: ParentCanceled},
		{Outcome: ParentSkipped}, {Outcome: ParentCompleted}, {}})
	require.Equal(t, BatchOutcome{Jobs: 6, Completed: 2, Failed: 1, Canceled: 2, Results: o.Results}, *o)
}
