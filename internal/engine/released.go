package engine

import (
	"github.com/hopperjobs/hopper/internal/store"
)

// A batch of outcomes that ends parents may release their children (docs/workflows.md). The
// completer has the store claim those children for this process in the batch's own
// transaction (store.ReleaseClaim) and hands them to the producer's claim loop, which starts
// them as slots free, as it does jobs claimed ahead: a released step starts without a wake-up
// and a claim of its own (on SQLite a second commit, on PostgreSQL a second round trip and
// transaction). Whatever that claim does not take is claimed as before, after the wake-up.

// releaseClaim is the claim a batch of outcomes should make of what it releases, or nil when
// it cannot release anything known here or this process should not take it: no item ends a job
// that had children when it was claimed, no producer (no queues worked here), the resource
// governor holds, kinds are capped in this process (Config.KindConcurrency: the producer's
// split claims keep those), every kind it works runs in batches, or the last such claim
// failed and its backoff runs.
func (c *completer) releaseClaim(batch []*store.FinishParams, final bool) *store.ReleaseClaim {
	e, p := c.e, c.e.producer
	if final || p == nil || e.kindCaps != nil || (e.gov != nil && e.gov.Hold() != nil) {
		return nil
	}
	c.mu.Lock()
	held := e.clock.Now().Before(c.claimHold)
	c.mu.Unlock()
	if held {
		return nil
	}
	kinds := e.kinds
	if len(p.batching) > 0 {
		if kinds = p.plain; len(kinds) == 0 {
			return nil
		}
	}
	ended := 0
	for _, f := range batch {
		if f.State.Terminal() && f.Job != nil && f.Job.ID == f.ID && f.Job.HasChildren {
			ended++
		}
	}
	if ended == 0 {
		return nil
	}
	// Each queue takes at most what the batch ended (the slots its jobs freed), and at most
	// its own bound in this process.
	queues := make(map[string]int, len(e.cfg.Queues))
	for q, n := range e.cfg.Queues {
		queues[q] = len(batch)
		if n > 0 {
			queues[q] = min(n, len(batch))
		}
	}
	return &store.ReleaseClaim{Queues: queues, Kinds: kinds, WorkerID: e.cfg.WorkerID, LeaseDuration: e.cfg.LeaseDuration}
}

// offerReleased hands the jobs rc claimed to the producer's claim loop, which starts them as
// slots free; a loop that is stopping takes none, and they go back to their queue. A failed
// claim holds the next ones back for its backoff (the wake-ups claim meanwhile), and is logged
// as an outage is, not once a batch.
func (c *completer) offerReleased(rc *store.ReleaseClaim) {
	if rc == nil {
		return
	}
	e := c.e
	if rc.Err != nil {
		wait := c.claimRetry.Fail(rc.Err)
		c.mu.Lock()
		c.claimHold = e.clock.Now().Add(wait)
		c.mu.Unlock()
		return
	}
	c.claimRetry.Succeed()
	if len(rc.Jobs) == 0 {
		return
	}
	if hook := e.cfg.OnClaimed; hook != nil {
		hook(rc.Jobs, false)
	}
	byQueue := map[string][]*claimedJob{}
	var order []string
	for _, row := range rc.Jobs {
		if byQueue[row.Queue] == nil {
			order = append(order, row.Queue)
		}
		byQueue[row.Queue] = append(byQueue[row.Queue], e.own(row))
	}
	for _, q := range order {
		if !e.producer.loop.Offer(q, byQueue[q]) {
			for _, j := range byQueue[q] {
				e.giveBack(j, "claimed as its parents ended, not started before the worker stopped", "released on shutdown")
			}
		}
	}
}
