package server_test

import (
	"testing"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
)

// JobSpec.after makes a job wait for its parents; an unknown parent is INVALID_ARGUMENT naming
// the field, and nothing of the batch is enqueued (docs/workflows.md).
func TestAfterOverTheAPI(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		ctx := t.Context()
		parent := e.enqueue(t, "k", `{}`)
		res, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k",
			After: []string{parent.GetId()}, OnParentFailure: "skip"}})
		require.NoError(t, err)
		require.Equal(t, "waiting", res.GetJob().GetState())
		got, err := e.jobs.Get(ctx, &hopperv1.GetRequest{Id: parent.GetId()})
		require.NoError(t, err)
		require.True(t, got.GetJob().GetHasChildren())

		_, err = e.jobs.EnqueueBatch(ctx, &hopperv1.EnqueueBatchRequest{Jobs: []*hopperv1.JobSpec{
			{Kind: "k"}, {Kind: "k", After: []string{"0190f0e4-0000-7000-8000-000000000000"}}}})
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "jobs[1].after[0]")
		_, err = e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k",
			After: []string{parent.GetId()}, OnParentFailure: "later"}})
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "on_parent_failure")
	})
}
