package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/jobtrace"
	"github.com/hopperjobs/hopper/internal/store"
)

// claimedJob is a job this process claimed, registered from the claim on (its lease is
// renewed, a cancel reaches ctx) whether its handler runs or it waits for a slot.
type claimedJob struct {
	row    *hoppertype.JobRow
	ctx    context.Context
	cancel context.CancelCauseFunc
	// kindHeld: the job holds a slot of its kind's cap in this process (Config.KindConcurrency)
	// until it ends or goes back (producer.freeKind).
	kindHeld atomic.Bool
	// members, for a batch (batch.go), are its jobs, each registered as its own attempt; the
	// batch's row is its first job's, its ctx the handler's.
	members []*claimedJob
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
	if !e.unregister(j.row.ID, j.row.Token) || attempt.Classify(nil, context.Cause(j.ctx), 0).Gone {
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
	ex := attempt.NewExecution(row, localOps{e: e, row: row})
	ctx, span := jobtrace.Start(j.ctx, e.cfg.Tracer, row)
	var cause error
	h, _ := e.cfg.Workers.Handler(row.Kind) // claims take only the registered kinds
	unit, err := h.Prepare(row)
	if err != nil {
		err = &attempt.NoRetryError{Err: err}
	} else if cause = context.Cause(ctx); cause != nil {
		err = cause
	} else {
		tctx, stop := attempt.WithTimeout(ctx, e.clock, e.timeout(unit, row))
		err = attempt.RunUnit(attempt.WithExecution(tctx, ex), unit)
		cause = context.Cause(tctx)
		stop()
	}
	if cause == nil {
		cause = context.Cause(ctx)
	}
	// The handler returned: its slot is free, before the outcome is on its way (whoever sees
	// the outcome written sees the slot free).
	q.lane.Done(1)
	e.producer.freeKind(j)
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
		// The children an ending releases wake the workers of their own queues: the store
		// says which (FinishParams.Released, or PostgreSQL's notification), here as for a
		// remote worker's outcome. Waking every queue on each parent's ending made each claim
		// at once with the few slots it had free (3.4 times the claims in the bench's fan-in
		// of 10,000 parents).
		if row.GroupKey != "" || q.capHeld.Load() {
			// The group's next job, or a slot under a fleet-wide cap, becomes free then.
			e.wakeAfterWrite(row.ID, row.Queue)
		}
		e.completer.add(params)
	}
}

func (e *Engine) timeout(u attempt.Unit, row *hoppertype.JobRow) time.Duration {
	return attempt.AttemptTimeout(row, u, e.cfg.JobTimeout)
}

// outcome decides what an attempt's result does to the job; nil when the job is no longer ours.
func (e *Engine) outcome(u attempt.Unit, ex *attempt.Execution, err, cause error) *store.FinishParams {
	end := attempt.Classify(err, cause, e.timeout(u, ex.Row))
	end.Result = ex.Result()
	if u != nil {
		end.KindPolicy = u.RetryPolicy()
	}
	return e.Decide(ex.Row, u, end)
}
