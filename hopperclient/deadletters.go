package hopperclient

import (
	"context"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// DeadLetters returns one page of dead letters (failed jobs), newest first, filtered by p
// (nil: all never replayed), each with a summary of its replays; NextCursor continues. It
// needs the read scope.
func (c *Client) DeadLetters(ctx context.Context, p *hopper.DeadLetterParams) (*hopper.DeadLetterPage, error) {
	res, err := c.dlq.List(ctx, apispec.DeadLetterListRequest(p))
	if err != nil {
		return nil, callErr("list dead letters", err)
	}
	return apispec.FromDeadLetterList(res), nil
}

// DeadLetterStats counts the dead letters that DeadLetters lists, says when the oldest one
// failed, and counts the replayed ones apart. It needs the read scope.
func (c *Client) DeadLetterStats(ctx context.Context) (*hopper.DeadLetterStats, error) {
	res, err := c.dlq.Stats(ctx, &hopperv1.DeadLetterServiceStatsRequest{})
	if err != nil {
		return nil, callErr("dead-letter stats", err)
	}
	return apispec.FromDeadLetterStats(res), nil
}

// Replay replays the dead letter id as a new job, queued, with its lineage (OriginalID,
// ReplayCount), and returns the new job; the server records it in its audit log as done by
// the API key's name (the job's ReplayedBy). A job that is not failed is an error wrapping
// hopper.ErrInvalidTransition; an unknown one hopper.ErrNotFound. It needs the admin scope.
func (c *Client) Replay(ctx context.Context, id string) (*hopper.JobRow, error) {
	res, err := c.dlq.Replay(ctx, &hopperv1.ReplayRequest{Id: id})
	if err != nil {
		return nil, callErr("replay job "+id, err)
	}
	job := apiview.FromJob(res.GetJob())
	job.ReplayedBy = res.GetReplayedBy()
	return job, nil
}

// ReplayMany replays, oldest first and in one transaction, up to limit (0: 100, at most
// 1,000) dead letters selected by f that were never replayed, and returns the new jobs in
// the order of their dead letters: calling it again continues where it stopped. It needs the
// admin scope.
func (c *Client) ReplayMany(ctx context.Context, f hopper.DeadLetterFilter, limit int) ([]*hopper.JobRow, error) {
	res, err := c.dlq.ReplayMany(ctx, &hopperv1.ReplayManyRequest{Filter: apispec.DeadLetterFilter(f), Limit: apiview.Int32(limit)})
	if err != nil {
		return nil, callErr("replay dead letters", err)
	}
	out := make([]*hopper.JobRow, len(res.GetJobs()))
	for i, j := range res.GetJobs() {
		out[i] = apiview.FromJob(j)
		out[i].ReplayedBy = res.GetReplayedBy()
	}
	return out, nil
}

// Replays returns one page of the replay audit log, newest first, filtered by p (nil: all).
// It needs the read scope.
func (c *Client) Replays(ctx context.Context, p *hopper.ReplayListParams) (*hopper.ReplayListResult, error) {
	res, err := c.dlq.ListReplays(ctx, apispec.ListReplaysRequest(p))
	if err != nil {
		return nil, callErr("list replays", err)
	}
	out := &hopper.ReplayListResult{NextCursor: res.GetNextCursor(), Replays: make([]*hopper.Replay, len(res.GetReplays()))}
	for i, r := range res.GetReplays() {
		out.Replays[i] = apispec.FromReplayRecord(r)
	}
	return out, nil
}
