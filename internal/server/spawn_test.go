package server_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
)

// splitMergeOverTheAPI enqueues split → merge, the split step in queue "split", and claims
// it as a remote worker would.
func splitMergeOverTheAPI(t *testing.T, e *env) (*hopperv1.EnqueueWorkflowResponse, *hopperv1.ActivatedJob) {
	t.Helper()
	res, err := e.workflows.EnqueueWorkflow(t.Context(), &hopperv1.EnqueueWorkflowRequest{Name: "split-merge", Steps: []*hopperv1.WorkflowStep{
		{Name: "split", Job: &hopperv1.JobSpec{Kind: "split", Queue: "split"}},
		{Name: "merge", Job: &hopperv1.JobSpec{Kind: "merge", Queue: "merge", After: []string{"split"}}},
	}})
	require.NoError(t, err)
	return res, e.activate(t, &hopperv1.ActivateRequest{Queue: "split"})[0]
}

func chunk(step, args string) *hopperv1.SpawnJob {
	return &hopperv1.SpawnJob{Step: step, Job: &hopperv1.JobSpec{Kind: "chunk", Queue: "chunks", Args: args}}
}

// A worker spawns jobs into the workflow of the job it holds; the merge step waits for them;
// the same step names again return the same jobs (docs/workflows.md, "Fan-out at run time").
func TestSpawnOverTheAPI(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		ctx := t.Context()
		wf, split := splitMergeOverTheAPI(t, e)
		req := &hopperv1.SpawnRequest{Id: split.GetId(), LeaseToken: split.GetLeaseToken(),
			Jobs: []*hopperv1.SpawnJob{chunk("chunk-0", `{"i":0}`), chunk("", `{"i":1}`)}}
		res, err := e.workers.Spawn(ctx, req)
		require.NoError(t, err)
		require.Len(t, res.GetResults(), 2)
		for _, r := range res.GetResults() {
			require.False(t, r.GetExisting())
			require.Equal(t, wf.GetWorkflow().GetId(), r.GetJob().GetWorkflowId())
			require.Equal(t, "queued", r.GetJob().GetState())
		}
		require.Equal(t, "chunk-0", res.GetResults()[0].GetJob().GetStep())
		require.True(t, strings.HasPrefix(res.GetResults()[1].GetJob().GetStep(), "split."), "a generated step name")

		again, err := e.workers.Spawn(ctx, &hopperv1.SpawnRequest{Id: split.GetId(), LeaseToken: split.GetLeaseToken(),
			Jobs: []*hopperv1.SpawnJob{chunk("chunk-0", `{"i":0}`)}})
		require.NoError(t, err)
		require.True(t, again.GetResults()[0].GetExisting())
		require.Equal(t, res.GetResults()[0].GetJob().GetId(), again.GetResults()[0].GetJob().GetId())

		_, err = e.workers.Complete(ctx, &hopperv1.CompleteRequest{Id: split.GetId(), LeaseToken: split.GetLeaseToken()})
		require.NoError(t, err)
		merge := wf.GetJobs()[1].GetId()
		require.Equal(t, "waiting", e.get(t, merge).GetState(), "the chunks still run")
		for _, j := range e.activate(t, &hopperv1.ActivateRequest{Queue: "chunks", MaxJobs: 2}) {
			_, err := e.workers.Complete(ctx, &hopperv1.CompleteRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken()})
			require.NoError(t, err)
		}
		require.Equal(t, "queued", e.get(t, merge).GetState())
		d, err := e.workflows.GetWorkflow(ctx, &hopperv1.GetWorkflowRequest{Id: wf.GetWorkflow().GetId()})
		require.NoError(t, err)
		require.Len(t, d.GetSteps(), 4)
	})
}

// Spawn is fenced like every call about an attempt, and refuses bad input naming the field,
// spawning none of the request's jobs.
func TestSpawnIsFencedAndValidated(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := t.Context()
	_, split := splitMergeOverTheAPI(t, e)
	spawn := func(token int64, jobs ...*hopperv1.SpawnJob) error {
		_, err := e.workers.Spawn(ctx, &hopperv1.SpawnRequest{Id: split.GetId(), LeaseToken: token, Jobs: jobs})
		return err
	}
	requireCode(t, connect.CodeFailedPrecondition, spawn(split.GetLeaseToken()+1, chunk("a", `{}`)))
	_, err := e.workers.Spawn(ctx, &hopperv1.SpawnRequest{Id: "0190f0e4-0000-7000-8000-000000000000", LeaseToken: 1,
		Jobs: []*hopperv1.SpawnJob{chunk("a", `{}`)}})
	requireCode(t, connect.CodeNotFound, err)
	for _, tc := range []struct {
		jobs  []*hopperv1.SpawnJob
		field string
	}{
		{nil, "invalid jobs:"},
		{[]*hopperv1.SpawnJob{chunk("a", `{}`), {Step: "b", Job: &hopperv1.JobSpec{Queue: "chunks"}}}, "invalid jobs[1].kind:"},
		{[]*hopperv1.SpawnJob{chunk("a", `{}`), {Step: "b"}}, "invalid jobs[1].job:"},
		{[]*hopperv1.SpawnJob{chunk("a", `{}`), chunk("b", `{nope`)}, "invalid jobs[1].args:"},
		{[]*hopperv1.SpawnJob{chunk("bad name", `{}`)}, "invalid jobs[0].step:"},
		{[]*hopperv1.SpawnJob{chunk("merge", `{}`)}, "invalid jobs[0].step:"},
		{[]*hopperv1.SpawnJob{chunk("a", `{}`), {Step: "b", Job: &hopperv1.JobSpec{Kind: "chunk", After: []string{"0190f0e4-0000-7000-8000-000000000000"}}}},
			"invalid jobs[1].after[0]:"},
		{[]*hopperv1.SpawnJob{chunk("a", `{}`), {Step: "b", Job: &hopperv1.JobSpec{Kind: "chunk"}, AfterSteps: []string{"a", "c"}},
			chunk("c", `{}`)}, "invalid jobs[1].after_steps[1]:"},
	} {
		err := spawn(split.GetLeaseToken(), tc.jobs...)
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), tc.field)
	}
	require.Empty(t, e.activate(t, &hopperv1.ActivateRequest{Queue: "chunks"}), "nothing spawned")
}
