package engine

import (
	"context"
	"errors"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

// keepLeases renews the leases of this process's running jobs, each for its own duration
// (LeaseDuration, or what its handler set with ExtendLease), every third of the shortest one,
// in one batch. A job whose lease is gone (rescued, canceled) has its context canceled with
// ErrLeaseLost, so a stale worker stops working on a job it no longer owns.
func (e *Engine) keepLeases(ctx context.Context) {
	// Renewals keep a fixed cadence (like a ticker), so a slow renewal does not push the next
	// one later; one that is already due (the process stalled) runs at once.
	next := e.clock.Now()
	for {
		next = next.Add(e.shortestLease() / 3)
		now := e.clock.Now()
		if next.Before(now) {
			next = now
		}
		t := e.clock.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		e.extendAll(ctx)
	}
}

func (e *Engine) shortestLease() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.cfg.LeaseDuration
	for _, r := range e.running {
		d = min(d, r.lease)
	}
	return max(d, 3*time.Millisecond)
}

func (e *Engine) extendAll(ctx context.Context) {
	e.mu.Lock()
	params := make([]*store.ExtendParams, 0, len(e.running))
	for _, r := range e.running {
		params = append(params, &store.ExtendParams{ID: r.row.ID, Token: r.row.Token, Duration: r.lease})
	}
	e.mu.Unlock()
	if len(params) == 0 {
		return
	}
	errs, err := e.store.JobExtendLeases(ctx, params)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("extend leases", "jobs", len(params), "err", err)
		}
		return
	}
	for i, err := range errs {
		if errors.Is(err, store.ErrLeaseLost) {
			e.log.Warn("lease lost; canceling attempt", "job_id", params[i].ID)
			e.cancelAttempt(params[i].ID, params[i].Token, ErrLeaseLost)
		}
	}
}

// setLease records the lease duration a handler asked for, for the following renewals.
func (e *Engine) setLease(id string, token int64, d time.Duration) {
	e.mu.Lock()
	if r, ok := e.running[id]; ok && r.row.Token == token {
		r.lease = d
	}
	e.mu.Unlock()
}
