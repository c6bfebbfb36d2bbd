// Package attempt is one attempt of a job, wherever it runs: the registry of handlers an
// application builds (Workers, which hopper.Workers is), the handler's context (Execution:
// progress, heartbeat, lease extension, result), its time limit, and how it ended (Classify:
// the Ending every worker turns a handler's error into, and the causes and errors a handler
// sees or returns). The engine runs attempts in process and decides their outcomes in the
// store; the remote worker runs them in another process and reports the Ending to a server.
// It imports no store, so a remote worker links none.
package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/field"
)

// Handler runs the jobs of one kind.
type Handler interface {
	// Prepare decodes a claimed job for its attempt. An error fails the attempt without retry
	// (retrying cannot fix a payload that does not decode).
	Prepare(row *hoppertype.JobRow) (Unit, error)
}

// Unit is one prepared attempt.
type Unit interface {
	// Work runs the attempt. Its context ends at the timeout, on cancel and on shutdown.
	Work(ctx context.Context) error
	// Timeout is the kind's execution limit; 0 defers to the job and the config.
	Timeout() time.Duration
	// RetryPolicy is the kind's backoff; nil defers to the job and the config.
	RetryPolicy() *hoppertype.RetryPolicy
}

// Workers maps job kinds to their handlers: the registry an application builds (hopper.Workers
// is this type) and that every worker runs from, the engine's executor and the remote worker
// alike. Build it before it is used; it is not safe to change while a worker runs it.
type Workers struct {
	handlers map[string]Handler
}

// NewWorkers returns an empty registry.
func NewWorkers() *Workers { return &Workers{handlers: map[string]Handler{}} }

// Add registers h for kind. It panics when the kind is empty or registered twice: both are
// programming errors found at start-up.
func (ws *Workers) Add(kind string, h Handler, what any) {
	if kind == "" {
		panic(fmt.Sprintf("hopper: %T.Kind() is empty", what))
	}
	if _, dup := ws.handlers[kind]; dup {
		panic(fmt.Sprintf("hopper: a worker for kind %q is already registered", kind))
	}
	ws.handlers[kind] = h
}

// Handler is the handler of kind, if one is registered. A nil registry has none.
func (ws *Workers) Handler(kind string) (Handler, bool) {
	if ws == nil {
		return nil, false
	}
	h, ok := ws.handlers[kind]
	return h, ok
}

// Kinds are the registered kinds, in no order.
func (ws *Workers) Kinds() []string {
	if ws == nil {
		return nil
	}
	kinds := make([]string, 0, len(ws.handlers))
	for k := range ws.handlers {
		kinds = append(kinds, k)
	}
	return kinds
}

// Len is how many kinds are registered.
func (ws *Workers) Len() int {
	if ws == nil {
		return 0
	}
	return len(ws.handlers)
}

// Causes with which the engine cancels a handler's context; context.Cause(ctx) tells them apart.
var (
	// ErrTimeout: the attempt ran past its execution timeout.
	ErrTimeout = errors.New("job execution timeout")
	// ErrJobCanceled: the job was canceled while it ran.
	ErrJobCanceled = errors.New("job canceled")
	// ErrShutdown: the worker process is shutting down; the job goes back to the queue.
	ErrShutdown = errors.New("worker shutting down")
	// ErrLeaseLost: the lease could not be kept; another worker may hold the job now. It is
	// the store's sentinel, so callers test one error for both.
	ErrLeaseLost = hoppertype.ErrLeaseLost
)

