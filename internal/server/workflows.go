package server

import (
	"context"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// workflowService implements hopper.v1.WorkflowService.
type workflowService struct{ s *Server }

// EnqueueWorkflow enqueues the workflow through the client, which checks it; a bad field is
// named as the API names it (a step's job option under steps[i].job).
func (ws *workflowService) EnqueueWorkflow(ctx context.Context, req *hopperv1.EnqueueWorkflowRequest) (*hopperv1.EnqueueWorkflowResponse, error) {
	wf, err := apispec.FromWorkflowRequest(req)
	if err != nil {
		return nil, rpcError("enqueue workflow", apispec.WorkflowError(err))
	}
	res, err := ws.s.client.EnqueueWorkflow(ctx, wf)
	if err != nil {
		return nil, rpcError("enqueue workflow", apispec.WorkflowError(err))
	}
	out := &hopperv1.EnqueueWorkflowResponse{Workflow: apiview.Workflow(res.Workflow), Jobs: make([]*hopperv1.Job, len(res.Jobs))}
	for i, j := range res.Jobs {
		out.Jobs[i] = ws.s.enqueued(ctx, j)
	}
	return out, nil
}

func (ws *workflowService) GetWorkflow(ctx context.Context, req *hopperv1.GetWorkflowRequest) (*hopperv1.GetWorkflowResponse, error) {
	d, err := ws.s.client.Workflow(ctx, req.GetId())
	if err != nil {
		return nil, rpcError("get workflow", err)
	}
	out := &hopperv1.GetWorkflowResponse{Workflow: apiview.Workflow(d.Workflow), Steps: make([]*hopperv1.WorkflowStepStatus, len(d.Steps))}
	for i, st := range d.Steps {
		out.Steps[i] = &hopperv1.WorkflowStepStatus{Job: ws.s.toJob(st.Job), After: st.After}
	}
	return out, nil
}

func (ws *workflowService) ListWorkflows(ctx context.Context, req *hopperv1.ListWorkflowsRequest) (*hopperv1.ListWorkflowsResponse, error) {
	res, err := ws.s.client.ListWorkflows(ctx, apispec.FromWorkflowListRequest(req))
	if err != nil {
		return nil, rpcError("list workflows", err)
	}
	out := &hopperv1.ListWorkflowsResponse{NextCursor: res.NextCursor, Workflows: make([]*hopperv1.Workflow, len(res.Workflows))}
	for i, w := range res.Workflows {
		out.Workflows[i] = apiview.Workflow(w)
	}
	return out, nil
}

// CancelWorkflow cancels the workflow's unfinished steps, recorded in their history as an
// operator's cancel with the request's reason.
func (ws *workflowService) CancelWorkflow(ctx context.Context, req *hopperv1.CancelWorkflowRequest) (*hopperv1.CancelWorkflowResponse, error) {
	reason := req.GetReason()
	if reason == "" {
		reason = "workflow canceled through the API"
	}
	res, err := ws.s.client.CancelWorkflowBy(ctx, req.GetId(), hopper.ActorOperator, reason)
	if err != nil {
		return nil, rpcError("cancel workflow", err)
	}
	out := &hopperv1.CancelWorkflowResponse{Workflow: apiview.Workflow(res.Workflow), Canceled: make([]*hopperv1.Job, len(res.Canceled))}
	for i, j := range res.Canceled {
		out.Canceled[i] = ws.s.toJob(j)
	}
	return out, nil
}
