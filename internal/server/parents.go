package server

import (
	"context"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// Results passed along (docs/workflows.md): a worker reads the parents of a job it holds with
// ParentResults, or asks for them with its jobs (fetch_parent_results).

// parentsReads bounds the reads of one activation's or push's parents at once.
const parentsReads = 8

// ParentResults reads the parents of a job the worker holds, fenced by its lease token.
func (w *workerService) ParentResults(ctx context.Context, req *hopperv1.ParentResultsRequest) (*hopperv1.ParentResultsResponse, error) {
	parents, _, err := w.s.api.JobParents(ctx, req.GetId(), req.GetLeaseToken(), 0)
	if err != nil {
		return nil, rpcError("read parent results", err)
	}
	return &hopperv1.ParentResultsResponse{Parents: apiview.ParentResults(parents)}, nil
}

// withParents fills the parents of jobs just claimed for a worker that asked for them: the
// parents' results of each job when together at most the server's MaxArgsBytes, else
// parent_results_omitted (also when they cannot be read: the worker reads them itself, and
// learns then what is wrong). It returns the bytes of results added.
func (w *workerService) withParents(ctx context.Context, jobs []*hopperv1.ActivatedJob) int {
	limit := w.s.client.InputLimits().MaxArgsBytes
	sizes := make([]int, len(jobs))
	concurrently(len(jobs), parentsReads, func(i int) {
		a := jobs[i]
		parents, omitted, err := w.s.api.JobParents(ctx, a.GetId(), a.GetLeaseToken(), limit)
		if err != nil || omitted {
			if err != nil && ctx.Err() == nil {
				w.s.log.Warn("read parent results for a worker", "job_id", a.GetId(), "err", err)
			}
			a.ParentResultsOmitted = true
			return
		}
		a.ParentResults = apiview.ParentResults(parents)
		for _, p := range parents {
			sizes[i] += len(p.Result)
		}
	})
	n := 0
	for _, s := range sizes {
		n += s
	}
	return n
}
