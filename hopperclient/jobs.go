package hopperclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// Enqueue stores one job on the server, as hopper.Client.Enqueue does: args is encoded as
// JSON (a hopper.RawArgs as it is) and opts are laid over the args type's own defaults
// (hopper.InsertOptsFor); nil opts take the defaults, the server's where the job gives none
// (max attempts, max rescues). It needs a key with the enqueue scope; with an idempotency
// key in use it returns the existing job (Existing), with a merge key the job it merged into
// (Merged). A key without the read scope gets back only the job's id, kind, queue, state and
// times. Bad input is a *hopper.ValidationError naming the field; see the package's errors.
//
// With hopper.MergeAppend the server appends args as one item: a hopper.Merged list is one
// item there, not its items.
func (c *Client) Enqueue(ctx context.Context, args hopper.JobArgs, opts *hopper.InsertOpts) (*hopper.InsertResult, error) {
	spec, err := jobSpec(args, opts)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	res, err := c.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: spec})
	if err != nil {
		return nil, callErr("enqueue", err)
	}
	return insertResult(res), nil
}

// EnqueueMany stores jobs in one transaction on the server: all of them or, on any error,
// none. A bad job is a *hopper.ValidationError naming it (jobs[3].queue). No jobs is no
// call; the server takes at most 10,000 in one call.
func (c *Client) EnqueueMany(ctx context.Context, jobs []hopper.EnqueueParams) ([]*hopper.InsertResult, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	req := &hopperv1.EnqueueBatchRequest{Jobs: make([]*hopperv1.JobSpec, len(jobs))}
	for i, j := range jobs {
		spec, err := jobSpec(j.Args, j.Opts)
		if err != nil {
			return nil, fmt.Errorf("enqueue batch: %w", inBatch(i, err))
		}
		req.Jobs[i] = spec
	}
	res, err := c.jobs.EnqueueBatch(ctx, req)
	if err != nil {
		return nil, callErr("enqueue batch", err)
	}
	out := make([]*hopper.InsertResult, len(res.GetResults()))
	for i, r := range res.GetResults() {
		out[i] = insertResult(r)
	}
	return out, nil
}

// jobSpec is a job to enqueue as the API carries it.
func jobSpec(args hopper.JobArgs, opts *hopper.InsertOpts) (*hopperv1.JobSpec, error) {
	if args == nil {
		return nil, &hopper.ValidationError{Field: "args", Reason: "is nil"}
	}
	raw, err := encode("args", args)
	if err != nil {
		return nil, err
	}
	o := hopper.InsertOptsFor(args, opts)
	return apispec.JobSpec(args.Kind(), raw, &o)
}

// encode is v as JSON, a json.RawMessage or hopper.RawArgs as it is (the server checks it).
func encode(field string, v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case json.RawMessage:
		return v, nil
	case hopper.RawArgs:
		return v.JSON, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &hopper.ValidationError{Field: field, Reason: "cannot encode as JSON: " + err.Error()}
	}
	return b, nil
}

// inBatch names job i of a batch in its validation error.
func inBatch(i int, err error) error {
	var ve *hopper.ValidationError
	if errors.As(err, &ve) {
		return &hopper.ValidationError{Field: fmt.Sprintf("jobs[%d].%s", i, ve.Field), Reason: ve.Reason}
	}
	return fmt.Errorf("jobs[%d]: %w", i, err)
}

func insertResult(r *hopperv1.EnqueueResponse) *hopper.InsertResult {
	return &hopper.InsertResult{Job: apiview.FromJob(r.GetJob()), Existing: r.GetExisting(), Merged: r.GetMerged()}
}

// Get returns a job, or an error wrapping hopper.ErrNotFound. It needs the read scope.
func (c *Client) Get(ctx context.Context, id string) (*hopper.JobRow, error) {
	res, err := c.jobs.Get(ctx, &hopperv1.GetRequest{Id: id})
	if err != nil {
		return nil, callErr("get job "+id, err)
	}
	return apiview.FromJob(res.GetJob()), nil
}

// List returns one page of jobs, newest first unless p.Ascending, filtered by p (nil: all);
// NextCursor continues. It needs the read scope. p.ArgsContains is refused: the API does not
// filter on it.
func (c *Client) List(ctx context.Context, p *hopper.ListParams) (*hopper.ListResult, error) {
	req, err := apispec.ListRequest(p)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	res, err := c.jobs.List(ctx, req)
	if err != nil {
		return nil, callErr("list jobs", err)
	}
	return listResult(res.GetJobs(), res.GetNextCursor()), nil
}

func listResult(jobs []*hopperv1.Job, next string) *hopper.ListResult {
	out := &hopper.ListResult{NextCursor: next, Jobs: make([]*hopper.JobRow, len(jobs))}
	for i, j := range jobs {
		out.Jobs[i] = apiview.FromJob(j)
	}
	return out
}

// Cancel cancels a job that has not ended and returns it, recording reason in its history
// ("" records "canceled through the API") as done by an operator. A job that has ended is an
// error wrapping hopper.ErrInvalidTransition; an unknown one hopper.ErrNotFound. It needs the
// admin scope.
func (c *Client) Cancel(ctx context.Context, id, reason string) (*hopper.JobRow, error) {
	res, err := c.jobs.Cancel(ctx, &hopperv1.CancelRequest{Id: id, Reason: reason})
	if err != nil {
		return nil, callErr("cancel job "+id, err)
	}
	return apiview.FromJob(res.GetJob()), nil
}

// Resume moves a suspended job back to its queue and returns it, with data (encoded as JSON,
// a json.RawMessage as it is; nil for none) for its next attempts, recording reason in its
// history ("" records "resumed through the API"). A job that is not suspended is an error
// wrapping hopper.ErrInvalidTransition. It needs the enqueue scope.
func (c *Client) Resume(ctx context.Context, id string, data any, reason string) (*hopper.JobRow, error) {
	req := &hopperv1.JobServiceResumeRequest{Id: id, Reason: reason}
	if data != nil {
		raw, err := encode("data", data)
		if err != nil {
			return nil, fmt.Errorf("resume job %s: %w", id, err)
		}
		req.Data = string(raw)
	}
	res, err := c.jobs.Resume(ctx, req)
	if err != nil {
		return nil, callErr("resume job "+id, err)
	}
	return apiview.FromJob(res.GetJob()), nil
}

// Events returns a job's state transitions, oldest first. It needs the read scope.
func (c *Client) Events(ctx context.Context, id string) ([]*hopper.Event, error) {
	res, err := c.jobs.Events(ctx, &hopperv1.EventsRequest{Id: id})
	if err != nil {
		return nil, callErr("job events of "+id, err)
	}
	out := make([]*hopper.Event, len(res.GetEvents()))
	for i, e := range res.GetEvents() {
		out[i] = apiview.FromEvent(id, e)
	}
	return out, nil
}

// Attempts returns a job's attempts, oldest first. It needs the read scope.
func (c *Client) Attempts(ctx context.Context, id string) ([]*hopper.AttemptRecord, error) {
	res, err := c.jobs.Events(ctx, &hopperv1.EventsRequest{Id: id})
	if err != nil {
		return nil, callErr("job attempts of "+id, err)
	}
	out := make([]*hopper.AttemptRecord, len(res.GetAttempts()))
	for i, a := range res.GetAttempts() {
		out[i] = apiview.FromAttempt(id, a)
	}
	return out, nil
}
