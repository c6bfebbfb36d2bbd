package server

import (
	"context"
	"encoding/json"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// jobService implements hopper.v1.JobService.
type jobService struct{ s *Server }

// MaxBatch bounds EnqueueBatch.
const MaxBatch = 10000

// enqueueParams reads a job to enqueue, refusing a missing one by name.
func enqueueParams(spec *hopperv1.JobSpec) (hopper.EnqueueParams, error) {
	p, err := apispec.FromJobSpec(spec)
	return p, rpcError("enqueue", err)
}

func (j *jobService) Enqueue(ctx context.Context, req *hopperv1.EnqueueRequest) (*hopperv1.EnqueueResponse, error) {
	p, err := enqueueParams(req.GetJob())
	if err != nil {
		return nil, err
	}
	res, err := j.s.client.Enqueue(ctx, p.Args, p.Opts)
	if err != nil {
		return nil, rpcError("enqueue", err)
	}
	return &hopperv1.EnqueueResponse{Job: j.s.enqueued(ctx, res.Job), Existing: res.Existing, Merged: res.Merged}, nil
}

func (j *jobService) EnqueueBatch(ctx context.Context, req *hopperv1.EnqueueBatchRequest) (*hopperv1.EnqueueBatchResponse, error) {
	if len(req.GetJobs()) == 0 || len(req.GetJobs()) > MaxBatch {
		return nil, invalidArg("jobs", "must hold 1–10000 jobs")
	}
	ps := make([]hopper.EnqueueParams, len(req.GetJobs()))
	for i, spec := range req.GetJobs() {
		p, err := enqueueParams(spec)
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	res, err := j.s.client.EnqueueMany(ctx, ps)
	if err != nil {
		return nil, rpcError("enqueue batch", err)
	}
	out := &hopperv1.EnqueueBatchResponse{Results: make([]*hopperv1.EnqueueResponse, len(res))}
	for i, r := range res {
		out.Results[i] = &hopperv1.EnqueueResponse{Job: j.s.enqueued(ctx, r.Job), Existing: r.Existing, Merged: r.Merged}
	}
	return out, nil
}

func (j *jobService) Get(ctx context.Context, req *hopperv1.GetRequest) (*hopperv1.GetResponse, error) {
	job, err := j.s.client.Get(ctx, req.GetId())
	if err != nil {
		return nil, rpcError("get job", err)
	}
	return &hopperv1.GetResponse{Job: j.s.toJob(job)}, nil
}

func (j *jobService) List(ctx context.Context, req *hopperv1.ListRequest) (*hopperv1.ListResponse, error) {
	res, err := j.s.client.List(ctx, apispec.FromListRequest(req))
	if err != nil {
		return nil, rpcError("list jobs", err)
	}
	out := &hopperv1.ListResponse{NextCursor: res.NextCursor, Jobs: make([]*hopperv1.Job, len(res.Jobs))}
	for i, job := range res.Jobs {
		out.Jobs[i] = j.s.toJob(job)
	}
	return out, nil
}

func (j *jobService) Cancel(ctx context.Context, req *hopperv1.CancelRequest) (*hopperv1.CancelResponse, error) {
	reason := req.GetReason()
	if reason == "" {
		reason = "canceled through the API"
	}
	job, err := j.s.client.CancelBy(ctx, req.GetId(), hopper.ActorOperator, reason)
	if err != nil {
		return nil, rpcError("cancel job", err)
	}
	return &hopperv1.CancelResponse{Job: j.s.toJob(job)}, nil
}

func (j *jobService) Retry(ctx context.Context, req *hopperv1.JobServiceRetryRequest) (*hopperv1.JobServiceRetryResponse, error) {
	id, opts := apispec.FromRetryRequest(req)
	opts.By, opts.Actor = replayedBy(ctx), hopper.ActorOperator
	job, err := j.s.client.RetryJob(ctx, id, opts)
	if err != nil {
		return nil, rpcError("retry job", err)
	}
	return &hopperv1.JobServiceRetryResponse{Job: j.s.toJob(job), RetriedBy: opts.By}, nil
}

func (j *jobService) SetRetries(ctx context.Context, req *hopperv1.JobServiceSetRetriesRequest) (*hopperv1.JobServiceSetRetriesResponse, error) {
	job, err := j.s.client.UpdateRetries(ctx, req.GetId(), int(req.GetMaxAttempts()))
	if err != nil {
		return nil, rpcError("set retries", err)
	}
	return &hopperv1.JobServiceSetRetriesResponse{Job: j.s.toJob(job)}, nil
}

func (j *jobService) Events(ctx context.Context, req *hopperv1.EventsRequest) (*hopperv1.EventsResponse, error) {
	events, err := j.s.client.Events(ctx, req.GetId())
	if err != nil {
		return nil, rpcError("job events", err)
	}
	attempts, err := j.s.client.Attempts(ctx, req.GetId())
	if err != nil {
		return nil, rpcError("job attempts", err)
	}
	out := &hopperv1.EventsResponse{}
	for _, e := range events {
		out.Events = append(out.Events, apiview.Event(e))
	}
	for _, a := range attempts {
		out.Attempts = append(out.Attempts, apiview.Attempt(a))
	}
	return out, nil
}

// enqueued is the job an enqueue answers with. A caller without the read scope gets only
// what identifies the job: an idempotency key may return a job enqueued by someone else, and
// an enqueue-only key must not read payloads, results or headers through it.
func (s *Server) enqueued(ctx context.Context, job *hopper.JobRow) *hopperv1.Job {
	if principalFrom(ctx).Allows(ScopeRead) {
		return s.toJob(job)
	}
	return &hopperv1.Job{Id: apiview.Text(job.ID), Kind: apiview.Text(job.Kind), Queue: apiview.Text(job.Queue), State: string(job.State),
		RunAt: apiview.Time(job.RunAt), CreatedAt: apiview.Time(job.CreatedAt)}
}

func (j *jobService) Resume(ctx context.Context, req *hopperv1.JobServiceResumeRequest) (*hopperv1.JobServiceResumeResponse, error) {
	var data any
	if req.GetData() != "" {
		data = json.RawMessage(req.GetData())
	}
	reason := req.GetReason()
	if reason == "" {
		reason = "resumed through the API"
	}
	job, err := j.s.client.ResumeBy(ctx, req.GetId(), data, hopper.ActorAPI, reason)
	if err != nil {
		return nil, rpcError("resume job", err)
	}
	return &hopperv1.JobServiceResumeResponse{Job: j.s.toJob(job)}, nil
}