// RetryAfterError asks for the next attempt after Delay instead of the backoff policy's delay.
type RetryAfterError struct {
	Delay time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// NoRetryError fails the job at once, whatever attempts are left.
type NoRetryError struct{ Err error }

func (e *NoRetryError) Error() string { return fmt.Sprintf("not retryable: %v", e.Err) }

func (e *NoRetryError) Unwrap() error { return e.Err }

// BusinessError ends an attempt with an error that is part of the job's contract (Zeebe's
// "throw error"): Code names it for whoever reads the job (a dashboard, a dead-letter filter,
// a metric), Message says more. The job fails at once, without retries, unless its retry
// policy has RetryBusinessErrors. Code must pass field.ErrorCode; a handler's error with a
// bad code fails the attempt as a plain error whose text says why (Classify). A value or a
// pointer, wrapped or not, is recognised alike.
type BusinessError struct {
	Code    string
	Message string
}

func (e BusinessError) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// businessError finds a BusinessError, value or pointer, in err's chain.
func businessError(err error) (BusinessError, bool) {
	var v BusinessError
	if errors.As(err, &v) {
		return v, true
	}
	var p *BusinessError
	if errors.As(err, &p) && p != nil {
		return *p, true
	}
	return BusinessError{}, false
}

// CheckpointError fails an attempt with Err, as Err alone would (retried or not), and leaves
// Checkpoint, a JSON value, for the next attempt as a suspension does; with no attempt left
// the failed job keeps it, for whoever resolves it. Nil Checkpoint keeps the previous one.
type CheckpointError struct {
	Err        error
	Checkpoint json.RawMessage
}

func (e *CheckpointError) Error() string { return e.Err.Error() }

func (e *CheckpointError) Unwrap() error { return e.Err }

// PanicError is a recovered panic of a handler.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// SnoozeError runs the job again after Delay without consuming an attempt.
type SnoozeError struct{ Delay time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %s", e.Delay) }

// SuspendError parks the job without consuming an attempt: until Until (state scheduled) or,
// with Until zero, until resumed (state suspended), failing at Deadline if that is set and
// it is still suspended then. Checkpoint, when not nil, replaces the job's checkpoint.
type SuspendError struct {
	Checkpoint json.RawMessage
	Until      time.Time
	Deadline   time.Time
}

func (e *SuspendError) Error() string {
	if !e.Until.IsZero() {
		return "suspended until " + e.Until.UTC().Format(time.RFC3339)
	}
	return "suspended until resumed"
}

// Ending is how one attempt ended, as the code that ran it saw it.
type Ending struct {
	// Outcome is OutcomeOK, OutcomeError, OutcomePanic, OutcomeTimeout, OutcomeSnoozed,
	// OutcomeSuspended, or OutcomeCanceled: the runner gives the job back without having run
	// it to an end (it is shutting down); the attempt is not consumed.
	Outcome hoppertype.Outcome
	// Gone: the job stopped being the attempt's while it ran (canceled, its lease lost). There
	// is nothing to store: the store already moved the job and the token is void.
	Gone bool
	// Error is the handler's error text; Stack the stack of a panic.
	Error string
	Stack string
	// Result is what a successful attempt stores with the job.
	Result json.RawMessage
	// NoRetry fails the job whatever attempts are left.
	NoRetry bool
	// RetriesLeft, when set, overrides the attempts left: 0 or less fails the job, n > 0 allows
	// n more attempts whatever the job's budget was (remote workers' Fail can say so).
	RetriesLeft *int
	// RetryAfter, when set, is the wait before the next attempt instead of the backoff's.
	RetryAfter *time.Duration
	// KindPolicy is the backoff of the job's kind, when its worker has one: the job's own
	// policy wins over it, and it over the decider's default.
	KindPolicy *hoppertype.RetryPolicy
	// Snooze is the wait of a snoozed attempt.
	Snooze time.Duration
	// Suspend is the suspension of a suspended attempt.
	Suspend *SuspendError
	// Checkpoint, when not nil, is what a failed attempt leaves for the next one (replacing
	// the job's checkpoint).
	Checkpoint json.RawMessage
	// ErrorCode is a business error's code (BusinessError): the job fails without retries,
	// unless its merged retry policy has RetryBusinessErrors.
	ErrorCode string
}

// Classify describes an attempt that ended with err (the handler's result) while its context
// ended with cause (nil if it had not), under an execution limit of timeout (for the text of
// a timeout). An error the handler returns after a shutdown began still counts as a snooze or
// a suspension when it is one: that outcome wins over the plain release.
func Classify(err, cause error, timeout time.Duration) Ending {
	switch {
	case errors.Is(cause, ErrJobCanceled), errors.Is(cause, ErrLeaseLost):
		return Ending{Outcome: hoppertype.OutcomeCanceled, Gone: true}
	case err == nil:
		return Ending{Outcome: hoppertype.OutcomeOK}
	}
	var sn *SnoozeError
	var su *SuspendError
	switch {
	case errors.As(err, &sn):
		return Ending{Outcome: hoppertype.OutcomeSnoozed, Snooze: sn.Delay}
	case errors.As(err, &su):
		return Ending{Outcome: hoppertype.OutcomeSuspended, Suspend: su}
	case errors.Is(cause, ErrShutdown):
		return Ending{Outcome: hoppertype.OutcomeCanceled, Error: fmt.Sprintf("released on shutdown: %v", err)}
	}
	e := Ending{Outcome: hoppertype.OutcomeError, Error: err.Error()}
	var pe *PanicError
	if errors.As(err, &pe) {
		e.Outcome, e.Stack = hoppertype.OutcomePanic, pe.Stack
	} else if errors.Is(cause, ErrTimeout) {
		e.Outcome, e.Error = hoppertype.OutcomeTimeout, fmt.Sprintf("%v after %s", ErrTimeout, timeout)
		// The handler's own words follow, unless it only passed on its context's end
		// (ctx.Err() or context.Cause(ctx)), which says nothing more: as a TypeScript or
		// Python handler that rethrows its signal's reason.
		if err != context.Canceled && err != context.DeadlineExceeded && !errors.Is(err, ErrTimeout) {
			e.Error += ": " + err.Error()
		}
	}
	var noRetry *NoRetryError
	e.NoRetry = errors.As(err, &noRetry)
	var cp *CheckpointError
	if errors.As(err, &cp) {
		e.Checkpoint = cp.Checkpoint
	}
	if be, ok := businessError(err); ok {
		if bad := field.ErrorCode("error_code", be.Code); bad != nil {
			e.Error = fmt.Sprintf("%s (not a business error: %v)", e.Error, bad)
		} else {
			e.ErrorCode = be.Code
		}
	}
	var after *RetryAfterError
	if errors.As(err, &after) {
		d := max(after.Delay, 0)
		e.RetryAfter = &d
	}
	return e
}
