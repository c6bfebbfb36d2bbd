package hopper

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// MinuteStats is what happened to the jobs of one kind in one queue during one minute:
// enqueued, completed, failed and retried counts and a histogram of waits. Stores keep them
// for StatsRetention (7 days); the leader's sweep prunes older ones.
type MinuteStats = hoppertype.MinuteStats

// WaitHistogram counts waits (run_at to the start of the attempt) per bucket of WaitBounds;
// Percentile estimates a percentile from it.
type WaitHistogram = hoppertype.WaitHistogram

// WaitBounds are the upper bounds of a WaitHistogram's buckets.
var WaitBounds = hoppertype.WaitBounds

// StatsRetention is how long per-minute stats are kept.
const StatsRetention = hoppertype.StatsRetention

// StatsParams selects Stats. Zero fields don't filter.
type StatsParams struct {
	// Since is the first minute returned (its minute, inclusive); zero means an hour ago.
	Since time.Time
	Queue string
	Kind  string
}

// Stats returns the per-minute stats from p.Since on, by minute, queue, then kind; minutes in
// which nothing happened are left out. A queue or kind that is not text is a
// *ValidationError naming the field.
func (c *Client) Stats(ctx context.Context, p *StatsParams) ([]*MinuteStats, error) {
	if p == nil {
		p = &StatsParams{}
	}
	if err := checkLimited("queue", p.Queue, maxNameLen); err != nil {
		return nil, err
	}
	if err := checkLimited("kind", p.Kind, maxNameLen); err != nil {
		return nil, err
	}
	since := p.Since
	if since.IsZero() {
		since = c.clock.Now().Add(-time.Hour)
	}
	return c.store.StatsList(ctx, &store.StatsParams{Since: since, Queue: p.Queue, Kind: p.Kind})
}
