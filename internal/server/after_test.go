package server_test

import (
	"testing"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
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

// The most parents of one job is among the limits the server serves (SDKs read it there), and
// one parent more is INVALID_ARGUMENT naming the field.
func TestMaxParentsIsServedAndHeld(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, nil, nil)
	info, err := hopperv1connect.NewServerServiceClient(connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL))).
		Info(t.Context(), &hopperv1.ServerServiceInfoRequest{})
	require.NoError(t, err)
	limit := int(info.GetServer().GetInputLimits().GetMaxParents())
	require.Equal(t, hopper.MaxParents, limit)

	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	parent := e.enqueue(t, "k", `{}`)
	after := make([]string, limit+1)
	for i := range after {
		after[i] = parent.GetId() // named again and again: the count is of the ids named
	}
	_, err = e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", After: after}})
	requireCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "after")
	require.Contains(t, err.Error(), "at most 10000")
	_, err = e.jobs.EnqueueBatch(t.Context(), &hopperv1.EnqueueBatchRequest{Jobs: []*hopperv1.JobSpec{
		{Kind: "k"}, {Kind: "k", After: after}}})
	requireCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "jobs[1].after")

	res, err := e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", After: after[:limit]}})
	require.NoError(t, err, "the limit itself is allowed")
	require.Equal(t, "waiting", res.GetJob().GetState())
}
