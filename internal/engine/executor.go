package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/store"
)

// execute runs one claimed job and hands its outcome to the completer.
func (e *Engine) execute(p *producer, row *hoppertype.JobRow) {
	defer e.execs.Done()
	defer func() {
		p.running.Add(-1)
		e.slots.release(1)
	}()
	ctx, cancel := context.WithCancelCause(e.workCtx)
	defer cancel(nil)
	e.register(&runningJob{row: row, cancel: cancel, lease: e.cfg.LeaseDuration})
	ex := NewExecution(row, localOps{e: e, row: row})
	unit, err := e.cfg.Handlers[row.Kind].Prepare(row)
	if err != nil {
		err = &NoRetryError{Err: err}
	} else {
		if timeout := e.timeout(unit, row); timeout > 0 {
			t := e.clock.AfterFunc(timeout, func() { cancel(ErrTimeout) })
			defer t.Stop()
		}
		err = RunUnit(WithExecution(ctx, ex), unit)
	}
	cause := context.Cause(ctx)
	if !e.unregister(row.ID, row.Token) {
		return // released by Stop, or superseded by a newer attempt: this outcome is stale
	}
	if params := e.outcome(unit, ex, err, cause); params != nil {
		e.stampExpiry(params, row, unit) // contract 12: ended jobs expire
		if row.GroupKey != "" || p.capHeld.Load() {
			// The group's next job, or a slot under a fleet-wide cap, becomes free then.
			e.wakeAfterWrite(row.ID, row.Queue)
		}
		e.completer.add(params)
	}
}

func (e *Engine) timeout(u Unit, row *hoppertype.JobRow) time.Duration {
	if row.Timeout > 0 {
		return row.Timeout
	}
	if u != nil {
		if t := u.Timeout(); t > 0 {
			return t
		}
	}
	return e.cfg.JobTimeout
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

// outcome decides what an attempt's result does to the job; nil when the job is no longer ours.
func (e *Engine) outcome(u Unit, ex *Execution, err, cause error) *store.FinishParams {
	row := ex.Row
	switch {
	case errors.Is(cause, ErrJobCanceled), errors.Is(cause, ErrLeaseLost):
		return nil // the store already moved the job; our token is void
	case err == nil:
		return &store.FinishParams{ID: row.ID, Token: row.Token, State: hoppertype.StateCompleted,
			Outcome: hoppertype.OutcomeOK, Result: ex.result, Actor: hoppertype.ActorWorker, Reason: "success"}
	}
	// A handler that snoozes or suspends, even as the process shuts down, keeps its
	// checkpoint: that outcome wins over the plain release.
	if p := ParkParams(row.ID, row.Token, err, e.clock.Now()); p != nil {
		return p
	}
	if errors.Is(cause, ErrShutdown) {
		return releaseParams(row, fmt.Sprintf("released on shutdown: %v", err))
	}
	p := &store.FinishParams{ID: row.ID, Token: row.Token, Outcome: hoppertype.OutcomeError,
		Error: err.Error(), Actor: hoppertype.ActorWorker}
	var pe *PanicError
	if errors.As(err, &pe) {
		p.Outcome, p.Stack = hoppertype.OutcomePanic, pe.Stack
	} else if errors.Is(cause, ErrTimeout) {
		p.Outcome = hoppertype.OutcomeTimeout
		p.Error = fmt.Sprintf("%v after %s: %v", ErrTimeout, e.timeout(u, row), err)
	}
	var noRetry *NoRetryError
	if errors.As(err, &noRetry) || row.Attempt >= row.MaxAttempts {
		p.State, p.Reason = hoppertype.StateFailed, deadReason(noRetry != nil, row)
		return p
	}
	p.State, p.Reason = hoppertype.StateScheduled, "retry"
	p.RunAt = e.clock.Now().Add(e.retryDelay(u, row, err))
	return p
}

func deadReason(noRetry bool, row *hoppertype.JobRow) string {
	if noRetry {
		return "not retryable"
	}
	return fmt.Sprintf("no attempts left (%d of %d)", row.Attempt, row.MaxAttempts)
}

func (e *Engine) retryDelay(u Unit, row *hoppertype.JobRow, err error) time.Duration {
	var after *RetryAfterError
	if errors.As(err, &after) {
		return max(after.Delay, 0)
	}
	var kind *hoppertype.RetryPolicy
	if u != nil {
		kind = u.RetryPolicy()
	}
	return backoff.Delay(MergePolicy(row.RetryPolicy, kind, &e.cfg.RetryPolicy), row.Attempt, nil)
}

// releaseParams hands a job back to the queue without consuming its attempt.
func releaseParams(row *hoppertype.JobRow, why string) *store.FinishParams {
	return &store.FinishParams{ID: row.ID, Token: row.Token, State: hoppertype.StateQueued,
		Outcome: hoppertype.OutcomeCanceled, GiveBack: true, Error: why,
		Actor: hoppertype.ActorWorker, Reason: "released on shutdown"}
}
