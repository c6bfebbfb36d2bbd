package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// keepLeases renews the leases of this process's running jobs, each for its own duration
// (LeaseDuration, or what its handler set with ExtendLease), every third of the shortest one,
// in one batch. A job whose lease is gone (rescued, canceled) has its context canceled with
// ErrLeaseLost, so a stale worker stops working on a job it no longer owns. A failed renewal
// is retried with backoff, never later than the regular cadence.
func (e *Engine) keepLeases(ctx context.Context) {
	retry := e.newTracker("extend leases", backoff.DefaultPolicy)
	// Renewals keep a fixed cadence (like a ticker), so a slow renewal does not push the next
	// one later; one that is already due (the process stalled) runs at once.
	next := e.clock.Now()
	var retryIn time.Duration // after a failed renewal: the backoff
	for {
		if retryIn > 0 {
			next = e.clock.Now().Add(min(retryIn, e.shortestLease()/3))
		} else {
			next = next.Add(e.shortestLease() / 3)
			if now := e.clock.Now(); next.Before(now) {
				next = now
			}
		}
		if !clock.Sleep(ctx, e.clock, next.Sub(e.clock.Now())) {
			return
		}
		renewed, err := e.extendAll(ctx)
		retryIn = 0
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			retryIn = retry.Fail(err)
		case renewed:
			retry.Succeed()
		}
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

// extendAll renews every running job's lease; renewed says it asked the store.
func (e *Engine) extendAll(ctx context.Context) (renewed bool, err error) {
	e.mu.Lock()
	params := make([]*store.ExtendParams, 0, len(e.running))
	for _, r := range e.running {
		params = append(params, &store.ExtendParams{ID: r.row.ID, Token: r.row.Token, Duration: r.lease})
	}
	e.mu.Unlock()
	if len(params) == 0 {
		return false, nil
	}
	errs, err := e.store.JobExtendLeases(ctx, params)
	if err != nil {
		return true, fmt.Errorf("extend the leases of %d jobs: %w", len(params), err)
	}
	for i, err := range errs {
		if errors.Is(err, store.ErrLeaseLost) {
			e.log.Warn("lease lost; canceling attempt", "job_id", params[i].ID)
			e.cancelAttempt(params[i].ID, params[i].Token, ErrLeaseLost)
		}
	}
	return true, nil
}

// setLease records the lease duration a handler asked for, for the following renewals.
func (e *Engine) setLease(id string, token int64, d time.Duration) {
	e.mu.Lock()
	if r, ok := e.running[id]; ok && r.row.Token == token {
		r.lease = d
	}
	e.mu.Unlock()
}
