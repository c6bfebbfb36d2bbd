package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/store"
)

// The leases of this process's running jobs are renewed by e.leases (lease.Keeper), each
// for its own duration (LeaseDuration, or what its handler set with ExtendLease), every third
// of the shortest one, in one batch (extendAll). A job whose lease is gone (rescued,
// canceled) has its context canceled with ErrLeaseLost, so a stale worker stops working on a
// job it no longer owns.

// shortestLease is the shortest lease of the running jobs, or the configured one.
func (e *Engine) shortestLease() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.cfg.LeaseDuration
	for _, r := range e.running {
		d = min(d, r.lease)
	}
	return d
}

// extendAll renews every running job's lease; renewed says it asked the store.
func (e *Engine) extendAll(ctx context.Context) (renewed bool, err error) {
	e.mu.Lock()
	params := make([]*store.ExtendParams, 0, len(e.running))
	rows := make([]*hoppertype.JobRow, 0, len(e.running))
	for _, r := range e.running {
		params = append(params, &store.ExtendParams{ID: r.row.ID, Token: r.row.Token, Duration: r.lease})
		rows = append(rows, r.row)
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
			e.log.Warn("lease lost; canceling attempt", jobAttrs(rows[i])...)
			e.cancelAttempt(params[i].ID, params[i].Token, attempt.ErrLeaseLost)
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
	e.leases.Shortened()
}
