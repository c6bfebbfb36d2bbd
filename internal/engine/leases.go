package engine

import (
	"context"
	"errors"

	"github.com/hopperjobs/hopper/internal/store"
)

// keepLeases extends the leases of this process's running jobs every third of the lease
// duration, in one batch. A job whose lease is gone (rescued, canceled) has its context
// canceled with ErrLeaseLost, so a stale worker stops working on a job it no longer owns.
func (e *Engine) keepLeases(ctx context.Context) {
	period := e.cfg.LeaseDuration / 3
	for {
		t := e.clock.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		e.extendAll(ctx)
	}
}

func (e *Engine) extendAll(ctx context.Context) {
	e.mu.Lock()
	params := make([]*store.ExtendParams, 0, len(e.running))
	for _, r := range e.running {
		params = append(params, &store.ExtendParams{ID: r.row.ID, Token: r.row.Token, Duration: e.cfg.LeaseDuration})
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
			e.cancelRunning(params[i].ID, ErrLeaseLost)
		}
	}
}
