package apispec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// WorkflowRequest is a workflow to enqueue as the API carries it. jobSpec makes a step's job
// of its args and options (as an Enqueue's, its errors named as Enqueue names them); the
// step's After and OnParentFailure go into the job's after and on_parent_failure. A step's
// own InsertOpts.After (job ids) is a *hopper.ValidationError naming steps[i].after: in a
// workflow, a step's job names steps there.
func WorkflowRequest(wf hopper.Workflow, jobSpec func(hopper.JobArgs, *hopper.InsertOpts) (*hopperv1.JobSpec, error)) (*hopperv1.EnqueueWorkflowRequest, error) {
	req := &hopperv1.EnqueueWorkflowRequest{Name: wf.Name, Steps: make([]*hopperv1.WorkflowStep, len(wf.Steps))}
	for i, s := range wf.Steps {
		spec, err := jobSpec(s.Args, s.Opts)
		if err != nil {
			return nil, prefixed(fmt.Sprintf("steps[%d].", i), err)
		}
		if len(spec.After) > 0 {
			return nil, &hopper.ValidationError{Field: fmt.Sprintf("steps[%d].after", i),
				Reason: "InsertOpts.After is not for a step: its After names the steps it runs after"}
		}
		spec.After = s.After
		if s.OnParentFailure != "" {
			spec.OnParentFailure = string(s.OnParentFailure)
		}
		req.Steps[i] = &hopperv1.WorkflowStep{Name: s.Name, Job: spec}
	}
	return req, nil
}

// FromWorkflowRequest reads a workflow to enqueue: each step's job as FromJobSpec reads a job,
// its after and on_parent_failure the step's. A step without a job is a
// *hopper.ValidationError naming steps[i].job. The values are the caller's: the client checks
// them when it enqueues.
func FromWorkflowRequest(req *hopperv1.EnqueueWorkflowRequest) (hopper.Workflow, error) {
	wf := hopper.Workflow{Name: req.GetName(), Steps: make([]hopper.WorkflowStep, len(req.GetSteps()))}
	for i, s := range req.GetSteps() {
		p, err := FromJobSpec(s.GetJob())
		if err != nil {
			return hopper.Workflow{}, prefixed(fmt.Sprintf("steps[%d].", i), err)
		}
		step := hopper.WorkflowStep{Name: s.GetName(), Args: p.Args, Opts: p.Opts, After: p.Opts.After,
			OnParentFailure: p.Opts.OnParentFailure}
		p.Opts.After, p.Opts.OnParentFailure = nil, ""
		wf.Steps[i] = step
	}
	return wf, nil
}

// WorkflowField is the API's name of a workflow's field that the Go API names field: a step's
// job option steps[i].<option> (after and on_parent_failure among them) is
// steps[i].job.<option>; the step's name and the workflow's fields are named alike.
func WorkflowField(field string) string {
	step, rest, ok := stepField(field)
	if !ok || rest == "name" || strings.HasPrefix(rest, "job.") || rest == "job" {
		return field
	}
	return step + "job." + rest
}

// FromWorkflowField is the Go API's name of a workflow's field the API names field (the
// reverse of WorkflowField).
func FromWorkflowField(field string) string {
	step, rest, ok := stepField(field)
	if !ok {
		return field
	}
	if opt, found := strings.CutPrefix(rest, "job."); found {
		return step + opt
	}
	return field
}

// stepField splits steps[i].rest into "steps[i]." and rest.
func stepField(field string) (step, rest string, ok bool) {
	if !strings.HasPrefix(field, "steps[") {
		return "", "", false
	}
	end := strings.Index(field, "].")
	if end < 0 {
		return "", "", false
	}
	return field[:end+2], field[end+2:], true
}

// WorkflowError is err with the field a *hopper.ValidationError names in the API's words
// (WorkflowField), for an answer of the API; other errors pass through.
func WorkflowError(err error) error { return renamed(err, WorkflowField) }

// FromWorkflowError is err with the field a *hopper.ValidationError names in the Go API's
// words (FromWorkflowField), for a client of the API; other errors pass through.
func FromWorkflowError(err error) error { return renamed(err, FromWorkflowField) }

func renamed(err error, rename func(string) string) error {
	var ve *hopper.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	out := *ve
	out.Field = rename(ve.Field)
	return &out
}

func prefixed(prefix string, err error) error {
	return renamed(err, func(f string) string { return prefix + f })
}

// WorkflowListRequest is a page of workflows to list as the API asks for it (p nil: the first
// page of every workflow).
func WorkflowListRequest(p *hopper.WorkflowListParams) *hopperv1.ListWorkflowsRequest {
	if p == nil {
		return &hopperv1.ListWorkflowsRequest{}
	}
	req := &hopperv1.ListWorkflowsRequest{Name: p.Name, Cursor: p.Cursor, Limit: apiview.Int32(p.Limit), Ascending: p.Ascending}
	for _, s := range p.States {
		req.States = append(req.States, string(s))
	}
	return req
}

// FromWorkflowListRequest reads a page of workflows to list.
func FromWorkflowListRequest(req *hopperv1.ListWorkflowsRequest) *hopper.WorkflowListParams {
	p := &hopper.WorkflowListParams{Name: req.GetName(), Cursor: req.GetCursor(), Limit: int(req.GetLimit()),
		Ascending: req.GetAscending()}
	for _, s := range req.GetStates() {
		p.States = append(p.States, hopper.WorkflowState(s))
	}
	return p
}
