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

// Replay is ReplayWith(ctx, id, hopper.ReplayOpts{}).
func (c *Client) Replay(ctx context.Context, id string) (*hopper.JobRow, error) {
	return c.ReplayWith(ctx, id, hopper.ReplayOpts{})
}

// ReplayWith replays the dead letter id as a new job, queued, with its lineage (OriginalID,
// ReplayCount), and returns the new job; the server records it in its audit log as done by
// the API key's name (the job's ReplayedBy; opts.By is not sent). A job that is not failed is
// an error wrapping hopper.ErrInvalidTransition; an unknown one hopper.ErrNotFound; one
// replayed before, unless opts.Again, hopper.ErrAlreadyReplayed (its message names the
// earlier replay). It needs the admin scope.
func (c *Client) ReplayWith(ctx context.Context, id string, opts hopper.ReplayOpts) (*hopper.JobRow, error) {
	res, err := c.dlq.Replay(ctx, &hopperv1.ReplayRequest{Id: id, Again: opts.Again, Reason: opts.Reason})
	if err != nil {
		return nil, incidentErr("replay job "+id, err)
	}
	job := apiview.FromJob(res.GetJob())
	job.ReplayedBy = res.GetReplayedBy()
	return job, nil
}

// ReplayMany replays, oldest first and in one transaction, up to limit (0: 100, at most
// 1,000) dead letters selected by f that were never replayed, and returns the new jobs in
// the order of their dead letters, and how many replayed ones it skipped: calling it again
// continues where it stopped. It needs the admin scope.
func (c *Client) ReplayMany(ctx context.Context, f hopper.DeadLetterFilter, limit int) (*hopper.ReplayManyResult, error) {
	res, err := c.dlq.ReplayMany(ctx, &hopperv1.ReplayManyRequest{Filter: apispec.DeadLetterFilter(f), Limit: apiview.Int32(limit)})
	if err != nil {
		return nil, callErr("replay dead letters", err)
	}
	out := &hopper.ReplayManyResult{Skipped: int(res.GetSkipped()), Jobs: make([]*hopper.JobRow, len(res.GetJobs()))}
	for i, j := range res.GetJobs() {
		out.Jobs[i] = apiview.FromJob(j)
		out.Jobs[i].ReplayedBy = res.GetReplayedBy()
	}
	return out, nil
}

// RetryJob resolves failed job id in place (contract 18; hopper.Client.RetryJob): the same
// job back to work with more attempts, recorded as done by the API key's name (opts.By and
// opts.Actor are not sent: the server records an operator). Errors wrap
// hopper.ErrInvalidTransition (not failed), hopper.ErrAlreadyReplayed (a replayed dead letter,
// unless opts.Again), hopper.ErrNotFound, or a *hopper.ValidationError. It needs the admin
// scope.
func (c *Client) RetryJob(ctx context.Context, id string, opts hopper.RetryOpts) (*hopper.JobRow, error) {
	res, err := c.jobs.Retry(ctx, apispec.RetryRequest(id, opts))
	if err != nil {
		return nil, incidentErr("retry job "+id, err)
	}
	return apiview.FromJob(res.GetJob()), nil
}

// UpdateRetries sets the attempt budget of job id while it has not ended
// (hopper.Client.UpdateRetries). It needs the admin scope.
func (c *Client) UpdateRetries(ctx context.Context, id string, maxAttempts int) (*hopper.JobRow, error) {
	res, err := c.jobs.SetRetries(ctx, &hopperv1.JobServiceSetRetriesRequest{Id: id, MaxAttempts: apiview.Int32(maxAttempts)})
	if err != nil {
		return nil, callErr("set retries of job "+id, err)
	}
	return apiview.FromJob(res.GetJob()), nil
}

// RetryMany retries in place, oldest first and in one transaction, up to opts.Limit dead
// letters selected by f that were never replayed (hopper.Client.RetryMany). It needs the
// admin scope.
func (c *Client) RetryMany(ctx context.Context, f hopper.DeadLetterFilter, opts hopper.RetryManyOpts) (*hopper.RetryManyResult, error) {
	res, err := c.dlq.RetryMany(ctx, apispec.RetryManyRequest(f, opts))
	if err != nil {
		return nil, callErr("retry dead letters", err)
	}
	out := &hopper.RetryManyResult{Skipped: int(res.GetSkipped()), Jobs: make([]*hopper.JobRow, len(res.GetJobs()))}
	for i, j := range res.GetJobs() {
		out.Jobs[i] = apiview.FromJob(j)
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
