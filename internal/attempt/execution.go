package attempt

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/field"
)

// Execution is a handler's handle on its running attempt: progress, heartbeat, lease, result
// and its parents' results, each fenced by the attempt's token. Where the calls go depends on who runs the attempt: the
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
	// ParentResults reads the job's parents, in the order it named them, with how each ended
	// and what it left (docs/workflows.md "Results passed along").
	ParentResults(ctx context.Context) ([]*hoppertype.ParentResult, error)
	// Spawn adds jobs to the job's workflow, each a parent of the jobs that wait for this one
	// (docs/workflows.md "Fan-out at run time"), all or none.
	Spawn(ctx context.Context, jobs []*SpawnJob) ([]*Spawned, error)
}

// SpawnJob is a job a running attempt adds: its step name in the attempt's workflow ("":
// generated), its kind, JSON args and options, and the step names of the jobs earlier in the
// same spawn it runs after (AfterSteps: after Opts.After's).
type SpawnJob struct {
	Step       string
	Kind       string
	Args       json.RawMessage
	Opts       SpawnOpts
	AfterSteps []string
}

// SpawnOpts are a spawned job's options: the hopper package's InsertOpts (the type defaults
// laid over), as the handler's side of an attempt carries them to whoever validates them (the
// hopper package in process, the server for a remote worker: JobSpec on the wire).
type SpawnOpts struct {
	Queue                string
	Priority             int
	RunAt                time.Time
	Delay                time.Duration
	MaxAttempts          int
	MaxRescues           int
	Timeout              time.Duration
	RetryPolicy          *hoppertype.RetryPolicy
	Headers              map[string]string
	IdempotencyKey       string
	IdempotencyRetention time.Duration
	GroupKey             string
	FairnessKey          string
	MergeKey             string
	After                []string
	OnParentFailure      hoppertype.ParentPolicy
	// ResultTTL is not on the wire: a remote worker's spawn refuses it.
	ResultTTL time.Duration
}

// Spawned is a job a spawn added, or the one it found already there (Existing: its step name
// or idempotency key named it).
type Spawned struct {
	Job      *hoppertype.JobRow
	Existing bool
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
	return x.ops.Progress(ctx, percent, field.Clean(message))
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

// ParentResults reads the job's parents' outcomes and results when asked: they are not
// handed over with the job.
func (x *Execution) ParentResults(ctx context.Context) ([]*hoppertype.ParentResult, error) {
	return x.ops.ParentResults(ctx)
}

// Spawn adds jobs for the attempt, fenced by its token.
func (x *Execution) Spawn(ctx context.Context, jobs []*SpawnJob) ([]*Spawned, error) {
	return x.ops.Spawn(ctx, jobs)
}

// AttemptTimeout is the execution limit of an attempt of row run by u: the job's own timeout,
// else its kind's, else def (0: none).
func AttemptTimeout(row *hoppertype.JobRow, u Unit, def time.Duration) time.Duration {
	if row.Timeout > 0 {
		return row.Timeout
	}
	if u != nil {
		if t := u.Timeout(); t > 0 {
			return t
		}
	}
	return def
}

// WithTimeout is ctx ended with cause ErrTimeout after d on clk (0: never); stop releases its
// timer. Every worker limits its attempts so, so that a handler sees the same context error
// in process and remote.
func WithTimeout(ctx context.Context, clk clock.Clock, d time.Duration) (_ context.Context, stop func()) {
	if d <= 0 {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := clk.AfterFunc(d, func() { cancel(ErrTimeout) })
	return ctx, func() {
		t.Stop()
		cancel(nil)
	}
}

// RunUnit calls the handler, turning a panic into a *PanicError with its stack.
func RunUnit(ctx context.Context, u Unit) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: string(debug.Stack())}
		}
	}()
	return u.Work(ctx)
}
