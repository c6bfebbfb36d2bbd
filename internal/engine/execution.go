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

// localOps are the calls of an attempt this engine runs: straight to its store.
type localOps struct {
	e   *Engine
	row *hoppertype.JobRow
}

func (o localOps) Progress(ctx context.Context, percent int, message string) error {
	err := o.e.store.JobProgress(ctx, &store.ProgressParams{ID: o.row.ID, Token: o.row.Token, Percent: percent, Message: message})
	return o.leaseErr(err)
}

func (o localOps) Heartbeat(ctx context.Context) error {
	return o.leaseErr(o.e.store.JobHeartbeat(ctx, &store.HeartbeatParams{ID: o.row.ID, Token: o.row.Token}))
}

func (o localOps) ExtendLease(ctx context.Context, d time.Duration) error {
	errs, err := o.e.store.JobExtendLeases(ctx, []*store.ExtendParams{{ID: o.row.ID, Token: o.row.Token, Duration: d}})
	if err != nil {
		return err
	}
	if errs[0] == nil {
		o.e.setLease(o.row.ID, o.row.Token, d) // later automatic renewals keep this duration
	}
	return o.leaseErr(errs[0])
}

// ParentResults reads the job's parents from the store, fenced by the attempt's token.
func (o localOps) ParentResults(ctx context.Context) ([]*hoppertype.ParentResult, error) {
	got, err := o.e.store.JobParents(ctx, &store.ParentsParams{ID: o.row.ID, Token: o.row.Token})
	if err != nil {
		return nil, o.leaseErr(fmt.Errorf("read the parents of job %s: %w", o.row.ID, err))
	}
	return got.Parents, nil
}

// Spawn adds jobs for the attempt through the engine's Spawner (the client's, which
// validates them and writes the store), fenced by the attempt's token.
func (o localOps) Spawn(ctx context.Context, jobs []*attempt.SpawnJob) ([]*attempt.Spawned, error) {
	if o.e.cfg.Spawner == nil {
		return nil, fmt.Errorf("spawn jobs for job %s: no spawner configured", o.row.ID)
	}
	got, err := o.e.cfg.Spawner(ctx, o.row.ID, o.row.Token, jobs)
	return got, o.leaseErr(err)
}

// leaseErr cancels the attempt's context when the store says the lease is gone.
func (o localOps) leaseErr(err error) error {
	if errors.Is(err, store.ErrLeaseLost) {
		o.e.cancelAttempt(o.row.ID, o.row.Token, attempt.ErrLeaseLost)
	}
	return err
}
