package server

import (
	"context"
	"fmt"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/hopperjobs/hopper/internal/attempt"
)

// Fan-out at run time (docs/workflows.md): a worker adds jobs while it holds one with Spawn.

// Spawn adds the jobs of a held job's spawn, validated as an enqueue's, fenced by its lease
// token.
func (w *workerService) Spawn(ctx context.Context, req *hopperv1.SpawnRequest) (*hopperv1.SpawnResponse, error) {
	if n := len(req.GetJobs()); n == 0 || n > hopper.MaxSpawn {
		return nil, invalidArg("jobs", fmt.Sprintf("%d jobs, want 1–%d", n, hopper.MaxSpawn))
	}
	jobs := make([]*attempt.SpawnJob, len(req.GetJobs()))
	for i, sj := range req.GetJobs() {
		j, err := apiview.FromSpawnJob(sj)
		if err != nil {
			return nil, rpcError("spawn", prefixed(fmt.Sprintf("jobs[%d].", i), err))
		}
		jobs[i] = j
	}
	got, err := w.s.api.SpawnJobs(ctx, req.GetId(), req.GetLeaseToken(), jobs)
	if err != nil {
		return nil, rpcError("spawn", err)
	}
	out := &hopperv1.SpawnResponse{Results: make([]*hopperv1.EnqueueResponse, len(got))}
	for i, s := range got {
		job := w.s.enqueued(ctx, s.Job)
		// A worker's key may not read jobs: it still learns where its jobs went.
		job.WorkflowId, job.Step = apiview.Text(s.Job.WorkflowID), apiview.Text(s.Job.Step)
		out.Results[i] = &hopperv1.EnqueueResponse{Job: job, Existing: s.Existing}
	}
	return out, nil
}

// prefixed puts prefix before the field a *hopper.ValidationError names; other errors pass.
func prefixed(prefix string, err error) error {
	if ve, ok := err.(*hopper.ValidationError); ok {
		return &hopper.ValidationError{Field: prefix + ve.Field, Reason: ve.Reason}
	}
	return err
}
