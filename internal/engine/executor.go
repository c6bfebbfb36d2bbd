package engine

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/jobtrace"
	"github.com/hopperjobs/hopper/internal/store"
)

// claimedJob is a job this process claimed, registered from the claim on (its lease is
// renewed, a cancel reaches ctx) whether its handler runs or it waits for a slot.
type claimedJob struct {
	row    *hoppertype.JobRow
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// own registers a job a claim of this process took.
func (e *Engine) own(row *hoppertype.JobRow) *claimedJob {
	ctx, cancel := context.WithCancelCause(e.workCtx)
	e.register(&runningJob{row: row, cancel: cancel, lease: e.cfg.LeaseDuration})
	return &claimedJob{row: row, ctx: ctx, cancel: cancel}
}

// giveBack returns a claimed job that has not started to its queue, attempt unspent (why is
// recorded as the attempt's error, reason as the transition's). A job whose attempt is
// already gone (canceled, lease lost, released by Stop) is only forgotten.
func (e *Engine) giveBack(j *claimedJob, why, reason string) {
	defer j.cancel(nil)
	if !e.unregister(j.row.ID, j.row.Token) || Classify(nil, context.Cause(j.ctx), 0).Gone {
		return
	}
	e.wakeAfterWrite(j.row.ID, j.row.Queue) // a slot elsewhere in this process may take it
	e.completer.add(releaseParams(j.row, why, reason))
}

// execute runs one claimed job and hands its outcome to the completer. A job whose context
// ended before its start (canceled or its lease lost while it waited for a slot, a hard stop)
// does not run its handler: its outcome follows from the cause alone.
func (e *Engine) execute(q *queueLane, j *claimedJob) {
	defer e.execs.Done()
	row := j.row
	defer j.cancel(nil)
	ex := NewExecution(row, localOps{e: e, row: row})
	ctx, span := jobtrace.Start(j.ctx, e.cfg.Tracer, row)
	var cause error
	h, _ := e.cfg.Workers.Handler(row.Kind) // claims take only the registered kinds
	unit, err := h.Prepare(row)
	if err != nil {
		err = &NoRetryError{Err: err}
	} else if cause = context.Cause(ctx); cause != nil {
		err = cause
	} else {
		tctx, stop := WithTimeout(ctx, e.clock, e.timeout(unit, row))
		err = RunUnit(WithExecution(tctx, ex), unit)
		cause = context.Cause(tctx)
		stop()
	}
	if cause == nil {
		cause = context.Cause(ctx)
	}
	// The handler returned: its slot is free, before the outcome is on its way (whoever sees
	// the outcome written sees the slot free).
	q.lane.Done(1)
	if !e.unregister(row.ID, row.Token) {
		jobtrace.End(span, hoppertype.OutcomeCanceled, err)
		return // released by Stop, or superseded by a newer attempt: this outcome is stale
	}
	params := e.outcome(unit, ex, err, cause)
	if params == nil {
		jobtrace.End(span, hoppertype.OutcomeCanceled, err)
	} else {
		jobtrace.End(span, params.Outcome, err)
	}
	if params != nil {
		if row.GroupKey != "" || q.capHeld.Load() {
			// The group's next job, or a slot under a fleet-wide cap, becomes free then.
			e.wakeAfterWrite(row.ID, row.Queue)
		}
		e.completer.add(params)
	}
}

func (e *Engine) timeout(u Unit, row *hoppertype.JobRow) time.Duration {
	return AttemptTimeout(row, u, e.cfg.JobTimeout)
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

// outcome decides what an attempt's result does to the job; nil when the job is no longer ours.
func (e *Engine) outcome(u Unit, ex *Execution, err, cause error) *store.FinishParams {
	end := Classify(err, cause, e.timeout(u, ex.Row))
	end.Result = ex.result
	if u != nil {
		end.KindPolicy = u.RetryPolicy()
	}
	return e.Decide(ex.Row, u, end)
}
