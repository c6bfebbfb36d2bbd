package server_test

import (
	"fmt"
	"testing"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/stretchr/testify/require"
)

// step is a workflow step of kind k with the given parents.
func step(name string, after ...string) *hopperv1.WorkflowStep {
	return &hopperv1.WorkflowStep{Name: name, Job: &hopperv1.JobSpec{Kind: "k", Args: `{"step":"` + name + `"}`, After: after}}
}

// A workflow goes in whole over the API, reads back with its steps, lists by name and state,
// and cancels; its steps' jobs show their workflow (docs/workflows.md).
func TestWorkflowsOverTheAPI(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		ctx := t.Context()
		res, err := e.workflows.EnqueueWorkflow(ctx, &hopperv1.EnqueueWorkflowRequest{Name: "publish", Steps: []*hopperv1.WorkflowStep{
			step("publish", "resize"), step("resize", "fetch"), step("fetch"),
		}})
		require.NoError(t, err)
		wf := res.GetWorkflow()
		require.Equal(t, "publish", wf.GetName())
		require.Equal(t, "running", wf.GetState())
		require.EqualValues(t, 3, wf.GetSteps())
		require.Equal(t, map[string]int32{"queued": 1, "waiting": 2}, wf.GetStepStates())
		jobs := res.GetJobs()
		require.Len(t, jobs, 3)
		for i, name := range []string{"publish", "resize", "fetch"} {
			require.Equal(t, name, jobs[i].GetStep(), "in the request's order")
			require.Equal(t, wf.GetId(), jobs[i].GetWorkflowId())
		}
		require.Equal(t, "queued", jobs[2].GetState())
		require.Equal(t, "waiting", jobs[0].GetState())
		got := e.get(t, jobs[1].GetId())
		require.Equal(t, wf.GetId(), got.GetWorkflowId())
		require.Equal(t, "resize", got.GetStep())
		require.Empty(t, e.enqueue(t, "k", `{}`).GetWorkflowId(), "a job on its own is in no workflow")

		d, err := e.workflows.GetWorkflow(ctx, &hopperv1.GetWorkflowRequest{Id: wf.GetId()})
		require.NoError(t, err)
		require.Len(t, d.GetSteps(), 3)
		require.Equal(t, "fetch", d.GetSteps()[0].GetJob().GetStep(), "parents first")
		require.Equal(t, []string{"resize"}, d.GetSteps()[2].GetAfter())
		require.JSONEq(t, `{"step":"publish"}`, d.GetSteps()[2].GetJob().GetArgs())

		list, err := e.workflows.ListWorkflows(ctx, &hopperv1.ListWorkflowsRequest{Name: "publish", States: []string{"running"}})
		require.NoError(t, err)
		require.Len(t, list.GetWorkflows(), 1)
		list, err = e.workflows.ListWorkflows(ctx, &hopperv1.ListWorkflowsRequest{States: []string{"completed"}})
		require.NoError(t, err)
		require.Empty(t, list.GetWorkflows())

		canceled, err := e.workflows.CancelWorkflow(ctx, &hopperv1.CancelWorkflowRequest{Id: wf.GetId(), Reason: "not today"})
		require.NoError(t, err)
		require.Equal(t, "canceled", canceled.GetWorkflow().GetState())
		require.Len(t, canceled.GetCanceled(), 3)
		for _, j := range canceled.GetCanceled() {
			require.Equal(t, "canceled", j.GetState())
		}
		_, err = e.workflows.CancelWorkflow(ctx, &hopperv1.CancelWorkflowRequest{Id: wf.GetId()})
		requireCode(t, connect.CodeFailedPrecondition, err)
		_, err = e.workflows.CancelWorkflow(ctx, &hopperv1.CancelWorkflowRequest{Id: "0190f0e4-0000-7000-8000-000000000000"})
		requireCode(t, connect.CodeNotFound, err)
		_, err = e.workflows.GetWorkflow(ctx, &hopperv1.GetWorkflowRequest{Id: "0190f0e4-0000-7000-8000-000000000000"})
		requireCode(t, connect.CodeNotFound, err)
	})
}

// A bad workflow is INVALID_ARGUMENT naming the field as the API names it, and nothing of it
// is enqueued.
func TestWorkflowValidationOverTheAPI(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		ctx := t.Context()
		badQueue := step("a")
		badQueue.Job.Queue = "no spaces"
		for _, tc := range []struct {
			field, reason string
			steps         []*hopperv1.WorkflowStep
		}{
			{"steps", "0 steps", nil},
			{"steps[1].name", "must be 1–128 characters", []*hopperv1.WorkflowStep{step("a"), step("")}},
			{"steps[1].job.after[0]", `no step is named "c"`, []*hopperv1.WorkflowStep{step("a"), step("b", "c")}},
			{"steps[1].job.after[0]", "makes a cycle: b after a after b", []*hopperv1.WorkflowStep{step("a", "b"), step("b", "a")}},
			{"steps[0].job.queue", "no spaces", []*hopperv1.WorkflowStep{badQueue}},
			{"steps[1].job", "is required", []*hopperv1.WorkflowStep{step("a"), {Name: "b"}}},
		} {
			_, err := e.workflows.EnqueueWorkflow(ctx, &hopperv1.EnqueueWorkflowRequest{Name: "w", Steps: tc.steps})
			requireCode(t, connect.CodeInvalidArgument, err)
			require.Contains(t, err.Error(), "invalid "+tc.field+":", tc.reason)
			require.Contains(t, err.Error(), tc.reason)
		}
		_, err := e.workflows.EnqueueWorkflow(ctx, &hopperv1.EnqueueWorkflowRequest{Steps: []*hopperv1.WorkflowStep{step("a")}})
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "invalid name:")
		_, err = e.workflows.ListWorkflows(ctx, &hopperv1.ListWorkflowsRequest{States: []string{"done"}})
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "invalid states:")
		list, err := e.jobs.List(ctx, &hopperv1.ListRequest{})
		require.NoError(t, err)
		require.Empty(t, list.GetJobs())
	})
}

// The most steps of one workflow is among the limits the server serves (the SDKs bound a
// batch by it), and one step more is INVALID_ARGUMENT naming the field.
func TestMaxWorkflowStepsIsServedAndHeld(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, nil, nil)
	info, err := hopperv1connect.NewServerServiceClient(connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL))).
		Info(t.Context(), &hopperv1.ServerServiceInfoRequest{})
	require.NoError(t, err)
	limit := int(info.GetServer().GetInputLimits().GetMaxWorkflowSteps())
	require.Equal(t, hopper.MaxWorkflowSteps, limit)

	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	steps := make([]*hopperv1.WorkflowStep, limit+1)
	for i := range steps {
		steps[i] = step(fmt.Sprintf("s%d", i))
	}
	_, err = e.workflows.EnqueueWorkflow(t.Context(), &hopperv1.EnqueueWorkflowRequest{Name: "big", Steps: steps})
	requireCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "steps")
	require.Contains(t, err.Error(), "10001 steps")
}
