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
// each fenced by the attempt's token. Where the calls go depends on who runs the attempt: the
// engine writes to its store; a remote worker sends them to the server (AttemptOps).
type Execution struct {
	Row    *hoppertype.JobRow
	ops    AttemptOps
	result json.RawMessage
}

// AttemptOps carries a running attempt's calls to whoever holds its lease. Each returns an
// error wrapping store.ErrLeaseLost when the attempt no longer owns the job.
type AttemptOps interface {
	Progress(ctx context.Context, percent int, message string) error
	Heartbeat(ctx context.Context) error
	ExtendLease(ctx context.Context, d time.Duration) error
}

// NewExecution is the execution of row, whose calls go to ops.
func NewExecution(row *hoppertype.JobRow, ops AttemptOps) *Execution {
	return &Execution{Row: row, ops: ops}
}

type executionKey struct{}

// WithExecution returns ctx carrying ex, for the handler-context functions.
func WithExecution(ctx context.Context, ex *Execution) context.Context {
	return context.WithValue(ctx, executionKey{}, ex)
}

// ExecutionFrom returns the execution running under ctx, or nil outside a handler.
func ExecutionFrom(ctx context.Context) *Execution {
	ex, _ := ctx.Value(executionKey{}).(*Execution)
	return ex
}

// SetResult records the value stored with the job when the attempt succeeds.
func (x *Execution) SetResult(v json.RawMessage) { x.result = v }

// Result is the value SetResult recorded, if any.
func (x *Execution) Result() json.RawMessage { return x.result }

// Progress stores percent (clamped to 0–100) and a message; it counts as a heartbeat. The
// message is free text from the handler: bytes no store or wire can carry become U+FFFD.
func (x *Execution) Progress(ctx context.Context, percent int, message string) error {
	return x.ops.Progress(ctx, percent, store.CleanText(message))
}

// Heartbeat records a sign of life, separate from the lease.
func (x *Execution) Heartbeat(ctx context.Context) error { return x.ops.Heartbeat(ctx) }

// ExtendLease sets the lease to expire d from now; it may shorten it. The automatic renewals
// that follow renew it for d too.
func (x *Execution) ExtendLease(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("extend lease: duration %s must be positive", d)
	}
	return x.ops.ExtendLease(ctx, d)
}

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

// leaseErr cancels the attempt's context when the store says the lease is gone.
func (o localOps) leaseErr(err error) error {
	if errors.Is(err, store.ErrLeaseLost) {
		o.e.cancelAttempt(o.row.ID, o.row.Token, ErrLeaseLost)
	}
	return err
}
