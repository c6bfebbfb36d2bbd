package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// Execution is a handler's handle on its running attempt: progress, heartbeat, lease and result,
// each fenced by the attempt's token.
type Execution struct {
	Row    *hoppertype.JobRow
	engine *Engine
	result json.RawMessage
}

type executionKey struct{}

func withExecution(ctx context.Context, ex *Execution) context.Context {
	return context.WithValue(ctx, executionKey{}, ex)
}

// ExecutionFrom returns the execution running under ctx, or nil outside a handler.
func ExecutionFrom(ctx context.Context) *Execution {
	ex, _ := ctx.Value(executionKey{}).(*Execution)
	return ex
}

// SetResult records the value stored with the job when the attempt succeeds.
func (x *Execution) SetResult(v json.RawMessage) { x.result = v }

// Progress stores percent (clamped to 0–100) and a message; it counts as a heartbeat.
func (x *Execution) Progress(ctx context.Context, percent int, message string) error {
	err := x.engine.store.JobProgress(ctx, &store.ProgressParams{ID: x.Row.ID, Token: x.Row.Token, Percent: percent, Message: message})
	return x.leaseErr(err)
}

// Heartbeat records a sign of life, separate from the lease.
func (x *Execution) Heartbeat(ctx context.Context) error {
	return x.leaseErr(x.engine.store.JobHeartbeat(ctx, &store.HeartbeatParams{ID: x.Row.ID, Token: x.Row.Token}))
}

// ExtendLease sets the lease to expire d from now; it may shorten it. The automatic renewals
// that follow renew it for d too.
func (x *Execution) ExtendLease(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("extend lease: duration %s must be positive", d)
	}
	errs, err := x.engine.store.JobExtendLeases(ctx, []*store.ExtendParams{{ID: x.Row.ID, Token: x.Row.Token, Duration: d}})
	if err != nil {
		return err
	}
	if errs[0] == nil {
		x.engine.setLease(x.Row.ID, x.Row.Token, d) // later automatic renewals keep this duration
	}
	return x.leaseErr(errs[0])
}

// leaseErr cancels the attempt's context when the store says the lease is gone.
func (x *Execution) leaseErr(err error) error {
	if errors.Is(err, store.ErrLeaseLost) {
		x.engine.cancelAttempt(x.Row.ID, x.Row.Token, ErrLeaseLost)
	}
	return err
}
