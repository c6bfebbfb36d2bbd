package server

import (
	"context"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// deadLetterService implements hopper.v1.DeadLetterService.
type deadLetterService struct{ s *Server }

// replayedBy names the caller in the replay audit log: its API key's name (or id), or "api"
// for a server without keys.
func replayedBy(ctx context.Context) string {
	p := principalFrom(ctx)
	switch {
	case p.Name != "":
		return p.Name
	case p.KeyID != "":
		return p.KeyID
	}
	return string(hopper.ActorAPI)
}

func (d *deadLetterService) toJobs(jobs []*hopper.JobRow) []*hopperv1.Job {
	out := make([]*hopperv1.Job, len(jobs))
	for i, j := range jobs {
		out[i] = d.s.toJob(j)
	}
	return out
}

func (d *deadLetterService) List(ctx context.Context, req *hopperv1.DeadLetterServiceListRequest) (*hopperv1.DeadLetterServiceListResponse, error) {
	res, err := d.s.client.DeadLetters(ctx, apispec.FromDeadLetterListRequest(req))
	if err != nil {
		return nil, rpcError("list dead letters", err)
	}
	return &hopperv1.DeadLetterServiceListResponse{Jobs: d.toJobs(res.Jobs()), NextCursor: res.NextCursor,
		Replays: apispec.DeadLetterReplays(res.DeadLetters)}, nil
}

func (d *deadLetterService) Stats(ctx context.Context, _ *hopperv1.DeadLetterServiceStatsRequest) (*hopperv1.DeadLetterServiceStatsResponse, error) {
	st, err := d.s.client.DeadLetterStats(ctx)
	if err != nil {
		return nil, rpcError("dead-letter stats", err)
	}
	return apispec.DeadLetterStats(st, d.s.client.Now()), nil
}

func (d *deadLetterService) Replay(ctx context.Context, req *hopperv1.ReplayRequest) (*hopperv1.ReplayResponse, error) {
	by := replayedBy(ctx)
	job, err := d.s.client.ReplayWith(ctx, req.GetId(), hopper.ReplayOpts{By: by, Reason: req.GetReason(), Again: req.GetAgain()})
	if err != nil {
		return nil, rpcError("replay job", err)
	}
	return &hopperv1.ReplayResponse{Job: d.s.toJob(job), ReplayedBy: by}, nil
}

func (d *deadLetterService) ReplayMany(ctx context.Context, req *hopperv1.ReplayManyRequest) (*hopperv1.ReplayManyResponse, error) {
	by := replayedBy(ctx)
	res, err := d.s.client.ReplayMany(ctx, apispec.FromDeadLetterFilter(req.GetFilter()), int(req.GetLimit()), by)
	if err != nil {
		return nil, rpcError("replay dead letters", err)
	}
	return &hopperv1.ReplayManyResponse{Jobs: d.toJobs(res.Jobs), ReplayedBy: by, Skipped: apiview.Int32(res.Skipped)}, nil
}

func (d *deadLetterService) RetryMany(ctx context.Context, req *hopperv1.DeadLetterServiceRetryManyRequest) (*hopperv1.DeadLetterServiceRetryManyResponse, error) {
	f, opts := apispec.FromRetryManyRequest(req)
	opts.By, opts.Actor = replayedBy(ctx), hopper.ActorOperator
	res, err := d.s.client.RetryMany(ctx, f, opts)
	if err != nil {
		return nil, rpcError("retry dead letters", err)
	}
	return &hopperv1.DeadLetterServiceRetryManyResponse{Jobs: d.toJobs(res.Jobs), RetriedBy: opts.By,
		Skipped: apiview.Int32(res.Skipped)}, nil
}

func (d *deadLetterService) ListReplays(ctx context.Context, req *hopperv1.ListReplaysRequest) (*hopperv1.ListReplaysResponse, error) {
	res, err := d.s.client.Replays(ctx, apispec.FromListReplaysRequest(req))
	if err != nil {
		return nil, rpcError("list replays", err)
	}
	out := &hopperv1.ListReplaysResponse{NextCursor: res.NextCursor, Replays: make([]*hopperv1.ReplayRecord, len(res.Replays))}
	for i, r := range res.Replays {
		out.Replays[i] = apispec.ReplayRecord(r)
	}
	return out, nil
}
