package hopperclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// EnqueueWorkflow stores a workflow on the server, as hopper.Client.EnqueueWorkflow does:
// every step's job in one transaction, each step's args encoded and its options laid over its
// args type's defaults as Enqueue does. It needs the enqueue scope; a key without the read
// scope gets back only the jobs' ids, kinds, queues, states and times. A bad field is a
// *hopper.ValidationError named as hopper.Client names it (steps[2].after[0], steps[2].queue),
// whose message is the server's (which names a step's job options under steps[i].job).
func (c *Client) EnqueueWorkflow(ctx context.Context, wf hopper.Workflow) (*hopper.WorkflowResult, error) {
	req, err := apispec.WorkflowRequest(wf, jobSpec)
	if err != nil {
		return nil, fmt.Errorf("enqueue workflow: %w", err)
	}
	res, err := c.workflows.EnqueueWorkflow(ctx, req)
	if err != nil {
		return nil, goFields(callErr("enqueue workflow", err))
	}
	out := &hopper.WorkflowResult{Workflow: apiview.FromWorkflow(res.GetWorkflow()), Jobs: make([]*hopper.JobRow, len(res.GetJobs()))}
	for i, j := range res.GetJobs() {
		out.Jobs[i] = apiview.FromJob(j)
	}
	return out, nil
}

// EnqueueBatch stores a batch with a callback on the server, as hopper.Client.EnqueueBatch
// does: its workflow (hopper.JobBatch.Workflow) through EnqueueWorkflow, a refusal naming the
// batch's field (jobs[2].queue, callback.args). It needs the enqueue scope.
func (c *Client) EnqueueBatch(ctx context.Context, b hopper.JobBatch) (*hopper.WorkflowResult, error) {
	wf, err := b.Workflow()
	if err != nil {
		return nil, err
	}
	res, err := c.EnqueueWorkflow(ctx, wf)
	return res, b.Refusal(err)
}

// goFields names the field of a refusal of a workflow as the Go API does.
func goFields(err error) error {
	var ve *hopper.ValidationError
	if errors.As(err, &ve) {
		ve.Field = apispec.FromWorkflowField(ve.Field) // the refusal's own, read from the answer
	}
	return err
}

// Workflow returns a workflow with its steps, parents first. No such workflow is an error
// wrapping hopper.ErrNotFound. It needs the read scope.
func (c *Client) Workflow(ctx context.Context, id string) (*hopper.WorkflowDetail, error) {
	res, err := c.workflows.GetWorkflow(ctx, &hopperv1.GetWorkflowRequest{Id: id})
	if err != nil {
		return nil, callErr("get workflow "+id, err)
	}
	out := &hopper.WorkflowDetail{Workflow: apiview.FromWorkflow(res.GetWorkflow()), Steps: make([]*hopper.StepRow, len(res.GetSteps()))}
	for i, s := range res.GetSteps() {
		out.Steps[i] = &hopper.StepRow{Job: apiview.FromJob(s.GetJob()), After: s.GetAfter()}
	}
	return out, nil
}

// ListWorkflows returns a page of workflows, newest first unless p.Ascending (p nil: the first
// page of every workflow). It needs the read scope.
func (c *Client) ListWorkflows(ctx context.Context, p *hopper.WorkflowListParams) (*hopper.WorkflowListResult, error) {
	res, err := c.workflows.ListWorkflows(ctx, apispec.WorkflowListRequest(p))
	if err != nil {
		return nil, callErr("list workflows", err)
	}
	out := &hopper.WorkflowListResult{NextCursor: res.GetNextCursor(), Workflows: make([]*hopper.WorkflowRow, len(res.GetWorkflows()))}
	for i, w := range res.GetWorkflows() {
		out.Workflows[i] = apiview.FromWorkflow(w)
	}
	return out, nil
}

// CancelWorkflow cancels every step of the workflow that has not ended, recording reason in
// their history ("" records "workflow canceled through the API"), as
// hopper.Client.CancelWorkflow does. A workflow whose steps have all ended is an error
// wrapping hopper.ErrInvalidTransition, an unknown one hopper.ErrNotFound. It needs the admin
// scope.
func (c *Client) CancelWorkflow(ctx context.Context, id, reason string) (*hopper.WorkflowCancelResult, error) {
	res, err := c.workflows.CancelWorkflow(ctx, &hopperv1.CancelWorkflowRequest{Id: id, Reason: reason})
	if err != nil {
		return nil, callErr("cancel workflow "+id, err)
	}
	out := &hopper.WorkflowCancelResult{Workflow: apiview.FromWorkflow(res.GetWorkflow()), Canceled: make([]*hopper.JobRow, len(res.GetCanceled()))}
	for i, j := range res.GetCanceled() {
		out.Canceled[i] = apiview.FromJob(j)
	}
	return out, nil
}
